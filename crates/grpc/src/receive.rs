//! ReceiveMessage, AckMessage and ChangeInvisibleDuration over pop
//! consumption: a receive is one POP_MESSAGE of any queue of one broker
//! (round-robin, or the broker the request names), as RocketMQ's proxy
//! does; each message's receipt handle is the pop's extraInfo with the
//! message's CommitLog offset after it, so an ack or a change goes back to
//! the broker (and checkpoint) the message came from.

use std::collections::HashMap;
use std::time::Duration;

use ferrocket_protocol::body::perm;
use ferrocket_protocol::codes::{request_code, response_code};
use ferrocket_protocol::header::{
    AckMessageRequestHeader, ChangeInvisibleTimeRequestHeader, ChangeInvisibleTimeResponseHeader,
    PopMessageRequestHeader, PopMessageResponseHeader,
};
use ferrocket_protocol::pop::{retry_mark, ExtraInfo};
use ferrocket_protocol::record::records;
use ferrocket_protocol::RemotingCommand;

use crate::backend::Backend;
use crate::convert::{duration_ms, now_ms, record_message, timestamp, Delivery};
use crate::limits::*;
use crate::pb::{self, receive_message_response::Content, Code, FilterType, Status};
use crate::status::{from_answer, ok, status};

const CALL_TIMEOUT: Duration = Duration::from_secs(3);
/// A new group's pops start at the queues' ends (`ConsumeInitMode.MAX`),
/// as the proxy asks; the broker starts at 0 while message 0 is in memory.
const INIT_MODE_MAX: i32 = 1;
/// A group's first pop of a lite topic starts at the queues' starts
/// (`ConsumeInitMode.MIN`): what the lite topic holds is delivered to a
/// group that subscribes it later.
const INIT_MODE_MIN: i32 = 0;

/// The answer stream's items.
pub type Responses = Vec<pb::ReceiveMessageResponse>;

fn item(content: Content) -> pb::ReceiveMessageResponse {
    pb::ReceiveMessageResponse {
        content: Some(content),
    }
}

/// The stream of a receive that ends in `status` with no message.
pub(crate) fn only(status: Status) -> Responses {
    vec![
        item(Content::Status(status)),
        item(Content::DeliveryTimestamp(timestamp(now_ms()))),
    ]
}

/// What a receive asks for, checked and clamped to the proxy's limits.
struct Receive {
    group: String,
    topic: String,
    broker: Option<String>,
    batch: i32,
    invisible_ms: i64,
    poll_ms: i64,
    exp_type: &'static str,
    exp: String,
    attempt_id: Option<String>,
    init_mode: i32,
}

fn check(request: &pb::ReceiveMessageRequest) -> Result<Receive, Status> {
    let group = request.group.as_ref().map_or("", |g| g.name.as_str());
    if group.is_empty() {
        return Err(status(Code::IllegalConsumerGroup, "no consumer group"));
    }
    let queue = request.message_queue.as_ref();
    let topic = queue
        .and_then(|q| q.topic.as_ref())
        .map_or("", |t| t.name.as_str());
    if topic.is_empty() {
        return Err(status(Code::IllegalTopic, "no topic"));
    }
    let invisible_ms = request
        .invisible_duration
        .as_ref()
        .map_or(INVISIBLE_MS_DEFAULT, duration_ms);
    if !(INVISIBLE_MS_MIN..=INVISIBLE_MS_MAX).contains(&invisible_ms) {
        return Err(status(
            Code::IllegalInvisibleTime,
            format!("the invisible time must be in [{INVISIBLE_MS_MIN}, {INVISIBLE_MS_MAX}] ms"),
        ));
    }
    let poll_ms = request
        .long_polling_timeout
        .as_ref()
        .map_or(LONG_POLL_MS_MAX, duration_ms)
        .clamp(LONG_POLL_MS_MIN, LONG_POLL_MS_MAX);
    let filter = request.filter_expression.as_ref();
    let exp_type = match filter.map(|f| f.r#type) {
        Some(t) if t == FilterType::Sql as i32 => "SQL92",
        _ => "TAG",
    };
    let exp = filter
        .map(|f| f.expression.trim().to_string())
        .filter(|e| !e.is_empty())
        .unwrap_or_else(|| "*".into());
    Ok(Receive {
        group: group.to_string(),
        topic: topic.to_string(),
        broker: queue
            .and_then(|q| q.broker.as_ref())
            .map(|b| b.name.clone())
            .filter(|n| !n.is_empty()),
        batch: request.batch_size.clamp(1, RECEIVE_BATCH_MAX),
        invisible_ms,
        poll_ms,
        exp_type,
        exp,
        attempt_id: request.attempt_id.clone(),
        init_mode: INIT_MODE_MAX,
    })
}

