//! A tiny blocking Remoting client and helpers for name server tests.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use bytes::Bytes;
use ferrocket_namesrv::{NamesrvConfig, NamesrvHandle};
use ferrocket_protocol::body::{encode_json, RegisterBrokerBody, TopicConfig};
use ferrocket_protocol::codes::request_code;
use ferrocket_protocol::RemotingCommand;

pub fn start_namesrv() -> NamesrvHandle {
    start_with(NamesrvConfig {
        listen_port: 0,
        ..NamesrvConfig::default()
    })
}

pub fn start_with(config: NamesrvConfig) -> NamesrvHandle {
    ferrocket_namesrv::start(config).unwrap()
}

pub struct Client {
    stream: TcpStream,
    next_opaque: i32,
}

impl Client {
    pub fn connect(addr: SocketAddr) -> Self {
        let stream = TcpStream::connect(addr).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        Self {
            stream,
            next_opaque: 1,
        }
    }

    pub fn send_raw(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).unwrap();
    }

    /// Sends `request` and returns the response with its opaque.
    pub fn call(&mut self, mut request: RemotingCommand) -> RemotingCommand {
        request.opaque = self.next_opaque;
        self.next_opaque += 1;
        self.send_raw(&request.to_bytes());
        let response = self.recv().expect("connection closed before the response");
        assert!(response.is_response());
        assert_eq!(response.opaque, request.opaque);
        response
    }

    /// The next frame, or `None` when the server closed the connection.
    pub fn recv(&mut self) -> Option<RemotingCommand> {
        let mut prefix = [0u8; 4];
        match self.stream.read_exact(&mut prefix) {
            Ok(()) => {}
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::UnexpectedEof | std::io::ErrorKind::ConnectionReset
                ) =>
            {
                return None
            }
            Err(e) => panic!("read failed: {e}"),
        }
        let total = i32::from_be_bytes(prefix) as usize;
        let mut frame = vec![0u8; 4 + total];
        frame[..4].copy_from_slice(&prefix);
        self.stream.read_exact(&mut frame[4..]).unwrap();
        Some(RemotingCommand::decode(Bytes::from(frame)).unwrap())
    }
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

pub fn route_request(topic: &str) -> RemotingCommand {
    RemotingCommand::request(request_code::GET_ROUTEINFO_BY_TOPIC).with_ext("topic", topic)
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
