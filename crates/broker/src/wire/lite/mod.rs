//! Lite topics over Remoting (RocketMQ 5.5, RIP-83), the requests a proxy
//! in cluster mode (Apache RocketMQ's own `mqproxy`) sends for its lite
//! consumers: LITE_SUBSCRIPTION_CTL (200071) keeps each client's lite
//! topics in the broker's registry, POP_LITE_MESSAGE (200070) pops them;
//! the admin requests (GET_BROKER_LITE_INFO and the rest) are in `admin`.
//!
//! Java keeps one light queue per lite topic; Ferrocket keeps lite
//! messages in the parent topic's queues and pops each lite topic as its
//! own consumer group, `{group}%LITE%{lite}` (the gRPC endpoint's name),
//! in order, with the `LITE` filter. Each message goes out with Java's
//! `INNER_MULTI_DISPATCH` (its light queue's name) and
//! `INNER_MULTI_QUEUE_OFFSET` (the queue and offset packed in one number,
//! `services::lite::pack_position`), which the client turns into the
//! handle its ack (ACK_MESSAGE with `liteTopic`) brings back.

pub(crate) mod admin;
mod start;

use std::rc::Rc;

use bytes::BytesMut;
use ferrocket_protocol::codes::response_code;
use ferrocket_protocol::header::{PopLiteMessageRequestHeader, PopLiteMessageResponseHeader};
use ferrocket_protocol::lite::{lite_group, LITE_EXPRESSION_TYPE};
use ferrocket_protocol::RemotingCommand;
use ferrocket_runtime::server::Connection;
use serde::Deserialize;

use super::pop::{readable_queues, refuse_on_slave, POP_LATE_MS_MAX, POP_POLL_MS_MAX};
use crate::clock::now_ms;
use crate::error::Reject;
use crate::services::filter::sql::pull_filter;
use crate::services::lite::registry::{Action, Change, Refused};
use crate::services::lite::{append_with_position, lmq_name, pack_position};
use crate::services::pop::order::ORDER_REVIVE_QID;
use crate::services::pop::POP_MESSAGES_MAX;
use crate::shard::pop::{PopQueue, INIT_MODE_MIN};
use crate::shard::Shard;

/// The pause between two looks of a waiting POP_LITE_MESSAGE (ms).
const LOOK_PAUSE_MS: u64 = 200;
/// Lite topics one look of a POP_LITE_MESSAGE pops at most.
const LITE_TOPICS_PER_LOOK: usize = 32;

/// `LiteSubscriptionCtlRequestBody`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct CtlBody {
    #[serde(default)]
    subscription_set: Vec<SubscriptionDto>,
}

/// `LiteSubscriptionDTO` (its `version` is not used; `offsetOption`: see
/// [`start`]).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct SubscriptionDto {
    action: String,
    #[serde(default)]
    client_id: String,
    #[serde(default)]
    group: String,
    #[serde(default)]
    topic: String,
    #[serde(default)]
    lite_topic_set: Vec<String>,
    #[serde(default)]
    offset_option: Option<start::OffsetOption>,
}

/// LITE_SUBSCRIPTION_CTL: applies each change of the body in turn.
pub(crate) async fn subscription_ctl(
    shard: &Rc<Shard>,
    request: &RemotingCommand,
) -> Result<RemotingCommand, Reject> {
    let illegal = |why: String| Reject::new(response_code::ILLEGAL_OPERATION, why);
    if request.body.is_empty() {
        return Err(illegal("Request body is null.".into()));
    }
    let body: CtlBody = serde_json::from_slice(&request.body)
        .map_err(|e| illegal(format!("undecodable LiteSubscriptionCtlRequestBody: {e}")))?;
    if body.subscription_set.is_empty() {
        return Err(illegal("LiteSubscriptionCtlRequestBody is empty.".into()));
    }
    let registry = &shard.env().lite;
    for dto in &body.subscription_set {
        let action = Action::parse(&dto.action)
            .ok_or_else(|| illegal(format!("unknown lite subscription action {}", dto.action)))?;
        // Java skips an entry without client, group or topic.
        if [&dto.client_id, &dto.group, &dto.topic]
            .iter()
            .any(|s| s.trim().is_empty())
        {
            continue;
        }
        if action == Action::CompleteRemove {
            registry.remove_client(&dto.client_id);
            continue;
        }
        let change = Change {
            action,
            client: &dto.client_id,
            group: &dto.group,
            topic: &dto.topic,
            lite_topics: &dto.lite_topic_set,
            now_ms: now_ms(),
        };
        registry.apply(&change).map_err(|refused| match refused {
            Refused::Illegal(why) => illegal(why),
            full => Reject::new(
                response_code::LITE_SUBSCRIPTION_QUOTA_EXCEEDED,
                full.why("broker"),
            ),
        })?;
        let newest = dto
            .offset_option
            .as_ref()
            .map(start::OffsetOption::starts_at_newest);
        if action == Action::PartialAdd && newest == Some(true) {
            start::start_at_newest(shard, &dto.group, &dto.topic, &dto.lite_topic_set).await?;
        }
    }
    Ok(RemotingCommand::response_to(
        request,
        response_code::SUCCESS,
        None,
    ))
}

