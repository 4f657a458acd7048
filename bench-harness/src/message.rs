//! Message bodies and send/pull requests.
//!
//! Every body starts with a 16-byte stamp: magic, run id, and the intended
//! send time in nanoseconds since this process's anchor instant. The e2e
//! consumer (same process, same anchor) reads it back to compute the
//! send-to-receive latency and to skip messages of other runs. The rest of
//! the body is a fixed filler pattern.

use std::sync::OnceLock;
use std::time::Instant;

use bytes::BytesMut;
use clap::ValueEnum;
use ferrocket_protocol::batch::encode_batch_item;
use ferrocket_protocol::codes::request_code;
use ferrocket_protocol::header::{
    pull_sys_flag, PullMessageRequestHeader, QueueRequestHeader, SendMessageRequestHeader,
};
use ferrocket_protocol::properties::{Properties, WAIT};
use ferrocket_protocol::{ExtFields, ProtocolError, RemotingCommand};
use serde::Serialize;

/// How messages are sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SendMode {
    /// SEND_MESSAGE, waiting for each acknowledgement.
    Sync,
    /// SEND_MESSAGE marked oneway: no acknowledgement; latency is the time
    /// to queue the frame, not a broker round trip.
    Oneway,
    /// SEND_BATCH_MESSAGE with --batch messages per request.
    Batch,
}

/// Marks a body written by this harness ("FRBC").
pub const STAMP_MAGIC: u32 = 0x4652_4243;
/// Bytes of the stamp at the start of each body.
pub const STAMP_BYTES: usize = 16;
/// The template topic auto-created topics come from.
pub const DEFAULT_TOPIC: &str = "TBW102";

/// The instant all stamps count from.
pub fn anchor() -> Instant {
    static ANCHOR: OnceLock<Instant> = OnceLock::new();
    *ANCHOR.get_or_init(Instant::now)
}

/// Nanoseconds from the anchor to `at` (0 for instants before it).
pub fn ns_since_anchor(at: Instant) -> u64 {
    at.saturating_duration_since(anchor()).as_nanos() as u64
}

/// What a stamped body says about its message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    pub run_id: u32,
    pub sent_ns: u64,
}

/// Writes `stamp` over the first [`STAMP_BYTES`] of `body` (shorter
/// bodies get a truncated stamp that [`read_stamp`] will not accept).
pub fn write_stamp(body: &mut [u8], stamp: Stamp) {
    let mut bytes = [0u8; STAMP_BYTES];
    bytes[0..4].copy_from_slice(&STAMP_MAGIC.to_be_bytes());
    bytes[4..8].copy_from_slice(&stamp.run_id.to_be_bytes());
    bytes[8..16].copy_from_slice(&stamp.sent_ns.to_be_bytes());
    let len = body.len().min(STAMP_BYTES);
    body[..len].copy_from_slice(&bytes[..len]);
}

/// The stamp of a body this harness wrote, if it is one.
pub fn read_stamp(body: &[u8]) -> Option<Stamp> {
    if body.len() < STAMP_BYTES {
        return None;
    }
    let word = |at: usize| u32::from_be_bytes([body[at], body[at + 1], body[at + 2], body[at + 3]]);
    if word(0) != STAMP_MAGIC {
        return None;
    }
    let mut sent = [0u8; 8];
    sent.copy_from_slice(&body[8..16]);
    Some(Stamp {
        run_id: word(4),
        sent_ns: u64::from_be_bytes(sent),
    })
}

/// A body of `size` bytes: the stamp, then a repeating filler.
pub fn filler_body(size: usize) -> Vec<u8> {
    (0..size).map(|i| b'a' + (i % 26) as u8).collect()
}

/// Builds the send requests of one run.
#[derive(Debug, Clone)]
pub struct SendFactory {
    mode: SendMode,
    per_request: usize,
    run_id: u32,
    template: Vec<u8>,
    properties: String,
    /// Header fields per queue id, cloned for each request.
    headers: Vec<ExtFields>,
}

