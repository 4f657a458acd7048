//! Helpers for name server tests; the blocking Remoting client is the
//! workspace's shared one (ferrocket-testkit).
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use ferrocket_namesrv::{NamesrvConfig, NamesrvHandle};
use ferrocket_protocol::body::{encode_json, RegisterBrokerBody, TopicConfig};
use ferrocket_protocol::codes::request_code;
use ferrocket_protocol::RemotingCommand;
pub use ferrocket_testkit::remoting::{route_request, RemotingConn};

pub fn start_namesrv() -> NamesrvHandle {
    start_with(NamesrvConfig {
        listen_port: 0,
        ..NamesrvConfig::default()
    })
}

pub fn start_with(config: NamesrvConfig) -> NamesrvHandle {
    ferrocket_namesrv::start(config).unwrap()
}

pub fn register_body(topics: &[(&str, i32, i32)]) -> RegisterBrokerBody {
    let mut body = RegisterBrokerBody::default();
    let table = &mut body.topic_config_serialize_wrapper.topic_config_table;
    for (topic, queues, perm) in topics {
        let mut config = TopicConfig::new(topic, *queues);
        config.perm = *perm;
        table.insert(topic.to_string(), config);
    }
    body.topic_config_serialize_wrapper.data_version.counter = 1;
    body.topic_config_serialize_wrapper.data_version.timestamp = 1_700_000_000_000;
    body
}

pub fn register_request(
    cluster: &str,
    name: &str,
    addr: &str,
    topics: &[(&str, i32, i32)],
) -> RemotingCommand {
    RemotingCommand::request(request_code::REGISTER_BROKER)
        .with_ext("brokerName", name)
        .with_ext("brokerAddr", addr)
        .with_ext("clusterName", cluster)
        .with_ext("haServerAddr", format!("{addr}-ha"))
        .with_ext("brokerId", 0)
        .with_ext("compressed", false)
        .with_ext("bodyCrc32", 0)
        .with_body(encode_json(&register_body(topics)))
}

/// Polls `check` until it holds or 10 s pass.
pub fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !check() {
        assert!(Instant::now() < deadline, "timed out waiting for: {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

pub fn kv_request(code: i32, namespace: &str, key: &str) -> RemotingCommand {
    RemotingCommand::request(code)
        .with_ext("namespace", namespace)
        .with_ext("key", key)
}

pub fn addrs(pairs: &[(i64, &str)]) -> BTreeMap<i64, String> {
    pairs.iter().map(|(id, a)| (*id, a.to_string())).collect()
}
