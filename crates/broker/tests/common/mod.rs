//! Test harness: a broker started with `run()` on a thread (127.0.0.1, a
//! free port, a temp store), and broker requests ([`BrokerCalls`]) over the
//! workspace's shared blocking Remoting client (ferrocket-testkit's
//! [`RemotingConn`]).

#![allow(dead_code)]

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use ferrocket_broker::{BrokerConfig, BrokerError};
use ferrocket_protocol::codes::{request_code, response_code};
use ferrocket_protocol::header::{
    pull_sys_flag, OffsetResponseHeader, PullMessageRequestHeader, PullMessageResponseHeader,
    SendMessageRequestHeader, SendMessageResponseHeader,
};
use ferrocket_protocol::properties::Properties;
use ferrocket_protocol::record::records;
use ferrocket_protocol::{ExtFields, RemotingCommand};
pub use ferrocket_testkit::remoting::RemotingConn;

/// How long a test waits for one answer: a held pull may take its whole
/// suspend timeout (up to 20 s in these tests).
pub const ANSWER_TIMEOUT: Duration = Duration::from_secs(30);

/// A running broker.
pub struct Broker {
    pub addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<Result<(), BrokerError>>>,
}

/// A free port on 127.0.0.1 (bound and released; the broker binds it next).
pub fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

/// A test configuration: `shards` unpinned shards on 127.0.0.1.
pub fn config(dir: &Path, shards: usize) -> BrokerConfig {
    BrokerConfig {
        listen_addr: "127.0.0.1".parse().unwrap(),
        listen_port: free_port(),
        store_path_root_dir: dir.to_path_buf(),
        shard_count: shards,
        pin_shards: false,
        mapped_file_size_commit_log: 1 << 20,
        replication: ferrocket_broker::ReplicationConfig {
            ha_listen_port: Some(free_port()),
            ..Default::default()
        },
        ..BrokerConfig::default()
    }
}

impl Broker {
    pub fn start(config: BrokerConfig) -> Broker {
        let addr = SocketAddr::new(config.listen_addr, config.listen_port);
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread =
            std::thread::spawn(move || ferrocket_broker::run(config, Default::default(), flag));
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if TcpStream::connect(addr).is_ok() {
                break;
            }
            assert!(!thread.is_finished(), "broker exited during start");
            assert!(Instant::now() < deadline, "broker did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
        Broker {
            addr,
            stop,
            thread: Some(thread),
        }
    }

    pub fn client(&self) -> RemotingConn {
        connect(self.addr)
    }

    /// Stops the broker and waits for it; panics if it failed.
    pub fn stop(mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(thread) = self.thread.take() {
            thread.join().unwrap().unwrap();
        }
    }
}

impl Drop for Broker {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// A connection to the broker at `addr`, waiting [`ANSWER_TIMEOUT`] for
/// each answer.
pub fn connect(addr: SocketAddr) -> RemotingConn {
    RemotingConn::connect(addr)
        .unwrap()
        .with_answer_timeout(ANSWER_TIMEOUT)
}

/// Broker requests on a connection. (Sending a message is `send_message`:
/// `RemotingConn::send` sends a prepared command.)
pub trait BrokerCalls {
    fn create_topic(&mut self, topic: &str, queues: i32);

    /// SEND_MESSAGE_V2 with the given properties; returns the response.
    fn send_message(
        &mut self,
        topic: &str,
        queue_id: i32,
        body: &[u8],
        props: &Properties,
    ) -> RemotingCommand;

    /// Sends and expects success; returns (queue id, queue offset, msgId).
    fn send_ok(
        &mut self,
        topic: &str,
        queue_id: i32,
        body: &[u8],
        props: &Properties,
    ) -> (i32, i64, String);

    fn pull(&mut self, header: &PullMessageRequestHeader) -> RemotingCommand;

    /// Every message of a queue from `offset` on, with subscription `sub`.
    fn pull_all(&mut self, group: &str, topic: &str, queue_id: i32, sub: &str) -> Vec<Pulled>;

    fn offset_call(&mut self, code: i32, ext: &[(&str, &str)]) -> RemotingCommand;
}

impl BrokerCalls for RemotingConn {
    fn create_topic(&mut self, topic: &str, queues: i32) {
        let mut request = RemotingCommand::request(request_code::UPDATE_AND_CREATE_TOPIC);
        request.ext_fields = fields(&[
            ("topic", topic),
            ("readQueueNums", &queues.to_string()),
            ("writeQueueNums", &queues.to_string()),
            ("perm", "6"),
        ]);
        let response = self.request(request);
        assert_eq!(
            response.code,
            response_code::SUCCESS,
            "{:?}",
            response.remark
        );
    }

