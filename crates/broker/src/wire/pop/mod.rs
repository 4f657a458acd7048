//! Pop consumption (RocketMQ 5): POP_MESSAGE (200050) here, the acks and
//! CHANGE_MESSAGE_INVISIBLETIME in `ack`, PEEK_MESSAGE and NOTIFICATION in
//! `peek`, answered as Java's `PopMessageProcessor`, `AckMessageProcessor`,
//! `ChangeInvisibleTimeProcessor`, `PeekMessageProcessor` and
//! `NotificationProcessor` answer. Each queue's part runs on its
//! owner shard (`shard::pop`); a pop of "any queue" walks the topic's
//! queues from a rotating start (a priority topic's from the highest
//! down, `services::priority`), reads the group's pop retry topic first
//! one time in five (Java's `popFromRetryProbability`), and with `pollTime`
//! waits for messages: held on the owners of the queues it looks at until
//! one arrives on any of them.

use std::future::Future;
use std::rc::Rc;
use std::time::Duration;

use bytes::BytesMut;
use ferrocket_protocol::body::perm;
use ferrocket_protocol::codes::response_code;
use ferrocket_protocol::header::{PopMessageRequestHeader, PopMessageResponseHeader};
use ferrocket_protocol::limits::TOPIC_NAME_BYTES_MAX;
use ferrocket_protocol::pop::OffsetInfo;
use ferrocket_protocol::RemotingCommand;
use ferrocket_runtime::server::Connection;

use crate::clock::now_ms;
use crate::error::Reject;
use crate::services::filter::TagFilter;
use crate::services::pop::order::ORDER_REVIVE_QID;
use crate::services::pop::POP_MESSAGES_MAX;
use crate::services::priority;
use crate::shard::pop::{pop_retry_topic, HoldQueues, PopQueue, Waiting};
use crate::shard::Shard;

pub(crate) mod ack;
pub(crate) mod peek;

/// A pop whose client clock says it is this late is refused at once.
pub const POP_LATE_MS_MAX: i64 = 500;
/// Share of pops that read the pop retry topic first (percent).
pub const POP_FROM_RETRY_PERCENT: u64 = 20;
/// `reviveQid` in answers and handles (Ferrocket has no revive queues).
pub const REVIVE_QID: i32 = 0;
/// Longest a pop of one queue waits on its owner between looks (Java
/// forces a look every `popLongPollingForceNotifyInterval`, 800 ms).
pub const POP_HOLD_MS_MAX: u64 = 800;
/// Longest a pop may wait (`pollTime` is capped here).
pub const POP_POLL_MS_MAX: i64 = 60_000;

pub(crate) fn refuse_on_slave(shard: &Shard) -> Result<(), Reject> {
    if shard.config().replication.broker_role.is_slave() {
        return Err(Reject::new(
            response_code::SERVICE_NOT_AVAILABLE,
            "pop consumption is served by the master (brokerId 0); this broker is a slave",
        ));
    }
    Ok(())
}

/// The topic's read queues, or a refusal as Java words it.
pub(crate) fn readable_queues(shard: &Shard, topic: &str) -> Result<i32, Reject> {
    let Some((perm_bits, read)) = shard.with_topic(topic, |t| (t.perm, t.read_queue_nums)) else {
        return Err(Reject::new(
            response_code::TOPIC_NOT_EXIST,
            format!("topic[{topic}] not exist, apply first please!"),
        ));
    };
    if !perm::is_readable(perm_bits) {
        return Err(Reject::new(
            response_code::NO_PERMISSION,
            format!("the topic[{topic}] peeking message is forbidden"),
        ));
    }
    Ok(read)
}

/// A pop's un-acked messages come back through `%RETRY%{group}_{topic}`,
/// a topic like any other (at most `TOPIC_NAME_BYTES_MAX` bytes): a group
/// and topic too long for it are refused before any message is handed out
/// that could never come back (Java's broker hands them out, and their
/// revive then fails for ever).
pub(crate) fn retry_topic_fits(group: &str, topic: &str) -> Result<(), Reject> {
    let retry = pop_retry_topic(group, topic);
    if retry.len() <= TOPIC_NAME_BYTES_MAX {
        return Ok(());
    }
    Err(Reject::new(
        response_code::INVALID_PARAMETER,
        format!(
            "the consumer group and topic are too long to pop: un-acked messages come back \
             through the retry topic {retry}, {} bytes, and a topic name has at most \
             {TOPIC_NAME_BYTES_MAX}; shorten the group or the topic, or consume with pull",
            retry.len()
        ),
    ))
}