impl SendFactory {
    pub fn new(
        topic: &str,
        producer_group: &str,
        queue_count: i32,
        mode: SendMode,
        per_request: usize,
        size: usize,
        run_id: u32,
    ) -> Self {
        assert!(per_request >= 1, "a request carries at least one message");
        let mut properties = Properties::new();
        properties.insert(WAIT, "true");
        let properties = properties.to_encoded_string();
        let headers = (0..queue_count.max(1))
            .map(|queue_id| {
                SendMessageRequestHeader {
                    producer_group: producer_group.to_string(),
                    topic: topic.to_string(),
                    default_topic: Some(DEFAULT_TOPIC.to_string()),
                    default_topic_queue_nums: Some(queue_count),
                    queue_id: Some(queue_id),
                    sys_flag: Some(0),
                    born_timestamp: Some(0),
                    flag: Some(0),
                    properties: Some(properties.clone()),
                    reconsume_times: Some(0),
                    unit_mode: false,
                    max_reconsume_times: None,
                    batch: mode == SendMode::Batch,
                    broker_name: None,
                }
                .to_ext()
            })
            .collect();
        Self {
            mode,
            per_request,
            run_id,
            template: filler_body(size),
            properties,
            headers,
        }
    }

    /// Messages each request carries.
    pub fn per_request(&self) -> usize {
        self.per_request
    }

    /// Body bytes each request carries (the throughput's MB).
    pub fn body_bytes_per_request(&self) -> u64 {
        (self.template.len() * self.per_request) as u64
    }

    fn stamped_body(&self, out: &mut BytesMut, intended: Instant) {
        let start = out.len();
        out.extend_from_slice(&self.template);
        write_stamp(
            &mut out[start..],
            Stamp {
                run_id: self.run_id,
                sent_ns: ns_since_anchor(intended),
            },
        );
    }

    /// The request for `queue_id`, stamped with its intended send time.
    pub fn build(
        &self,
        queue_id: i32,
        intended: Instant,
    ) -> Result<RemotingCommand, ProtocolError> {
        let index = usize::try_from(queue_id).unwrap_or(0) % self.headers.len();
        let mut ext = self.headers[index].clone();
        let born_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        ext.insert("bornTimestamp", born_ms.to_string());
        let (code, body) = match self.mode {
            SendMode::Sync | SendMode::Oneway => {
                let mut body = BytesMut::with_capacity(self.template.len());
                self.stamped_body(&mut body, intended);
                (request_code::SEND_MESSAGE, body.freeze())
            }
            SendMode::Batch => {
                let item_len = ferrocket_protocol::batch::BATCH_ITEM_OVERHEAD_BYTES
                    + self.template.len()
                    + self.properties.len();
                let mut out = BytesMut::with_capacity(item_len * self.per_request);
                let mut body = BytesMut::with_capacity(self.template.len());
                for _ in 0..self.per_request {
                    body.clear();
                    self.stamped_body(&mut body, intended);
                    encode_batch_item(0, &body, self.properties.as_bytes(), &mut out)?;
                }
                (request_code::SEND_BATCH_MESSAGE, out.freeze())
            }
        };
        let mut request = RemotingCommand::request(code);
        request.ext_fields = ext;
        request.body = body;
        Ok(request)
    }
}

/// PULL_MESSAGE for `queue_id` from `offset`, with the subscription in the
/// request (so no heartbeat is needed) and long polling when `suspend_ms`
/// is non-zero.
pub fn pull_request(
    group: &str,
    topic: &str,
    queue_id: i32,
    offset: i64,
    max_msgs: i32,
    suspend_ms: u64,
) -> RemotingCommand {
    let mut sys_flag = pull_sys_flag::SUBSCRIPTION;
    if suspend_ms > 0 {
        sys_flag |= pull_sys_flag::SUSPEND;
    }
    let header = PullMessageRequestHeader {
        consumer_group: group.to_string(),
        topic: topic.to_string(),
        queue_id,
        queue_offset: offset,
        max_msg_nums: max_msgs,
        sys_flag,
        commit_offset: 0,
        suspend_timeout_millis: Some(suspend_ms as i64),
        subscription: Some("*".to_string()),
        sub_version: Some(0),
        expression_type: Some("TAG".to_string()),
        max_msg_bytes: None,
    };
    let mut request = RemotingCommand::request(request_code::PULL_MESSAGE);
    request.ext_fields = header.to_ext();
    request
}

