//! SendMessage: the proxy picks the queue (round-robin over the writable
//! queues, or by the message group's hash for FIFO messages, so a group
//! keeps one queue and its order) and sends each message as SEND_MESSAGE.

use std::time::Duration;

use ferrocket_protocol::body::{perm, TopicRouteData};
use ferrocket_protocol::codes::response_code;
use ferrocket_protocol::header::SendMessageResponseHeader;

use crate::backend::Backend;
use crate::convert::{send_request, SendTarget};
use crate::limits::SEND_BATCH_MAX;
use crate::pb::{self, Code, MessageType, Status};
use crate::status::{from_answer, ok, status};
use crate::transaction::half_of_send;

const SEND_TIMEOUT: Duration = Duration::from_secs(3);

/// A writable queue: broker name and queue id.
fn writable_queues(route: &TopicRouteData) -> Vec<(String, i32)> {
    let mut queues = Vec::new();
    for data in &route.queue_datas {
        let has_master = route
            .broker_datas
            .iter()
            .any(|b| b.broker_name == data.broker_name && b.master_addr().is_some());
        if data.perm & perm::WRITE == 0 || !has_master {
            continue;
        }
        for id in 0..data.write_queue_nums.max(0) {
            queues.push((data.broker_name.clone(), id));
        }
    }
    queues
}

/// Java's `String.hashCode`, so a message group lands where a Java
/// proxy would put it on the same route.
fn java_hash(text: &str) -> i32 {
    text.encode_utf16()
        .fold(0i32, |h, c| h.wrapping_mul(31).wrapping_add(i32::from(c)))
}

fn pick<'a>(
    backend: &Backend,
    queues: &'a [(String, i32)],
    message: &pb::Message,
) -> &'a (String, i32) {
    // A message group, or else a lite topic, keeps to one queue (as a
    // lite topic is one queue in Java's broker).
    let sys = message.system_properties.as_ref();
    let group = sys
        .and_then(|s| s.message_group.as_deref())
        .filter(|g| !g.is_empty())
        .or_else(|| sys.and_then(|s| s.lite_topic.as_deref()))
        .filter(|g| !g.is_empty());
    let index = match group {
        Some(group) => java_hash(group).unsigned_abs() as usize,
        None => backend.next_index(),
    };
    &queues[index % queues.len()]
}

async fn send_one(
    backend: &Backend,
    queues: &[(String, i32)],
    message: &pb::Message,
) -> pb::SendResultEntry {
    let message_id = message
        .system_properties
        .as_ref()
        .map(|s| s.message_id.clone())
        .unwrap_or_default();
    let failed = |status: Status| pb::SendResultEntry {
        status: Some(status),
        message_id: message_id.clone(),
        ..Default::default()
    };
    let (broker_name, queue_id) = pick(backend, queues, message);
    let target = SendTarget {
        queue_id: *queue_id,
        broker_name,
    };
    let request = match send_request(message, &target) {
        Ok(request) => request,
        Err(refused) => return failed(refused),
    };
    let answer = match backend
        .invoke_broker(broker_name, request, SEND_TIMEOUT)
        .await
    {
        Ok(answer) => answer,
        Err(error) => return failed(error),
    };
    if answer.code != response_code::SUCCESS {
        return failed(from_answer(answer.code, answer.remark.as_deref()));
    }
    let sys = message.system_properties.as_ref();
    if sys.is_some_and(|s| s.lite_topic.as_deref().is_some_and(|l| !l.is_empty())) {
        backend.lite.wake();
    }
    let header = SendMessageResponseHeader::from_ext(&answer.ext_fields).ok();
    // As the Java client names it: the message's unique key.
    let transaction_id = header
        .as_ref()
        .and_then(|h| h.transaction_id.clone())
        .filter(|id| !id.is_empty())
        .unwrap_or_else(|| message_id.clone());
    let transactional = message
        .system_properties
        .as_ref()
        .is_some_and(|s| s.message_type == MessageType::Transaction as i32);
    if transactional {
        let topic = message.topic.as_ref().map_or("", |t| t.name.as_str());
        match half_of_send(broker_name, topic, &message_id, &answer) {
            Some(half) => backend.halves.remember(&transaction_id, half),
            None => tracing::warn!(%message_id, "a half message's send answer lacks its offsets"),
        }
    }
    pb::SendResultEntry {
        status: Some(ok()),
        message_id: message_id.clone(),
        transaction_id: if transactional {
            transaction_id
        } else {
            String::new()
        },
        offset: header.as_ref().map_or(0, |h| h.queue_offset),
        // A timer message's (RocketMQ 5.3): what RecallMessage takes.
        recall_handle: header.and_then(|h| h.recall_handle).unwrap_or_default(),
    }
}

/// SendMessage: every message of the request, one topic.
pub async fn send_message(
    backend: &Backend,
    request: pb::SendMessageRequest,
) -> pb::SendMessageResponse {
    let refuse = |status: Status| pb::SendMessageResponse {
        status: Some(status),
        entries: Vec::new(),
    };
    let Some(first) = request.messages.first() else {
        return refuse(status(Code::BadRequest, "no message to send"));
    };
    if request.messages.len() > SEND_BATCH_MAX {
        return refuse(status(
            Code::PayloadTooLarge,
            format!("more than {SEND_BATCH_MAX} messages in one send"),
        ));
    }
    let topic = first.topic.as_ref().map_or("", |t| t.name.as_str());
    let one_topic = request
        .messages
        .iter()
        .all(|m| m.topic.as_ref().map(|t| t.name.as_str()) == Some(topic));
    if topic.is_empty() || !one_topic {
        return refuse(status(
            Code::IllegalTopic,
            "all messages of a send need one topic",
        ));
    }
    let route = match backend.route(topic).await {
        Ok(route) => route,
        Err(failed) => return refuse(failed),
    };
    let queues = writable_queues(&route);
    if queues.is_empty() {
        // A route read while the topic's sets had no master (between a
        // master's death and its successor's registration) is not kept for
        // the route TTL: the next send reads the name server's route again.
        backend.forget_route(topic);
        return refuse(status(
            Code::Forbidden,
            format!("topic {topic} has no writable queue"),
        ));
    }
    // Sent together; each answer lands in its message's entry.
    let sends = request
        .messages
        .iter()
        .map(|m| send_one(backend, &queues, m));
    let entries = futures_util::future::join_all(sends).await;
    let overall = overall_status(&entries);
    pb::SendMessageResponse {
        status: Some(overall),
        entries,
    }
}

/// One status for the whole send: the entries' own when they agree,
/// MULTIPLE_RESULTS otherwise (as the proxy answers).
fn overall_status(entries: &[pb::SendResultEntry]) -> Status {
    let codes: Vec<i32> = entries
        .iter()
        .map(|e| e.status.as_ref().map_or(0, |s| s.code))
        .collect();
    if codes.windows(2).all(|w| w[0] == w[1]) {
        return entries
            .first()
            .and_then(|e| e.status.clone())
            .unwrap_or_else(ok);
    }
    status(
        Code::MultipleResults,
        "messages of this send had different results",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn java_string_hash() {
        assert_eq!(java_hash(""), 0);
        assert_eq!(java_hash("a"), 97);
        assert_eq!(
            java_hash("order-1"),
            "order-1"
                .chars()
                .fold(0i32, |h, c| h.wrapping_mul(31).wrapping_add(c as i32))
        );
    }
}