fn check_pop(shard: &Shard, header: &PopMessageRequestHeader) -> Result<i32, Reject> {
    refuse_on_slave(shard)?;
    let invalid = |remark: String| Err(Reject::new(response_code::INVALID_PARAMETER, remark));
    if header.max_msg_nums <= 0 || header.max_msg_nums as usize > POP_MESSAGES_MAX {
        return invalid(format!(
            "the max message num {} must be 1..={POP_MESSAGES_MAX}",
            header.max_msg_nums
        ));
    }
    if header.invisible_time <= 0 {
        return invalid(format!(
            "invisibleTime {} must be positive",
            header.invisible_time
        ));
    }
    if let Some(born) = header.born_time.filter(|b| *b > 0) {
        if now_ms() - born - header.poll_time.max(0) > POP_LATE_MS_MAX {
            return Err(Reject::new(
                response_code::POLLING_TIMEOUT,
                "the pop request arrived too late",
            ));
        }
    }
    // Ordered pops never use the retry topic: messages come back in place.
    if !header.order {
        retry_topic_fits(&header.consumer_group, &header.topic)?;
    }
    let read = readable_queues(shard, &header.topic)?;
    if header.queue_id >= read {
        return invalid(format!(
            "queueId[{}] is illegal, topic:[{}] topicConfig.readQueueNums:[{read}]",
            header.queue_id, header.topic
        ));
    }
    Ok(read)
}

/// What one look over the queues found.
#[derive(Default)]
struct Look {
    body: BytesMut,
    count: usize,
    rest: i64,
    offsets: OffsetInfo,
}

/// POP_MESSAGE.
pub(crate) async fn pop_message(
    shard: &Rc<Shard>,
    conn: &Connection,
    request: &RemotingCommand,
) -> Result<RemotingCommand, Reject> {
    let header = PopMessageRequestHeader::from_ext(&request.ext_fields)?;
    let read_queues = check_pop(shard, &header)?;
    crate::shard::groups::check_pull(shard, &header.consumer_group).await?;
    let filter = crate::services::filter::sql::pull_filter(
        header.exp.as_deref().unwrap_or("*"),
        header.exp_type.as_deref(),
        shard.config().enable_property_filter,
    )?;
    let poll_ms = header.poll_time.clamp(0, POP_POLL_MS_MAX);
    let deadline = now_ms() + poll_ms;
    let mut waiting = None;
    loop {
        let pop_time = now_ms();
        if conn.is_closed() {
            // The long poll of a gone client ends here, within a wait (at
            // most POP_HOLD_MS_MAX), and pops nothing nobody would get.
            return Ok(answer(request, &header, Look::default(), pop_time));
        }
        let look = look_once(shard, &header, read_queues, &filter, pop_time).await?;
        if look.count > 0 || now_ms() >= deadline || shard.stopping().is_triggered() {
            return Ok(answer(request, &header, look, pop_time));
        }
        if waiting.is_none() {
            let key = (
                header.consumer_group.clone(),
                header.topic.clone(),
                header.queue_id.max(-1),
            );
            if shard.pop().polling_full(&key) {
                let mut full = answer(request, &header, Look::default(), pop_time);
                full.code = response_code::POLLING_FULL;
                full.remark = Some("POLLING_FULL".into());
                return Ok(full);
            }
            waiting = Some(Waiting::new(shard.pop(), key));
        }
        let queues = (
            header.consumer_group.as_str(),
            header.topic.as_str(),
            header.queue_id,
            read_queues,
        );
        if wait_for_messages(shard, queues, &filter, deadline).await {
            return Ok(answer(request, &header, Look::default(), pop_time));
        }
    }
}

/// Waits before the next look (a pop's or a NOTIFICATION's): on the
/// owners of the queues it looks at, until a message arrives on any of them (at most [`POP_HOLD_MS_MAX`],
/// so the pop retry topic is looked at again too). A pop of any queue
/// waits on every owner of the topic's queues at once and ends with the
/// first that is woken. True when the shard stops.
pub(crate) async fn wait_for_messages(
    shard: &Rc<Shard>,
    (group, topic, queue_id, read_queues): (&str, &str, i32, i32),
    filter: &TagFilter,
    deadline: i64,
) -> bool {
    let left = (deadline - now_ms()).max(1) as u64;
    let queues: Vec<i32> = match queue_id {
        id if id < 0 => (0..read_queues).collect(),
        id => vec![id],
    };
    let mut by_owner: std::collections::BTreeMap<usize, Vec<i32>> = Default::default();
    for queue_id in queues {
        by_owner
            .entry(shard.owner_of(topic, queue_id))
            .or_default()
            .push(queue_id);
    }
    let holds: Vec<_> = by_owner
        .into_iter()
        .map(|(owner, queue_ids)| {
            let hold = HoldQueues {
                group: group.to_string(),
                topic: topic.to_string(),
                queue_ids,
                filter: filter.clone(),
                wait_ms: left.min(POP_HOLD_MS_MAX),
            };
            // A failed call (the mesh stopping) just ends the wait.
            Box::pin(async move {
                let _ = shard.call(owner, hold).await;
            })
        })
        .collect();
    let first_woken = async {
        if holds.is_empty() {
            glommio::timer::sleep(Duration::from_millis(left.min(POP_HOLD_MS_MAX))).await;
            return;
        }
        let mut holds = holds;
        futures_lite::future::poll_fn(|cx| {
            let done = holds.iter_mut().any(|h| h.as_mut().poll(cx).is_ready());
            if done {
                std::task::Poll::Ready(())
            } else {
                std::task::Poll::Pending
            }
        })
        .await
    };
    shard.stopping().interrupts(first_woken).await
}

