//! A tiny blocking Remoting client over `std::net`, independent of
//! `ferrocket-client`, so tests can speak to a server (and send it bad
//! bytes) without the code under test on both ends.

use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::time::{Duration, Instant};

use bytes::BytesMut;
use ferrocket_protocol::body::{
    encode_json, DataVersion, RegisterBrokerBody, TopicConfig, TopicConfigSerializeWrapper,
};
use ferrocket_protocol::codes::request_code;
use ferrocket_protocol::header::RegisterBrokerRequestHeader;
use ferrocket_protocol::{FrameDecoder, RemotingCommand, SerializeType};

/// How long a test waits for one answer.
pub const ANSWER_TIMEOUT_MS: u64 = 10_000;
const READ_CHUNK_BYTES: usize = 64 * 1024;

/// What came back after sending something.
#[derive(Debug)]
pub enum Outcome {
    Response(RemotingCommand),
    /// The server closed (or reset) the connection.
    Closed,
    /// Bytes that do not decode as a frame.
    Undecodable(String),
    TimedOut,
}

pub struct RemotingConn {
    stream: TcpStream,
    buf: BytesMut,
    decoder: FrameDecoder,
    next_opaque: i32,
}

impl RemotingConn {
    pub fn connect(addr: &str) -> std::io::Result<Self> {
        let stream = TcpStream::connect(addr)?;
        stream.set_nodelay(true)?;
        Ok(Self {
            stream,
            buf: BytesMut::with_capacity(READ_CHUNK_BYTES),
            decoder: FrameDecoder::default(),
            next_opaque: 1,
        })
    }

    /// Writes raw bytes as they are.
    pub fn send_raw(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.stream.write_all(bytes)?;
        self.stream.flush()
    }

    /// Closes our sending half (the server sees end of stream).
    pub fn shutdown_write(&mut self) {
        let _ = self.stream.shutdown(Shutdown::Write);
    }

    /// Gives `command` a fresh opaque and sends it; returns the opaque.
    pub fn send(&mut self, command: &mut RemotingCommand) -> std::io::Result<i32> {
        command.opaque = self.next_opaque;
        self.next_opaque += 1;
        self.send_raw(&command.to_bytes())?;
        Ok(command.opaque)
    }

    /// Sends `command` and waits for the response with its opaque.
    /// Panics on anything else (closed connection, timeout, bad bytes).
    pub fn request(&mut self, mut command: RemotingCommand) -> RemotingCommand {
        let code = command.code;
        let opaque = self.send(&mut command).unwrap();
        let deadline = Instant::now() + Duration::from_millis(ANSWER_TIMEOUT_MS);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.read_outcome(left) {
                // A server-initiated request may carry the same opaque; an
                // answer without the response flag is never taken (and the
                // wait times out).
                Outcome::Response(response)
                    if response.opaque == opaque && response.is_response() =>
                {
                    return response;
                }
                Outcome::Response(_) => continue, // a server-initiated request
                other => panic!("request code {code}: expected a response, got {other:?}"),
            }
        }
    }

    /// Reads until one frame arrives, the connection closes, the bytes turn
    /// out not to be a frame, or `timeout` passes.
    pub fn read_outcome(&mut self, timeout: Duration) -> Outcome {
        let deadline = Instant::now() + timeout;
        let mut chunk = vec![0u8; READ_CHUNK_BYTES];
        loop {
            match self.decoder.next_frame(&mut self.buf) {
                Ok(Some(frame)) => return Outcome::Response(frame),
                Ok(None) => {}
                Err(e) => return Outcome::Undecodable(e.to_string()),
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Outcome::TimedOut;
            }
            self.stream.set_read_timeout(Some(left)).unwrap();
            match self.stream.read(&mut chunk) {
                Ok(0) => return Outcome::Closed,
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                    return Outcome::TimedOut
                }
                Err(e)
                    if matches!(e.kind(), ErrorKind::ConnectionReset | ErrorKind::BrokenPipe) =>
                {
                    return Outcome::Closed
                }
                Err(e) => panic!("reading from the server failed: {e}"),
            }
        }
    }
}

/// GET_ROUTEINFO_BY_TOPIC request.
pub fn route_request(topic: &str) -> RemotingCommand {
    RemotingCommand::request(request_code::GET_ROUTEINFO_BY_TOPIC).with_ext("topic", topic)
}

/// Same, with the ROCKETMQ binary header the C++ client may use.
pub fn route_request_binary(topic: &str) -> RemotingCommand {
    let mut command = route_request(topic);
    command.serialize_type = SerializeType::RocketMq;
    command
}

/// A broker identity to register with a name server (no process behind it).
#[derive(Debug, Clone)]
pub struct FakeBroker {
    pub cluster: String,
    pub name: String,
    pub addr: String,
    pub id: i64,
    /// `(topic, queue count)`.
    pub topics: Vec<(String, i32)>,
}

impl FakeBroker {
    /// The REGISTER_BROKER request a Java broker would send (uncompressed
    /// JSON body, no CRC), with `topics` and the broker's own topics.
    pub fn register_request(&self) -> RemotingCommand {
        let header = RegisterBrokerRequestHeader {
            broker_name: self.name.clone(),
            broker_addr: self.addr.clone(),
            cluster_name: self.cluster.clone(),
            ha_server_addr: Some(String::new()),
            broker_id: self.id,
            heartbeat_timeout_millis: None,
            enable_acting_master: false,
            compressed: false,
            body_crc32: Some(0),
        };
        let mut table = TopicConfigSerializeWrapper {
            data_version: DataVersion {
                state_version: 0,
                timestamp: 1,
                counter: 1,
            },
            ..Default::default()
        };
        // Like a Java broker, it also registers topics named after itself
        // and its cluster (a name server refuses a first registration that
        // carries a single topic).
        let own_topics = [(self.name.clone(), 1), (self.cluster.clone(), 1)];
        for (topic, queues) in self.topics.iter().chain(own_topics.iter()) {
            table
                .topic_config_table
                .insert(topic.clone(), TopicConfig::new(topic, *queues));
        }
        let body = RegisterBrokerBody {
            topic_config_serialize_wrapper: table,
            filter_server_list: Vec::new(),
        };
        let mut command =
            RemotingCommand::request(request_code::REGISTER_BROKER).with_body(encode_json(&body));
        command.ext_fields = header.to_ext();
        command
    }

    /// The UNREGISTER_BROKER request for this broker.
    pub fn unregister_request(&self) -> RemotingCommand {
        RemotingCommand::request(request_code::UNREGISTER_BROKER)
            .with_ext("brokerName", &self.name)
            .with_ext("brokerAddr", &self.addr)
            .with_ext("clusterName", &self.cluster)
            .with_ext("brokerId", self.id)
    }
}
