//! Broker requests the integration tests build by hand, shaped as the Java
//! client sends them: UPDATE_AND_CREATE_TOPIC and SEND_MESSAGE (V1 header).

use bytes::Bytes;
use ferrocket_protocol::codes::{request_code, response_code};
use ferrocket_protocol::header::{CreateTopicRequestHeader, SendMessageRequestHeader};
use ferrocket_protocol::RemotingCommand;

use super::RemotingConn;

/// Creates `topic` with `queues` read and write queues on the broker behind
/// `conn`; panics unless the broker answers SUCCESS.
pub fn create_topic(conn: &mut RemotingConn, topic: &str, queues: i32) {
    let header = CreateTopicRequestHeader {
        topic: topic.to_string(),
        default_topic: Some("TBW102".into()),
        read_queue_nums: queues,
        write_queue_nums: queues,
        perm: 6,
        topic_filter_type: Some("SINGLE_TAG".into()),
        topic_sys_flag: Some(0),
        order: false,
        attributes: None,
    };
    let mut request = RemotingCommand::request(request_code::UPDATE_AND_CREATE_TOPIC);
    request.ext_fields = header.to_ext();
    let response = conn.request(request);
    assert_eq!(response.code, response_code::SUCCESS, "{response:?}");
}

/// A send header for `topic`/`queue_id` from `group` with no flags and no
/// properties; adjust fields with struct update syntax.
pub fn send_header(group: &str, topic: &str, queue_id: i32) -> SendMessageRequestHeader {
    SendMessageRequestHeader {
        producer_group: group.to_string(),
        topic: topic.to_string(),
        default_topic: Some("TBW102".into()),
        default_topic_queue_nums: Some(4),
        queue_id: Some(queue_id),
        sys_flag: Some(0),
        born_timestamp: Some(1_700_000_000_000),
        flag: Some(0),
        properties: Some(String::new()),
        reconsume_times: Some(0),
        unit_mode: false,
        max_reconsume_times: None,
        batch: false,
        broker_name: None,
    }
}

/// SEND_MESSAGE with `header` and `body`.
pub fn send_request(header: &SendMessageRequestHeader, body: impl Into<Bytes>) -> RemotingCommand {
    let mut request = RemotingCommand::request(request_code::SEND_MESSAGE).with_body(body);
    request.ext_fields = header.to_ext();
    request
}

/// UPDATE_AND_CREATE_TOPIC for `topic` with `queues` read and write queues,
/// as the Java admin sends it (for tests that look at the answer).
pub fn create_topic_request(topic: &str, queues: i32) -> RemotingCommand {
    let mut request = RemotingCommand::request(request_code::UPDATE_AND_CREATE_TOPIC);
    request.ext_fields = CreateTopicRequestHeader {
        topic: topic.to_string(),
        default_topic: Some("TBW102".into()),
        read_queue_nums: queues,
        write_queue_nums: queues,
        perm: 6,
        topic_filter_type: None,
        topic_sys_flag: Some(0),
        order: false,
        attributes: None,
    }
    .to_ext();
    request
}

/// A PULL_MESSAGE of up to `max` messages of queue `queue_id` from
/// `offset`, subscription `*` (sysFlag 4, or 6 when `suspend_ms` > 0: held
/// up to that long when there is nothing).
pub fn pull_request(
    group: &str,
    topic: &str,
    queue_id: i32,
    offset: i64,
    max: i32,
    suspend_ms: u64,
) -> RemotingCommand {
    let sys_flag = if suspend_ms > 0 { 6 } else { 4 };
    RemotingCommand::request(request_code::PULL_MESSAGE)
        .with_ext("consumerGroup", group)
        .with_ext("topic", topic)
        .with_ext("queueId", queue_id)
        .with_ext("queueOffset", offset)
        .with_ext("maxMsgNums", max)
        .with_ext("sysFlag", sys_flag)
        .with_ext("commitOffset", 0)
        .with_ext("suspendTimeoutMillis", suspend_ms)
        .with_ext("subscription", "*")
        .with_ext("subVersion", 0)
        .with_ext("expressionType", "TAG")
}

/// A HEART_BEAT of one CLUSTERING consumer of `group` with no
/// subscriptions.
pub fn consumer_heartbeat(client: &str, group: &str) -> RemotingCommand {
    RemotingCommand::request(request_code::HEART_BEAT).with_body(format!(
        "{{\"clientID\":\"{client}\",\"producerDataSet\":[],\"consumerDataSet\":[{{\
         \"groupName\":\"{group}\",\"consumeType\":\"CONSUME_PASSIVELY\",\
         \"messageModel\":\"CLUSTERING\",\"consumeFromWhere\":\"CONSUME_FROM_LAST_OFFSET\",\
         \"unitMode\":false,\"subscriptionDataSet\":[]}}]}}"
    ))
}
