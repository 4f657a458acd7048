//! PEEK_MESSAGE (200052): the messages a group's next pop would get,
//! without popping them; NOTIFICATION (200054): whether a pop would find
//! anything, waiting up to `pollTime` for it; POLLING_INFO (200055): how
//! many pops wait for messages.

use std::rc::Rc;

use bytes::BytesMut;
use ferrocket_protocol::codes::response_code;
use ferrocket_protocol::header::{
    NotificationRequestHeader, NotificationResponseHeader, PeekMessageRequestHeader,
    PollingInfoRequestHeader, PollingInfoResponseHeader, PopMessageResponseHeader,
};
use ferrocket_protocol::RemotingCommand;

use super::{readable_queues, refuse_on_slave, POP_POLL_MS_MAX, REVIVE_QID};
use crate::clock::now_ms;
use crate::error::Reject;
use crate::services::pop::POP_MESSAGES_MAX;
use crate::shard::pop::{pop_retry_topic, PeekQueue, Popped, WaitingPops};
use crate::shard::Shard;

/// The queues a request names: `queue_id`, or all read queues when negative.
fn queues_of(queue_id: i32, read_queues: i32) -> Vec<i32> {
    if queue_id >= 0 {
        vec![queue_id]
    } else {
        (0..read_queues).collect()
    }
}

async fn peek(
    shard: &Shard,
    group: &str,
    topic: &str,
    queue_id: i32,
    max: usize,
) -> Result<Popped, Reject> {
    let call = PeekQueue {
        group: group.to_string(),
        topic: topic.to_string(),
        queue_id,
        max_messages: max,
        max_bytes: shard.config().pull_bytes_max,
    };
    shard.call(shard.owner_of(topic, queue_id), call).await?
}

/// PEEK_MESSAGE: SUCCESS with the records, or PULL_NOT_FOUND.
pub(crate) async fn peek_message(
    shard: &Rc<Shard>,
    request: &RemotingCommand,
) -> Result<RemotingCommand, Reject> {
    refuse_on_slave(shard)?;
    crate::shard::groups::check_readable(shard)?;
    let header = PeekMessageRequestHeader::from_ext(&request.ext_fields)?;
    if header.max_msg_nums <= 0 || header.max_msg_nums as usize > POP_MESSAGES_MAX {
        return Err(Reject::new(
            response_code::INVALID_PARAMETER,
            format!(
                "the max message num {} must be 1..={POP_MESSAGES_MAX}",
                header.max_msg_nums
            ),
        ));
    }
    let read = readable_queues(shard, &header.topic)?;
    let mut body = BytesMut::new();
    let (mut count, mut rest) = (0usize, 0i64);
    for queue_id in queues_of(header.queue_id, read) {
        let room = header.max_msg_nums as usize - count;
        if room == 0 {
            break;
        }
        let seen = peek(shard, &header.consumer_group, &header.topic, queue_id, room).await?;
        rest += seen.rest;
        count += seen.records.len();
        for record in &seen.records {
            body.extend_from_slice(record);
        }
    }
    let code = if count > 0 {
        response_code::SUCCESS
    } else {
        response_code::PULL_NOT_FOUND
    };
    let mut response = RemotingCommand::response_to(request, code, None);
    response.ext_fields = PopMessageResponseHeader {
        pop_time: now_ms(),
        invisible_time: 0,
        revive_qid: REVIVE_QID,
        rest_num: rest,
        ..PopMessageResponseHeader::default()
    }
    .to_ext();
    response.body = body.freeze();
    Ok(response)
}

/// Whether a pop of the request's queues (or the group's pop retry topic)
/// would find a message now.
async fn has_message(
    shard: &Shard,
    header: &NotificationRequestHeader,
    read: i32,
) -> Result<bool, Reject> {
    for queue_id in queues_of(header.queue_id, read) {
        if !peek(shard, &header.consumer_group, &header.topic, queue_id, 1)
            .await?
            .records
            .is_empty()
        {
            return Ok(true);
        }
    }
    let retry = pop_retry_topic(&header.consumer_group, &header.topic);
    if shard.topic(&retry).is_some() {
        return Ok(!peek(shard, &header.consumer_group, &retry, 0, 1)
            .await?
            .records
            .is_empty());
    }
    Ok(false)
}

/// NOTIFICATION: always SUCCESS, with `hasMsg`.
pub(crate) async fn notification(
    shard: &Rc<Shard>,
    request: &RemotingCommand,
) -> Result<RemotingCommand, Reject> {
    refuse_on_slave(shard)?;
    crate::shard::groups::check_readable(shard)?;
    let header = NotificationRequestHeader::from_ext(&request.ext_fields)?;
    let read = readable_queues(shard, &header.topic)?;
    let deadline = now_ms() + header.poll_time.clamp(0, POP_POLL_MS_MAX);
    let has_msg = loop {
        if has_message(shard, &header, read).await? {
            break true;
        }
        if deadline - now_ms() <= 0 {
            break false;
        }
        let queues = (
            header.consumer_group.as_str(),
            header.topic.as_str(),
            header.queue_id,
            read,
        );
        if super::wait_for_messages(
            shard,
            queues,
            &crate::services::filter::TagFilter::All,
            deadline,
        )
        .await
        {
            break false;
        }
    };
    let mut response = RemotingCommand::response_to(request, response_code::SUCCESS, None);
    response.ext_fields = NotificationResponseHeader {
        has_msg,
        polling_full: false,
    }
    .to_ext();
    Ok(response)
}

/// POLLING_INFO: the pops of (group, topic, queue) waiting on every shard.
pub(crate) async fn polling_info(
    shard: &Rc<Shard>,
    request: &RemotingCommand,
) -> Result<RemotingCommand, Reject> {
    crate::shard::groups::check_readable(shard)?;
    let header = PollingInfoRequestHeader::from_ext(&request.ext_fields)?;
    readable_queues(shard, &header.topic)?;
    let key = (header.consumer_group, header.topic, header.queue_id.max(-1));
    let mut polling_num = 0;
    for reply in shard.call_all(WaitingPops(key)).await {
        polling_num += reply?;
    }
    let mut response = RemotingCommand::response_to(request, response_code::SUCCESS, None);
    response.ext_fields = PollingInfoResponseHeader { polling_num }.to_ext();
    Ok(response)
}