/// GET_MAX_OFFSET for one queue.
pub fn max_offset_request(topic: &str, queue_id: i32) -> RemotingCommand {
    let header = QueueRequestHeader {
        topic: topic.to_string(),
        queue_id,
    };
    let mut request = RemotingCommand::request(request_code::GET_MAX_OFFSET);
    request.ext_fields = header.to_ext();
    request
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferrocket_protocol::batch::decode_batch;

    #[test]
    fn stamps_round_trip_and_foreign_bodies_are_ignored() {
        let mut body = filler_body(64);
        assert_eq!(read_stamp(&body), None);
        let stamp = Stamp {
            run_id: 7,
            sent_ns: 123_456_789_012,
        };
        write_stamp(&mut body, stamp);
        assert_eq!(read_stamp(&body), Some(stamp));
        assert_eq!(
            &body[STAMP_BYTES..STAMP_BYTES + 4],
            &filler_body(64)[16..20]
        );
        // Too short to hold a stamp: written truncated, never read back.
        let mut short = vec![0u8; 10];
        write_stamp(&mut short, stamp);
        assert_eq!(read_stamp(&short), None);
    }

    #[test]
    fn single_send_carries_header_and_stamped_body() {
        let factory = SendFactory::new("T", "G", 4, SendMode::Sync, 1, 100, 9);
        let intended = anchor() + std::time::Duration::from_millis(5);
        let request = factory.build(2, intended).unwrap();
        assert_eq!(request.code, request_code::SEND_MESSAGE);
        let header = SendMessageRequestHeader::from_ext(&request.ext_fields).unwrap();
        assert_eq!(header.topic, "T");
        assert_eq!(header.producer_group, "G");
        assert_eq!(header.queue_id, Some(2));
        assert!(!header.batch);
        assert!(header.born_timestamp.unwrap() > 0);
        assert_eq!(request.body.len(), 100);
        let stamp = read_stamp(&request.body).unwrap();
        assert_eq!(stamp.run_id, 9);
        assert_eq!(stamp.sent_ns, 5_000_000);
        assert_eq!(factory.body_bytes_per_request(), 100);
    }

    #[test]
    fn batch_send_holds_every_message_stamped() {
        let factory = SendFactory::new("T", "G", 4, SendMode::Batch, 5, 32, 1);
        let request = factory.build(1, anchor()).unwrap();
        assert_eq!(request.code, request_code::SEND_BATCH_MESSAGE);
        assert!(
            SendMessageRequestHeader::from_ext(&request.ext_fields)
                .unwrap()
                .batch
        );
        let items = decode_batch(&request.body).unwrap();
        assert_eq!(items.len(), 5);
        for item in &items {
            assert_eq!(item.body.len(), 32);
            assert_eq!(read_stamp(&item.body).unwrap().run_id, 1);
            assert_eq!(Properties::decode(&item.properties).get(WAIT), Some("true"));
        }
        assert_eq!(factory.body_bytes_per_request(), 160);
    }

    #[test]
    fn pull_request_asks_for_long_polling() {
        let request = pull_request("G", "T", 3, 42, 32, 1_000);
        let header = PullMessageRequestHeader::from_ext(&request.ext_fields).unwrap();
        assert_eq!(header.queue_offset, 42);
        assert_eq!(header.queue_id, 3);
        assert_eq!(
            header.sys_flag,
            pull_sys_flag::SUBSCRIPTION | pull_sys_flag::SUSPEND
        );
        assert_eq!(header.subscription.as_deref(), Some("*"));
        let no_wait = pull_request("G", "T", 3, 42, 32, 0);
        let header = PullMessageRequestHeader::from_ext(&no_wait.ext_fields).unwrap();
        assert_eq!(header.sys_flag & pull_sys_flag::SUSPEND, 0);
    }
}