    fn send_message(
        &mut self,
        topic: &str,
        queue_id: i32,
        body: &[u8],
        props: &Properties,
    ) -> RemotingCommand {
        let header = SendMessageRequestHeader {
            producer_group: "PG".into(),
            topic: topic.into(),
            default_topic: Some("TBW102".into()),
            default_topic_queue_nums: Some(4),
            queue_id: Some(queue_id),
            sys_flag: Some(0),
            born_timestamp: Some(1_700_000_000_000),
            flag: Some(0),
            properties: Some(props.to_encoded_string()),
            reconsume_times: Some(0),
            ..SendMessageRequestHeader::default()
        };
        let mut request = RemotingCommand::request(request_code::SEND_MESSAGE_V2);
        request.ext_fields = header.to_ext();
        request.body = body.to_vec().into();
        self.request(request)
    }

    fn send_ok(
        &mut self,
        topic: &str,
        queue_id: i32,
        body: &[u8],
        props: &Properties,
    ) -> (i32, i64, String) {
        let response = self.send_message(topic, queue_id, body, props);
        assert_eq!(
            response.code,
            response_code::SUCCESS,
            "{:?}",
            response.remark
        );
        let header = SendMessageResponseHeader::from_ext(&response.ext_fields).unwrap();
        (header.queue_id, header.queue_offset, header.msg_id)
    }

    fn pull(&mut self, header: &PullMessageRequestHeader) -> RemotingCommand {
        let mut request = RemotingCommand::request(request_code::PULL_MESSAGE);
        request.ext_fields = header.to_ext();
        self.request(request)
    }

    fn pull_all(&mut self, group: &str, topic: &str, queue_id: i32, sub: &str) -> Vec<Pulled> {
        let mut out = Vec::new();
        let mut offset = 0;
        loop {
            let response = self.pull(&pull_header(group, topic, queue_id, offset, sub, 0));
            let header = PullMessageResponseHeader::from_ext(&response.ext_fields).unwrap();
            match response.code {
                response_code::SUCCESS => {
                    out.extend(decode_pulled(&response));
                    offset = header.next_begin_offset;
                }
                response_code::PULL_RETRY_IMMEDIATELY => offset = header.next_begin_offset,
                response_code::PULL_NOT_FOUND => return out,
                code => panic!("pull answered {code}: {:?}", response.remark),
            }
        }
    }

    fn offset_call(&mut self, code: i32, ext: &[(&str, &str)]) -> RemotingCommand {
        let mut request = RemotingCommand::request(code);
        request.ext_fields = fields(ext);
        self.request(request)
    }
}

/// The offset in an offset response.
pub fn offset_of(response: &RemotingCommand) -> i64 {
    assert_eq!(
        response.code,
        response_code::SUCCESS,
        "{:?}",
        response.remark
    );
    OffsetResponseHeader::from_ext(&response.ext_fields)
        .unwrap()
        .offset
}

pub fn fields(pairs: &[(&str, &str)]) -> ExtFields {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

pub fn pull_header(
    group: &str,
    topic: &str,
    queue_id: i32,
    offset: i64,
    sub: &str,
    extra_flags: i32,
) -> PullMessageRequestHeader {
    PullMessageRequestHeader {
        consumer_group: group.into(),
        topic: topic.into(),
        queue_id,
        queue_offset: offset,
        max_msg_nums: 32,
        sys_flag: pull_sys_flag::SUBSCRIPTION | extra_flags,
        commit_offset: 0,
        suspend_timeout_millis: Some(1000),
        subscription: Some(sub.into()),
        sub_version: Some(0),
        expression_type: Some("TAG".into()),
        max_msg_bytes: None,
    }
}

/// One pulled message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pulled {
    pub queue_id: i32,
    pub queue_offset: i64,
    pub body: Vec<u8>,
    pub properties: Vec<(String, String)>,
    pub topic: String,
}

pub fn decode_pulled(response: &RemotingCommand) -> Vec<Pulled> {
    records(&response.body, true)
        .map(|record| {
            let record = record.unwrap();
            assert!(record.body_crc_matches());
            Pulled {
                queue_id: record.queue_id,
                queue_offset: record.queue_offset,
                body: record.body.to_vec(),
                properties: record
                    .properties()
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
                topic: record.topic.to_string(),
            }
        })
        .collect()
}

pub fn props(pairs: &[(&str, &str)]) -> Properties {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}