fn answer(
    request: &RemotingCommand,
    header: &PopMessageRequestHeader,
    look: Look,
    pop_time: i64,
) -> RemotingCommand {
    let found = look.count > 0;
    let (code, remark) = if found {
        (response_code::SUCCESS, "FOUND")
    } else {
        (response_code::POLLING_TIMEOUT, "NO_MESSAGE_IN_QUEUE")
    };
    let mut response = RemotingCommand::response_to(request, code, Some(remark.to_string()));
    response.ext_fields = PopMessageResponseHeader {
        pop_time,
        invisible_time: header.invisible_time,
        revive_qid: if header.order {
            ORDER_REVIVE_QID
        } else {
            REVIVE_QID
        },
        rest_num: look.rest,
        start_offset_info: found.then(|| look.offsets.start_offset_info()),
        msg_offset_info: found.then(|| look.offsets.msg_offset_info()),
        order_count_info: look.offsets.order_count_info(),
    }
    .to_ext();
    response.body = look.body.freeze();
    response
}

/// One look: the retry topic first one time in five, the topic's queues
/// from a rotating start, the retry topic last otherwise; a priority
/// topic's queues from the highest down, then the retry topic.
async fn look_once(
    shard: &Rc<Shard>,
    header: &PopMessageRequestHeader,
    read_queues: i32,
    filter: &TagFilter,
    pop_time: i64,
) -> Result<Look, Reject> {
    let mut look = Look::default();
    let retry = pop_retry_topic(&header.consumer_group, &header.topic);
    // Ordered pops never read the retry topic: messages come back in place.
    let has_retry = !header.order && shard.topic(&retry).is_some();
    // A priority pop reads the retry topic last (Java's
    // `popFromRetryProbabilityForPriority`, 0).
    let by_priority = !header.order
        && shard
            .with_topic(&header.topic, priority::is_priority_topic)
            .unwrap_or(false);
    let retry_first =
        has_retry && !by_priority && shard.random_below(100) < POP_FROM_RETRY_PERCENT as i32;
    if retry_first {
        pop_from(shard, header, &retry, 0, filter, pop_time, &mut look).await?;
    }
    let queues: Vec<i32> = if header.queue_id >= 0 {
        vec![header.queue_id]
    } else {
        let first = shard.random_below(read_queues.max(1));
        priority::pop_order(read_queues, first, by_priority)
    };
    for queue_id in queues {
        pop_from(
            shard,
            header,
            &header.topic,
            queue_id,
            filter,
            pop_time,
            &mut look,
        )
        .await?;
    }
    if has_retry && !retry_first {
        pop_from(shard, header, &retry, 0, filter, pop_time, &mut look).await?;
    }
    Ok(look)
}

async fn pop_from(
    shard: &Rc<Shard>,
    header: &PopMessageRequestHeader,
    topic: &str,
    queue_id: i32,
    filter: &TagFilter,
    pop_time: i64,
    look: &mut Look,
) -> Result<(), Reject> {
    let room = header.max_msg_nums as usize - look.count;
    if room == 0 {
        // Only counting what is left.
        return Ok(());
    }
    let call = PopQueue {
        group: header.consumer_group.clone(),
        topic: topic.to_string(),
        queue_id,
        max_messages: room,
        max_bytes: shard.config().pull_bytes_max,
        invisible_time_ms: header.invisible_time,
        pop_time_ms: pop_time,
        init_mode: header.init_mode,
        filter: filter.clone(),
        order: header.order,
        attempt_id: header.attempt_id.clone(),
    };
    let popped = shard.call(shard.owner_of(topic, queue_id), call).await??;
    look.rest += popped.rest;
    if popped.offsets.is_empty() {
        return Ok(());
    }
    look.offsets
        .add(topic, queue_id, popped.start, &popped.offsets);
    if header.order {
        look.offsets
            .add_counts(topic, queue_id, &popped.offsets, &popped.counts);
    }
    look.count += popped.offsets.len();
    let mut bytes = 0;
    for record in &popped.records {
        look.body.extend_from_slice(record);
        bytes += record.len() as u64;
    }
    let from_retry = topic != header.topic;
    let messages = popped.offsets.len() as u64;
    let group = &header.consumer_group;
    shard
        .metrics()
        .count_out(group, &header.topic, from_retry, messages, bytes);
    Ok(())
}