/// The broker to pop from: the one named, or the next readable one.
async fn choose_broker(backend: &Backend, receive: &Receive) -> Result<String, Status> {
    if let Some(broker) = &receive.broker {
        return Ok(broker.clone());
    }
    let route = backend.route(&receive.topic).await?;
    let readable: Vec<&str> = route
        .queue_datas
        .iter()
        .filter(|q| q.perm & perm::READ != 0 && q.read_queue_nums > 0)
        .map(|q| q.broker_name.as_str())
        .collect();
    if readable.is_empty() {
        return Err(status(
            Code::Forbidden,
            format!("topic {} has no readable queue", receive.topic),
        ));
    }
    Ok(readable[backend.next_index() % readable.len()].to_string())
}

fn pop_request(receive: &Receive) -> RemotingCommand {
    let header = PopMessageRequestHeader {
        consumer_group: receive.group.clone(),
        topic: receive.topic.clone(),
        queue_id: -1,
        max_msg_nums: receive.batch,
        invisible_time: receive.invisible_ms,
        poll_time: receive.poll_ms,
        born_time: Some(now_ms()),
        init_mode: receive.init_mode,
        exp_type: Some(receive.exp_type.to_string()),
        exp: Some(receive.exp.clone()),
        order: false,
        attempt_id: receive.attempt_id.clone(),
    };
    let mut request = RemotingCommand::request(request_code::POP_MESSAGE);
    request.ext_fields = header.to_ext();
    request
}

/// ReceiveMessage: the whole answer stream.
pub async fn receive_message(backend: &Backend, request: pb::ReceiveMessageRequest) -> Responses {
    match check(&request) {
        Ok(receive) => pop(backend, receive).await,
        Err(refused) => only(refused),
    }
}

/// A lite consumer's receive of one lite topic: `request` popped as
/// `group` with the `LITE` filter, from the queues' starts for a new
/// group, not waiting for new messages.
pub(crate) async fn receive_lite(
    backend: &Backend,
    request: &pb::ReceiveMessageRequest,
    group: String,
    lite_topic: &str,
) -> Responses {
    match check(request) {
        Ok(mut receive) => {
            receive.group = group;
            receive.exp_type = ferrocket_protocol::lite::LITE_EXPRESSION_TYPE;
            receive.exp = lite_topic.to_string();
            receive.poll_ms = 0;
            receive.init_mode = INIT_MODE_MIN;
            pop(backend, receive).await
        }
        Err(refused) => only(refused),
    }
}

async fn pop(backend: &Backend, receive: Receive) -> Responses {
    let broker = match choose_broker(backend, &receive).await {
        Ok(broker) => broker,
        Err(failed) => return only(failed),
    };
    let timeout = Duration::from_millis(receive.poll_ms as u64) + CALL_TIMEOUT;
    let answer = match backend
        .invoke_broker(&broker, pop_request(&receive), timeout)
        .await
    {
        Ok(answer) => answer,
        Err(failed) => return only(failed),
    };
    match answer.code {
        response_code::SUCCESS => popped(&answer, &broker, &receive.topic),
        response_code::POLLING_FULL => {
            only(status(Code::TooManyRequests, "too many receives waiting"))
        }
        code => only(from_answer(code, answer.remark.as_deref())),
    }
}

/// A pop's messages as the stream: OK, the messages, the delivery time.
fn popped(answer: &RemotingCommand, broker: &str, topic: &str) -> Responses {
    let Ok(header) = PopMessageResponseHeader::from_ext(&answer.ext_fields) else {
        return only(status(Code::InternalServerError, "undecodable pop answer"));
    };
    // startOffsetInfo: "mark queueId start;..."
    let starts: HashMap<(String, i32), i64> = header
        .start_offset_info
        .as_deref()
        .unwrap_or("")
        .split(';')
        .filter_map(|entry| {
            let mut parts = entry.split(' ');
            let mark = parts.next()?.to_string();
            let queue_id = parts.next()?.parse().ok()?;
            let start = parts.next()?.parse().ok()?;
            Some(((mark, queue_id), start))
        })
        .collect();
    let mut out = vec![item(Content::Status(ok()))];
    for record in records(&answer.body, true) {
        let Ok(record) = record else {
            tracing::warn!("a popped record does not decode; skipped");
            continue;
        };
        let mark = retry_mark(record.topic);
        let start = starts
            .get(&(mark.to_string(), record.queue_id))
            .copied()
            .unwrap_or(record.queue_offset);
        let handle = format!(
            "{start} {} {} {} {mark} {broker} {} {} {}",
            header.pop_time,
            header.invisible_time,
            header.revive_qid,
            record.queue_id,
            record.queue_offset,
            record.physical_offset
        );
        let delivery = Delivery {
            receipt_handle: handle,
            invisible_ms: header.invisible_time,
            topic: topic.to_string(),
        };
        // A body that cannot be inflated is left unacknowledged: it comes
        // back after its invisible time and, retried out, goes to the DLQ.
        match record_message(&record, Some(delivery)) {
            Ok(message) => out.push(item(Content::Message(message))),
            Err(e) => tracing::warn!(
                topic = record.topic,
                offset = record.queue_offset,
                "a popped message is not delivered: {e}"
            ),
        }
    }
    if out.len() == 1 {
        return only(status(Code::MessageNotFound, "no new message"));
    }
    out.push(item(Content::DeliveryTimestamp(timestamp(now_ms()))));
    out
}