fn check_pop(shard: &Shard, header: &PopLiteMessageRequestHeader) -> Result<i32, Reject> {
    refuse_on_slave(shard)?;
    if header.max_msg_num <= 0 || header.max_msg_num as usize > POP_MESSAGES_MAX {
        return Err(Reject::new(
            response_code::INVALID_PARAMETER,
            format!(
                "the pop message's num {} must be 1..={POP_MESSAGES_MAX}",
                header.max_msg_num
            ),
        ));
    }
    if header.invisible_time <= 0 {
        return Err(Reject::new(
            response_code::INVALID_PARAMETER,
            "invisibleTime must be positive",
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
    readable_queues(shard, &header.topic)
}

/// What one look over a client's lite topics found.
#[derive(Default)]
struct Found {
    body: BytesMut,
    counts: Vec<u32>,
}

/// POP_LITE_MESSAGE.
pub(crate) async fn pop_lite_message(
    shard: &Rc<Shard>,
    conn: &Connection,
    request: &RemotingCommand,
) -> Result<RemotingCommand, Reject> {
    let header = PopLiteMessageRequestHeader::from_ext(&request.ext_fields)?;
    let read_queues = check_pop(shard, &header)?;
    crate::shard::groups::check_pull(shard, &header.consumer_group).await?;
    let deadline = now_ms() + header.poll_time.clamp(0, POP_POLL_MS_MAX);
    loop {
        let pop_time = now_ms();
        let found = look(shard, &header, read_queues, pop_time).await?;
        let over = now_ms() >= deadline || conn.is_closed() || shard.stopping().is_triggered();
        if !found.counts.is_empty() || over {
            return Ok(answer(request, &header, found, pop_time));
        }
        // The next look after a pause: a lite topic's messages are mixed
        // with the others' in the parent's queues, so there is no queue to
        // hold on that only its messages wake.
        let pause = LOOK_PAUSE_MS.min((deadline - now_ms()).max(1) as u64);
        if shard
            .stopping()
            .interrupts_sleep(std::time::Duration::from_millis(pause))
            .await
        {
            return Ok(answer(request, &header, Found::default(), pop_time));
        }
    }
}

fn answer(
    request: &RemotingCommand,
    header: &PopLiteMessageRequestHeader,
    found: Found,
    pop_time: i64,
) -> RemotingCommand {
    let (code, remark) = if found.counts.is_empty() {
        (response_code::POLLING_TIMEOUT, "NO_MESSAGE_IN_QUEUE")
    } else {
        (response_code::SUCCESS, "FOUND")
    };
    let mut response = RemotingCommand::response_to(request, code, Some(remark.to_string()));
    let counts: Vec<String> = found.counts.iter().map(u32::to_string).collect();
    response.ext_fields = PopLiteMessageResponseHeader {
        pop_time,
        invisible_time: header.invisible_time,
        revive_qid: ORDER_REVIVE_QID,
        order_count_info: Some(counts.join(";")),
    }
    .to_ext();
    response.body = found.body.freeze();
    response
}

/// One look: the client's next lite topics in turn, each popped in order
/// from every queue of the parent topic, until the batch is full.
async fn look(
    shard: &Rc<Shard>,
    header: &PopLiteMessageRequestHeader,
    read_queues: i32,
    pop_time: i64,
) -> Result<Found, Reject> {
    let mut found = Found::default();
    let lites = shard.env().lite.round(
        &header.consumer_group,
        &header.client_id,
        &header.topic,
        LITE_TOPICS_PER_LOOK,
        pop_time,
    );
    let enable_property_filter = shard.config().enable_property_filter;
    for lite in lites {
        let group = lite_group(&header.consumer_group, &header.topic, &lite);
        crate::shard::groups::check_pull(shard, &group).await?;
        let filter = pull_filter(&lite, Some(LITE_EXPRESSION_TYPE), enable_property_filter)?;
        let lmq = lmq_name(&header.topic, &lite);
        for queue_id in 0..read_queues {
            let room = header.max_msg_num as usize - found.counts.len();
            if room == 0 {
                return Ok(found);
            }
            let call = PopQueue {
                group: group.clone(),
                topic: header.topic.clone(),
                queue_id,
                max_messages: room,
                max_bytes: shard.config().pull_bytes_max,
                invisible_time_ms: header.invisible_time,
                pop_time_ms: pop_time,
                init_mode: INIT_MODE_MIN,
                filter: filter.clone(),
                order: true,
                attempt_id: header.attempt_id.clone(),
            };
            let popped = shard
                .call(shard.owner_of(&header.topic, queue_id), call)
                .await??;
            for (i, (record, offset)) in popped.records.iter().zip(&popped.offsets).enumerate() {
                let Some(position) = pack_position(queue_id, *offset) else {
                    continue;
                };
                if append_with_position(record, &lmq, position, &mut found.body) {
                    found
                        .counts
                        .push(popped.counts.get(i).copied().unwrap_or(0));
                }
            }
            shard.metrics().count_out(
                &header.consumer_group,
                &header.topic,
                false,
                popped.offsets.len() as u64,
                popped.records.iter().map(|r| r.len() as u64).sum(),
            );
        }
    }
    Ok(found)
}
