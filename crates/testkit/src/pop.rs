//! Pop consumption as the Java client speaks it (raw Remoting): POP_MESSAGE
//! with "any queue", the receipt handle (`extraInfo`) the client builds
//! from the answer's startOffsetInfo, and ACK_MESSAGE.

use std::collections::BTreeMap;

use ferrocket_protocol::codes::{request_code, response_code};
use ferrocket_protocol::RemotingCommand;

use crate::remoting::RemotingConn;

/// One popped message and the handle the Java client would build for it.
#[derive(Debug, Clone)]
pub struct PoppedMsg {
    pub topic: String,
    pub queue_id: i32,
    pub offset: i64,
    pub body: String,
    pub reconsume_times: i32,
    pub extra_info: String,
}

pub fn pop(
    conn: &mut RemotingConn,
    group: &str,
    topic: &str,
    max: i32,
    invisible_ms: i64,
    poll_ms: i64,
) -> (i32, Vec<PoppedMsg>) {
    let answer = conn.request(pop_request(group, topic, max, invisible_ms, poll_ms));
    pop_answer(&answer)
}

/// POP_MESSAGE of any queue of `topic` for `group`, as the Java client
/// shapes it (add `order=true` for an ordered pop).
pub fn pop_request(
    group: &str,
    topic: &str,
    max: i32,
    invisible_ms: i64,
    poll_ms: i64,
) -> RemotingCommand {
    RemotingCommand::request(request_code::POP_MESSAGE)
        .with_ext("consumerGroup", group)
        .with_ext("topic", topic)
        .with_ext("queueId", -1)
        .with_ext("maxMsgNums", max)
        .with_ext("invisibleTime", invisible_ms)
        .with_ext("pollTime", poll_ms)
        .with_ext("bornTime", 0)
        .with_ext("initMode", 0)
        .with_ext("expType", "TAG")
        .with_ext("exp", "*")
}

/// A pop answer's code and messages, each with the handle the Java client
/// builds from the answer's startOffsetInfo.
pub fn pop_answer(answer: &RemotingCommand) -> (i32, Vec<PoppedMsg>) {
    if answer.code != response_code::SUCCESS {
        return (answer.code, Vec::new());
    }
    let field = |name: &str| answer.ext_fields.get(name).unwrap_or_default().to_string();
    let (pop_time, invisible) = (field("popTime"), field("invisibleTime"));
    // startOffsetInfo "t qid start;..." keyed as the Java client keys it.
    let starts: BTreeMap<String, String> = field("startOffsetInfo")
        .split(';')
        .filter_map(|entry| {
            let parts: Vec<&str> = entry.split(' ').collect();
            (parts.len() == 3).then(|| (format!("{}@{}", parts[0], parts[1]), parts[2].to_string()))
        })
        .collect();
    let got = ferrocket_protocol::record::records(&answer.body, true)
        .map(|record| {
            let record = record.unwrap();
            let mark = ferrocket_protocol::pop::retry_mark(record.topic);
            let start = &starts[&format!("{mark}@{}", record.queue_id)];
            PoppedMsg {
                topic: record.topic.to_string(),
                queue_id: record.queue_id,
                offset: record.queue_offset,
                body: String::from_utf8_lossy(record.body).into_owned(),
                reconsume_times: record.reconsume_times,
                extra_info: format!(
                    "{start} {pop_time} {invisible} {} {mark} broker-a {} {}",
                    field("reviveQid"),
                    record.queue_id,
                    record.queue_offset
                ),
            }
        })
        .collect();
    (answer.code, got)
}

pub fn handle_request(code: i32, group: &str, msg: &PoppedMsg) -> RemotingCommand {
    RemotingCommand::request(code)
        .with_ext("consumerGroup", group)
        .with_ext("topic", &msg.topic)
        .with_ext("queueId", msg.queue_id)
        .with_ext("extraInfo", &msg.extra_info)
        .with_ext("offset", msg.offset)
}

pub fn ack(conn: &mut RemotingConn, group: &str, msg: &PoppedMsg) {
    let answer = conn.request(handle_request(request_code::ACK_MESSAGE, group, msg));
    assert_eq!(answer.code, response_code::SUCCESS, "{answer:?}");
}