/// A receipt handle taken apart: the extraInfo the broker wants back and
/// the queue the message is in.
pub(crate) struct Handle {
    pub(crate) extra_info: String,
    pub(crate) info: ExtraInfo,
    pub(crate) queue_offset: i64,
    pub(crate) commit_log_offset: i64,
}

pub(crate) fn parse_handle(handle: &str) -> Result<Handle, Status> {
    let invalid = || status(Code::InvalidReceiptHandle, "invalid receipt handle");
    let (extra_info, last) = handle.trim().rsplit_once(' ').ok_or_else(invalid)?;
    let commit_log_offset = last.parse().map_err(|_| invalid())?;
    let info = ExtraInfo::parse(extra_info).map_err(|_| invalid())?;
    let queue_offset = info.msg_queue_offset.ok_or_else(invalid)?;
    Ok(Handle {
        extra_info: extra_info.to_string(),
        info,
        queue_offset,
        commit_log_offset,
    })
}

/// The topic a handle's message was read from: the topic, or its pop
/// retry topic for a redelivery.
fn read_topic(group: &str, topic: &str, mark: &str) -> String {
    match mark {
        "1" => format!("%RETRY%{group}_{topic}"),
        "2" => format!("%RETRY%{group}+{topic}"),
        _ => topic.to_string(),
    }
}

fn names(
    group: &Option<pb::Resource>,
    topic: &Option<pb::Resource>,
) -> Result<(String, String), Status> {
    let group = group.as_ref().map_or("", |g| g.name.as_str());
    let topic = topic.as_ref().map_or("", |t| t.name.as_str());
    if group.is_empty() {
        return Err(status(Code::IllegalConsumerGroup, "no consumer group"));
    }
    if topic.is_empty() {
        return Err(status(Code::IllegalTopic, "no topic"));
    }
    Ok((group.to_string(), topic.to_string()))
}

pub(crate) async fn ack_one(
    backend: &Backend,
    group: &str,
    topic: &str,
    entry: &pb::AckMessageEntry,
) -> Status {
    let handle = match parse_handle(&entry.receipt_handle) {
        Ok(handle) => handle,
        Err(invalid) => return invalid,
    };
    let group = &crate::lite::entry_group(group, topic, entry.lite_topic.as_deref());
    let header = AckMessageRequestHeader {
        consumer_group: group.to_string(),
        topic: read_topic(group, topic, &handle.info.retry_mark),
        queue_id: handle.info.queue_id,
        extra_info: handle.extra_info.clone(),
        offset: handle.queue_offset,
        lite_topic: None,
    };
    let mut request = RemotingCommand::request(request_code::ACK_MESSAGE);
    request.ext_fields = header.to_ext();
    match backend
        .invoke_broker(&handle.info.broker_name, request, CALL_TIMEOUT)
        .await
    {
        Ok(answer) => from_answer(answer.code, answer.remark.as_deref()),
        Err(failed) => failed,
    }
}

/// AckMessage.
pub async fn ack_message(
    backend: &Backend,
    request: pb::AckMessageRequest,
) -> pb::AckMessageResponse {
    let (group, topic) = match names(&request.group, &request.topic) {
        Ok(names) => names,
        Err(refused) => {
            return pb::AckMessageResponse {
                status: Some(refused),
                entries: Vec::new(),
            }
        }
    };
    if request.entries.len() > ACK_ENTRIES_MAX {
        return pb::AckMessageResponse {
            status: Some(status(
                Code::PayloadTooLarge,
                format!("more than {ACK_ENTRIES_MAX} entries"),
            )),
            entries: Vec::new(),
        };
    }
    // Every entry's ACK_MESSAGE at once (a batch of 32 is 32 round trips).
    let acks = request
        .entries
        .iter()
        .map(|entry| ack_one(backend, &group, &topic, entry));
    let statuses = futures_util::future::join_all(acks).await;
    let entries: Vec<pb::AckMessageResultEntry> = request
        .entries
        .iter()
        .zip(statuses)
        .map(|(entry, status)| pb::AckMessageResultEntry {
            message_id: entry.message_id.clone(),
            receipt_handle: entry.receipt_handle.clone(),
            status: Some(status),
        })
        .collect();
    let codes: Vec<i32> = entries
        .iter()
        .map(|e| e.status.as_ref().map_or(0, |s| s.code))
        .collect();
    let overall = match codes.windows(2).all(|w| w[0] == w[1]) {
        true => entries
            .first()
            .and_then(|e| e.status.clone())
            .unwrap_or_else(ok),
        false => status(
            Code::MultipleResults,
            "entries of this ack had different results",
        ),
    };
    pb::AckMessageResponse {
        status: Some(overall),
        entries,
    }
}

