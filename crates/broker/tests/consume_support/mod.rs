//! Helpers for the consumption tests, on top of `common`: raw records with
//! their CommitLog offsets, group and heartbeat requests, waiting pulls.

#![allow(dead_code)]

use std::time::{Duration, Instant};

use ferrocket_protocol::codes::{request_code, response_code};
use ferrocket_protocol::header::{
    pull_sys_flag, PullMessageRequestHeader, PullMessageResponseHeader,
};
use ferrocket_protocol::record::records;
use ferrocket_protocol::RemotingCommand;

use crate::common::{fields, BrokerCalls, RemotingConn};

/// A pulled message with what the consumption tests look at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Got {
    pub topic: String,
    pub queue_id: i32,
    pub queue_offset: i64,
    pub physical_offset: i64,
    pub offset_msg_id: String,
    pub reconsume_times: i32,
    pub store_timestamp_ms: i64,
    pub body: Vec<u8>,
    pub props: Vec<(String, String)>,
}

impl Got {
    pub fn prop(&self, name: &str) -> Option<&str> {
        self.props
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

pub fn decode(response: &RemotingCommand) -> Vec<Got> {
    records(&response.body, true)
        .map(|record| {
            let r = record.unwrap();
            Got {
                topic: r.topic.to_string(),
                queue_id: r.queue_id,
                queue_offset: r.queue_offset,
                physical_offset: r.physical_offset,
                offset_msg_id: r.offset_msg_id(),
                reconsume_times: r.reconsume_times,
                store_timestamp_ms: r.store_timestamp_ms,
                body: r.body.to_vec(),
                props: r
                    .properties()
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            }
        })
        .collect()
}

/// A pull with a subscription of any expression type; no suspend.
pub fn sub_pull_header(
    group: &str,
    topic: &str,
    queue_id: i32,
    offset: i64,
    expression: &str,
    expression_type: &str,
) -> PullMessageRequestHeader {
    PullMessageRequestHeader {
        consumer_group: group.into(),
        topic: topic.into(),
        queue_id,
        queue_offset: offset,
        max_msg_nums: 32,
        sys_flag: pull_sys_flag::SUBSCRIPTION,
        commit_offset: 0,
        suspend_timeout_millis: Some(0),
        subscription: Some(expression.into()),
        sub_version: Some(0),
        expression_type: Some(expression_type.into()),
        max_msg_bytes: None,
    }
}

/// Everything of a queue from offset 0, with `expression` of
/// `expression_type`. Panics on any answer but found / not found.
pub fn pull_all(
    client: &mut RemotingConn,
    group: &str,
    topic: &str,
    queue_id: i32,
    expression: &str,
    expression_type: &str,
) -> Vec<Got> {
    let mut out = Vec::new();
    let mut offset = 0;
    loop {
        let response = client.pull(&sub_pull_header(
            group,
            topic,
            queue_id,
            offset,
            expression,
            expression_type,
        ));
        let done = [
            response_code::PULL_NOT_FOUND,
            response_code::PULL_OFFSET_MOVED,
        ];
        if done.contains(&response.code) {
            return out;
        }
        let header =
            PullMessageResponseHeader::from_ext(&response.ext_fields).unwrap_or_else(|e| {
                panic!(
                    "pull answered {}: {:?} ({e})",
                    response.code, response.remark
                )
            });
        match response.code {
            response_code::SUCCESS => {
                out.extend(decode(&response));
                offset = header.next_begin_offset;
            }
            response_code::PULL_RETRY_IMMEDIATELY => offset = header.next_begin_offset,
            response_code::PULL_NOT_FOUND | response_code::PULL_OFFSET_MOVED => return out,
            code => panic!("pull answered {code}: {:?}", response.remark),
        }
    }
}

/// Pulls `topic`/`queue_id` (all of it) until `want` messages are there or
/// `timeout` passed; returns what is there.
pub fn wait_for_messages(
    client: &mut RemotingConn,
    group: &str,
    topic: &str,
    queue_id: i32,
    want: usize,
    timeout: Duration,
) -> Vec<Got> {
    let deadline = Instant::now() + timeout;
    loop {
        let got = pull_all(client, group, topic, queue_id, "*", "TAG");
        if got.len() >= want || Instant::now() >= deadline {
            return got;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

pub fn request(code: i32, ext: &[(&str, &str)], body: &[u8]) -> RemotingCommand {
    let mut request = RemotingCommand::request(code);
    request.ext_fields = fields(ext);
    request.body = body.to_vec().into();
    request
}

pub fn ok(response: RemotingCommand) -> RemotingCommand {
    assert_eq!(
        response.code,
        response_code::SUCCESS,
        "{:?}",
        response.remark
    );
    response
}

/// UPDATE_AND_CREATE_SUBSCRIPTIONGROUP with a JSON config.
pub fn update_group(client: &mut RemotingConn, json: &str) {
    ok(client.request(request(
        request_code::UPDATE_AND_CREATE_SUBSCRIPTIONGROUP,
        &[],
        json.as_bytes(),
    )));
}

/// GET_ALL_SUBSCRIPTIONGROUP_CONFIG, parsed.
pub fn all_groups(client: &mut RemotingConn) -> serde_json::Value {
    let response = ok(client.request(request(
        request_code::GET_ALL_SUBSCRIPTIONGROUP_CONFIG,
        &[],
        b"",
    )));
    serde_json::from_slice(&response.body).unwrap()
}

/// HEART_BEAT registering `client_id` as a consumer of `group` on `topic`
/// (C++ client style: ordinals).
pub fn heartbeat(
    client: &mut RemotingConn,
    client_id: &str,
    group: &str,
    topic: &str,
    sub: &str,
    kind: &str,
) {
    let body = format!(
        r#"{{"clientID":"{client_id}","consumerDataSet":[{{"consumeFromWhere":0,"consumeType":1,
        "groupName":"{group}","messageModel":1,"subscriptionDataSet":[{{"subString":"{sub}",
        "subVersion":"1","topic":"{topic}","expressionType":"{kind}"}}]}}]}}"#
    );
    ok(client.request(request(request_code::HEART_BEAT, &[], body.as_bytes())));
}
