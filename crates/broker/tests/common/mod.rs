//! Test harness: a broker started with `run()` on a thread (127.0.0.1, a
//! free port, a temp store), and a minimal blocking Remoting client.

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use bytes::BytesMut;
use ferrocket_broker::{BrokerConfig, BrokerError};
use ferrocket_protocol::codes::{request_code, response_code};
use ferrocket_protocol::header::{
    pull_sys_flag, OffsetResponseHeader, PullMessageRequestHeader, PullMessageResponseHeader,
    SendMessageRequestHeader, SendMessageResponseHeader,
};
use ferrocket_protocol::properties::Properties;
use ferrocket_protocol::record::records;
use ferrocket_protocol::{ExtFields, FrameDecoder, RemotingCommand};

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
        ..BrokerConfig::default()
    }
}

impl Broker {
    pub fn start(config: BrokerConfig) -> Broker {
        let addr = SocketAddr::new(config.listen_addr, config.listen_port);
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || ferrocket_broker::run(config, flag));
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

    pub fn client(&self) -> Client {
        Client::connect(self.addr)
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

/// A blocking Remoting client on one connection.
pub struct Client {
    stream: TcpStream,
    buf: BytesMut,
    next_opaque: i32,
    /// Requests the broker sent to this client (oneway notifications).
    pub notices: Vec<RemotingCommand>,
}

impl Client {
    pub fn connect(addr: SocketAddr) -> Client {
        let stream = TcpStream::connect(addr).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        stream.set_nodelay(true).unwrap();
        Client {
            stream,
            buf: BytesMut::new(),
            next_opaque: 1,
            notices: Vec::new(),
        }
    }

    pub fn send_raw(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).unwrap();
    }

    /// Reads the next frame; `None` when the connection closed.
    pub fn read_frame(&mut self) -> Option<RemotingCommand> {
        let decoder = FrameDecoder::default();
        loop {
            if let Some(frame) = decoder.next_frame(&mut self.buf).unwrap() {
                return Some(frame);
            }
            let mut chunk = [0u8; 64 * 1024];
            let n = self.stream.read(&mut chunk).ok()?;
            if n == 0 {
                return None;
            }
            self.buf.extend_from_slice(&chunk[..n]);
        }
    }

    /// Sends `request` and waits for its response.
    pub fn call(&mut self, mut request: RemotingCommand) -> RemotingCommand {
        request.opaque = self.next_opaque;
        self.next_opaque += 1;
        self.send_raw(&request.to_bytes());
        loop {
            let frame = self.read_frame().expect("connection closed");
            if frame.is_response() && frame.opaque == request.opaque {
                return frame;
            }
            if !frame.is_response() {
                self.notices.push(frame);
            }
        }
    }

    pub fn create_topic(&mut self, topic: &str, queues: i32) {
        let mut request = RemotingCommand::request(request_code::UPDATE_AND_CREATE_TOPIC);
        request.ext_fields = fields(&[
            ("topic", topic),
            ("readQueueNums", &queues.to_string()),
            ("writeQueueNums", &queues.to_string()),
            ("perm", "6"),
        ]);
        let response = self.call(request);
        assert_eq!(
            response.code,
            response_code::SUCCESS,
            "{:?}",
            response.remark
        );
    }

    /// SEND_MESSAGE_V2 with the given properties; returns the response.
    pub fn send(
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
        self.call(request)
    }

    /// Sends and expects success; returns (queue id, queue offset, msgId).
    pub fn send_ok(
        &mut self,
        topic: &str,
        queue_id: i32,
        body: &[u8],
        props: &Properties,
    ) -> (i32, i64, String) {
        let response = self.send(topic, queue_id, body, props);
        assert_eq!(
            response.code,
            response_code::SUCCESS,
            "{:?}",
            response.remark
        );
        let header = SendMessageResponseHeader::from_ext(&response.ext_fields).unwrap();
        (header.queue_id, header.queue_offset, header.msg_id)
    }

    pub fn pull(&mut self, header: &PullMessageRequestHeader) -> RemotingCommand {
        let mut request = RemotingCommand::request(request_code::PULL_MESSAGE);
        request.ext_fields = header.to_ext();
        self.call(request)
    }

    /// Every message of a queue from `offset` on, with subscription `sub`.
    pub fn pull_all(&mut self, group: &str, topic: &str, queue_id: i32, sub: &str) -> Vec<Pulled> {
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

    pub fn offset_call(&mut self, code: i32, ext: &[(&str, &str)]) -> RemotingCommand {
        let mut request = RemotingCommand::request(code);
        request.ext_fields = fields(ext);
        self.call(request)
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