/// ChangeInvisibleDuration: a new handle for the message's new checkpoint.
pub async fn change_invisible(
    backend: &Backend,
    request: pb::ChangeInvisibleDurationRequest,
) -> pb::ChangeInvisibleDurationResponse {
    let answer = |status: Status, receipt_handle: String| pb::ChangeInvisibleDurationResponse {
        status: Some(status),
        receipt_handle,
    };
    let (group, topic) = match names(&request.group, &request.topic) {
        Ok((group, topic)) => (
            crate::lite::entry_group(&group, &topic, request.lite_topic.as_deref()),
            topic,
        ),
        Err(refused) => return answer(refused, String::new()),
    };
    let handle = match parse_handle(&request.receipt_handle) {
        Ok(handle) => handle,
        Err(invalid) => return answer(invalid, String::new()),
    };
    let invisible_ms = request.invisible_duration.as_ref().map_or(0, duration_ms);
    if !(1..=INVISIBLE_MS_MAX).contains(&invisible_ms) {
        let why = format!("the invisible time must be in [1, {INVISIBLE_MS_MAX}] ms");
        return answer(status(Code::IllegalInvisibleTime, why), String::new());
    }
    let header = ChangeInvisibleTimeRequestHeader {
        consumer_group: group.clone(),
        topic: read_topic(&group, &topic, &handle.info.retry_mark),
        queue_id: handle.info.queue_id,
        extra_info: handle.extra_info.clone(),
        offset: handle.queue_offset,
        invisible_time: invisible_ms,
        lite_topic: None,
    };
    let mut remoting = RemotingCommand::request(request_code::CHANGE_MESSAGE_INVISIBLETIME);
    remoting.ext_fields = header.to_ext();
    let broker = handle.info.broker_name.clone();
    let reply = match backend.invoke_broker(&broker, remoting, CALL_TIMEOUT).await {
        Ok(reply) => reply,
        Err(failed) => return answer(failed, String::new()),
    };
    if reply.code != response_code::SUCCESS {
        return answer(
            from_answer(reply.code, reply.remark.as_deref()),
            String::new(),
        );
    }
    let Ok(changed) = ChangeInvisibleTimeResponseHeader::from_ext(&reply.ext_fields) else {
        return answer(
            status(Code::InternalServerError, "undecodable answer"),
            String::new(),
        );
    };
    // The broker keeps the message under a new checkpoint at its offset.
    let info = &handle.info;
    let new_handle = format!(
        "{} {} {} {} {} {broker} {} {} {}",
        handle.queue_offset,
        changed.pop_time,
        changed.invisible_time,
        changed.revive_qid,
        info.retry_mark,
        info.queue_id,
        handle.queue_offset,
        handle.commit_log_offset
    );
    answer(ok(), new_handle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_handle_names_its_broker_queue_and_offsets() {
        let handle = parse_handle("100 1700000000000 30000 0 1 broker-a 3 105 4096").unwrap();
        assert_eq!(
            handle.extra_info,
            "100 1700000000000 30000 0 1 broker-a 3 105"
        );
        assert_eq!(handle.info.broker_name, "broker-a");
        assert_eq!(handle.queue_offset, 105);
        assert_eq!(handle.commit_log_offset, 4096);
        assert_eq!(read_topic("g", "T", &handle.info.retry_mark), "%RETRY%g_T");
        assert!(parse_handle("nonsense").is_err());
        assert!(parse_handle("1 2 3 4 0 b 1 x 5").is_err());
    }

    #[test]
    fn receives_outside_the_limits_are_refused_or_clamped() {
        let mut request = pb::ReceiveMessageRequest {
            group: Some(crate::route::resource("g")),
            message_queue: Some(pb::MessageQueue {
                topic: Some(crate::route::resource("T")),
                ..Default::default()
            }),
            batch_size: 100,
            invisible_duration: Some(crate::convert::duration(30_000)),
            long_polling_timeout: Some(crate::convert::duration(60_000)),
            ..Default::default()
        };
        let receive = check(&request).unwrap();
        assert_eq!(receive.batch, RECEIVE_BATCH_MAX);
        assert_eq!(receive.poll_ms, LONG_POLL_MS_MAX);
        request.invisible_duration = Some(crate::convert::duration(1_000));
        let refused = check(&request).err().unwrap();
        assert_eq!(refused.code, Code::IllegalInvisibleTime as i32);
    }
}
