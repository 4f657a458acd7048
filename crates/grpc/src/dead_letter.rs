//! ForwardMessageToDeadLetterQueue: a consumer gives up on a message (its
//! last delivery attempt failed). As RocketMQ's proxy does, the message is
//! sent back with delay level -1 (CONSUMER_SEND_MSG_BACK: straight to the
//! group's `%DLQ%` topic), then acked so that pop consumption forgets it.

use std::time::Duration;

use ferrocket_protocol::codes::{request_code, response_code};
use ferrocket_protocol::RemotingCommand;

use crate::backend::Backend;
use crate::pb::{self, AckMessageEntry, Code};
use crate::receive::{ack_one, parse_handle};
use crate::status::{from_answer, status};

const CALL_TIMEOUT: Duration = Duration::from_secs(3);
/// Delay level that sends a message to the dead-letter queue at once.
const DLQ_DELAY_LEVEL: i32 = -1;

pub async fn forward(
    backend: &Backend,
    request: pb::ForwardMessageToDeadLetterQueueRequest,
) -> pb::ForwardMessageToDeadLetterQueueResponse {
    let answer = |status| pb::ForwardMessageToDeadLetterQueueResponse {
        status: Some(status),
    };
    let group = request.group.as_ref().map_or("", |g| g.name.as_str());
    let topic = request.topic.as_ref().map_or("", |t| t.name.as_str());
    if group.is_empty() || topic.is_empty() {
        return answer(status(Code::BadRequest, "a group and a topic are needed"));
    }
    let handle = match parse_handle(&request.receipt_handle) {
        Ok(handle) => handle,
        Err(invalid) => return answer(invalid),
    };
    let send_back = RemotingCommand::request(request_code::CONSUMER_SEND_MSG_BACK)
        .with_ext("offset", handle.commit_log_offset)
        .with_ext("group", group)
        .with_ext("delayLevel", DLQ_DELAY_LEVEL)
        .with_ext("originMsgId", &request.message_id)
        .with_ext("originTopic", topic)
        .with_ext("unitMode", false)
        .with_ext(
            "maxReconsumeTimes",
            request.max_delivery_attempts.max(1) - 1,
        );
    let broker = handle.info.broker_name.clone();
    match backend
        .invoke_broker(&broker, send_back, CALL_TIMEOUT)
        .await
    {
        Ok(reply) if reply.code == response_code::SUCCESS => {}
        Ok(reply) => return answer(from_answer(reply.code, reply.remark.as_deref())),
        Err(failed) => return answer(failed),
    }
    let entry = AckMessageEntry {
        message_id: request.message_id.clone(),
        receipt_handle: request.receipt_handle.clone(),
        // A lite topic's message is acked as its lite group.
        lite_topic: request.lite_topic.clone(),
    };
    answer(ack_one(backend, group, topic, &entry).await)
}
