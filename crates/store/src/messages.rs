//! What travels between shards and the appender: append requests, their
//! results, and ConsumeQueue dispatches.

use std::sync::Arc;

use bytes::BytesMut;
use ferrocket_protocol::codes::response_code;
use ferrocket_protocol::record::{self, RecordPeek};

use crate::error::StoreError;

/// One or more encoded records for one queue, appended atomically (all land
/// in the same segment, with consecutive queue offsets).
#[derive(Debug)]
pub struct AppendRequest {
    pub(crate) topic: Arc<str>,
    pub(crate) queue_id: i32,
    /// Records back to back, encoded by `NewRecord::encode` with placeholder
    /// offsets (the appender patches the real ones in).
    pub(crate) records: BytesMut,
    /// Tag hash per record, for the ConsumeQueue entries.
    pub(crate) tags_codes: TagsCodes,
}

#[derive(Debug)]
pub(crate) enum TagsCodes {
    One(i64),
    Many(Vec<i64>),
}

impl TagsCodes {
    pub(crate) fn get(&self, index: usize) -> i64 {
        match self {
            TagsCodes::One(code) => *code,
            TagsCodes::Many(codes) => codes.get(index).copied().unwrap_or(0),
        }
    }

    pub(crate) fn len(&self) -> usize {
        match self {
            TagsCodes::One(_) => 1,
            TagsCodes::Many(codes) => codes.len(),
        }
    }
}

impl AppendRequest {
    /// One record; `tags_code` is `properties::tags_code(TAGS)` or 0.
    pub fn new(topic: Arc<str>, queue_id: i32, record: BytesMut, tags_code: i64) -> Self {
        Self {
            topic,
            queue_id,
            records: record,
            tags_codes: TagsCodes::One(tags_code),
        }
    }

    /// Several records back to back (a batch send), one tag hash each.
    pub fn batch(topic: Arc<str>, queue_id: i32, records: BytesMut, tags_codes: Vec<i64>) -> Self {
        Self {
            topic,
            queue_id,
            records,
            tags_codes: TagsCodes::Many(tags_codes),
        }
    }

    pub fn topic(&self) -> &str {
        &self.topic
    }

    pub fn queue_id(&self) -> i32 {
        self.queue_id
    }

    pub fn len_bytes(&self) -> usize {
        self.records.len()
    }

    /// The encoded records, back to back.
    pub fn into_records(self) -> BytesMut {
        self.records
    }

    /// Checks the framing before the request leaves the shard, so the
    /// appender never sees a malformed record: every record's TOTALSIZE and
    /// magic, sizes adding up, one tag hash per record, the queue id field.
    pub(crate) fn validate(&self, max_bytes: usize) -> Result<usize, StoreError> {
        crate::names::check_queue_name(&self.topic, self.queue_id)?;
        if self.records.len() > max_bytes {
            return Err(StoreError::TooLarge {
                size_bytes: self.records.len(),
                max_bytes,
            });
        }
        let mut pos = 0;
        let mut count = 0;
        while pos < self.records.len() {
            let rest = &self.records[pos..];
            let size = match record::peek_record(rest) {
                Ok(RecordPeek::Message { total_size, .. }) => total_size,
                Ok(other) => {
                    return Err(StoreError::InvalidRecord(format!(
                        "record {count} is not a message: {other:?}"
                    )))
                }
                Err(e) => return Err(StoreError::InvalidRecord(e.to_string())),
            };
            if size > rest.len() {
                return Err(StoreError::InvalidRecord(format!(
                    "record {count} claims {size} bytes, {} remain",
                    rest.len()
                )));
            }
            let queue_id = read_i32(rest, record::QUEUE_ID_POS);
            if queue_id != self.queue_id {
                return Err(StoreError::InvalidRecord(format!(
                    "record {count} has queue id {queue_id}, request says {}",
                    self.queue_id
                )));
            }
            pos += size;
            count += 1;
        }
        if count == 0 {
            return Err(StoreError::InvalidRecord("no records".into()));
        }
        if count != self.tags_codes.len() {
            return Err(StoreError::InvalidRecord(format!(
                "{count} records but {} tag hashes",
                self.tags_codes.len()
            )));
        }
        Ok(count)
    }
}

pub(crate) fn read_i32(buf: &[u8], pos: usize) -> i32 {
    let mut bytes = [0u8; 4];
    bytes.copy_from_slice(&buf[pos..pos + 4]);
    i32::from_be_bytes(bytes)
}

pub(crate) fn read_i64(buf: &[u8], pos: usize) -> i64 {
    let mut bytes = [0u8; 8];
    bytes.copy_from_slice(&buf[pos..pos + 8]);
    i64::from_be_bytes(bytes)
}

/// STORETIMESTAMP of an encoded record (its position depends on the born
/// host's IP version).
pub(crate) fn store_timestamp_of(record_bytes: &[u8]) -> i64 {
    let sys_flag = read_i32(record_bytes, record::SYS_FLAG_POS);
    let born_host = if sys_flag & record::sys_flag::BORN_HOST_V6 != 0 {
        20
    } else {
        8
    };
    read_i64(record_bytes, record::BORN_HOST_POS + born_host)
}

/// Outcome of a stored append (`PutMessageStatus`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AppendStatus {
    /// Stored (and flushed, in sync flush mode).
    Ok,
    /// Stored, but the sync flush took longer than its timeout
    /// (`FLUSH_DISK_TIMEOUT`); the message is in the log.
    FlushDiskTimeout,
    /// Stored here, but not on enough slaves within `slaveTimeout`
    /// (`FLUSH_SLAVE_TIMEOUT`; set by a SYNC_MASTER broker, not the store).
    FlushSlaveTimeout,
    /// Stored here, but no slave is in sync (`SLAVE_NOT_AVAILABLE`; set by
    /// a SYNC_MASTER broker).
    SlaveNotAvailable,
}

impl AppendStatus {
    /// Response code for a send answered with this status.
    pub fn response_code(self) -> i32 {
        match self {
            AppendStatus::Ok => response_code::SUCCESS,
            AppendStatus::FlushDiskTimeout => response_code::FLUSH_DISK_TIMEOUT,
            AppendStatus::FlushSlaveTimeout => response_code::FLUSH_SLAVE_TIMEOUT,
            AppendStatus::SlaveNotAvailable => response_code::SLAVE_NOT_AVAILABLE,
        }
    }
}

/// Where an append landed. For a batch, the offsets are the first record's;
/// the others follow with consecutive queue offsets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AppendResult {
    pub physical_offset: i64,
    pub queue_offset: i64,
    pub record_count: u32,
    /// Bytes of all the records.
    pub total_bytes: u32,
    pub status: AppendStatus,
}

/// One ConsumeQueue entry to add, sent by the appender to the queue's owner
/// shard (RocketMQ's `DispatchRequest`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DispatchEntry {
    pub topic: Arc<str>,
    pub queue_id: i32,
    pub queue_offset: i64,
    pub physical_offset: i64,
    pub size: i32,
    pub tags_code: i64,
    pub store_timestamp_ms: i64,
}

/// Shard -> appender, over the shard's request ring (in the order the
/// shard made them).
pub(crate) enum Envelope {
    /// An append, answered under `seq` in a [`ShardBatch`].
    Append { seq: u64, request: AppendRequest },
    /// The sending shard deleted its ConsumeQueues of `topic`: the queues of
    /// `topic` it owns restart at queue offset 0 (see `appender::topic_reset`),
    /// answered by a [`ResetDone`].
    ResetTopic { topic: Arc<str> },
    /// A slave's copy of the master's CommitLog bytes, appended at exactly
    /// the master's offsets (see `appender::replica`), answered under `seq`.
    Replicate { seq: u64, chunk: ReplicaChunk },
}

impl Envelope {
    /// Bytes the envelope takes in the appender's staging queue and batch.
    pub(crate) fn len_bytes(&self) -> usize {
        match self {
            Envelope::Append { request, .. } => request.len_bytes(),
            Envelope::ResetTopic { .. } => 0,
            Envelope::Replicate { chunk, .. } => chunk.bytes.len(),
        }
    }
}

/// Whole CommitLog records copied from a master (HA), for a slave to
/// append at `start`, the master's offset of the first byte: message
/// records, and at most one blank record, last, that ends a segment.
#[derive(Debug)]
pub struct ReplicaChunk {
    pub(crate) start: i64,
    pub(crate) bytes: BytesMut,
}

impl ReplicaChunk {
    /// Checks the framing before the chunk leaves the shard: every record
    /// a message or the final blank, sizes adding up, the blank ending at a
    /// segment boundary of `segment_bytes`, the chunk within one segment.
    /// Returns the number of message records.
    pub fn new(
        start: i64,
        bytes: BytesMut,
        segment_bytes: u64,
    ) -> Result<(Self, usize), StoreError> {
        let chunk = ReplicaChunk { start, bytes };
        let count = chunk.validate(segment_bytes as i64)?;
        Ok((chunk, count))
    }

    pub fn start(&self) -> i64 {
        self.start
    }

    /// The position after the chunk.
    pub fn end(&self) -> i64 {
        self.start + self.bytes.len() as i64
    }

    fn validate(&self, segment_bytes: i64) -> Result<usize, StoreError> {
        let bad = |reason: String| Err(StoreError::InvalidRecord(reason));
        if self.start < 0 || self.bytes.is_empty() {
            return bad(format!("empty replica chunk at {}", self.start));
        }
        let segment_end = self.start - self.start.rem_euclid(segment_bytes) + segment_bytes;
        if self.end() > segment_end {
            return bad(format!(
                "replica chunk [{}, {}) crosses the segment end {segment_end}: \
                 is mappedFileSizeCommitLog the master's?",
                self.start,
                self.end()
            ));
        }
        let mut pos = 0;
        let mut count = 0;
        while pos < self.bytes.len() {
            let rest = &self.bytes[pos..];
            let (size, blank) = match record::peek_record(rest) {
                Ok(RecordPeek::Message { total_size, .. }) => (total_size, false),
                Ok(RecordPeek::Blank { total_size }) => (total_size, true),
                Ok(RecordPeek::Unwritten) => return bad(format!("unwritten bytes at {pos}")),
                Err(e) => return bad(format!("at chunk byte {pos}: {e}")),
            };
            if size > rest.len() {
                return bad(format!(
                    "record at chunk byte {pos} claims {size} bytes, {} remain",
                    rest.len()
                ));
            }
            pos += size;
            if blank {
                if pos != self.bytes.len() || self.end() != segment_end {
                    return bad(format!(
                        "blank record at chunk byte {} does not end the segment at {segment_end}: \
                         is mappedFileSizeCommitLog the master's?",
                        pos - size
                    ));
                }
            } else {
                count += 1;
            }
        }
        Ok(count)
    }
}

/// Appender -> shard: the queues of `topic` the shard owns count from 0 for
/// records at CommitLog `position` and after; dispatches of the topic below
/// it carry offsets of the deleted queues. It travels in the [`ShardBatch`]
/// that also carries (or precedes) the first dispatches numbered after it.
#[derive(Debug)]
pub(crate) struct ResetDone {
    /// The `Arc` the shard sent, handed back to be freed on its thread.
    pub(crate) topic: Arc<str>,
    pub(crate) position: i64,
}

/// Appender -> shard, once per batch that concerns the shard (and on every
/// checkpoint tick): results for the shard's requests and dispatches for the
/// queues it owns. `watermark`: every dispatch for CommitLog positions below
/// it has been sent to this shard.
pub(crate) struct ShardBatch {
    pub(crate) results: Vec<(u64, Result<AppendResult, StoreError>)>,
    pub(crate) dispatches: Vec<DispatchEntry>,
    pub(crate) watermark: i64,
    /// The shard's own requests, already copied into the CommitLog, handed
    /// back so their buffers are freed on the thread that allocated them
    /// (a cross-thread free in glibc malloc takes the owning arena's lock,
    /// and at a message per free that lock contention costs a futex
    /// round trip per message).
    pub(crate) spent: Vec<AppendRequest>,
    /// Topic resets the shard asked for, applied before any dispatch of
    /// this batch was numbered.
    pub(crate) resets: Vec<ResetDone>,
    /// The dispatches are a slave's copies of the master's: a queue may
    /// start at any offset, or restart at 0 (the master deleted the topic).
    pub(crate) replica: bool,
}

impl ShardBatch {
    /// Only a watermark: how far dispatches went, for an idle shard.
    pub(crate) fn watermark_only(watermark: i64) -> Self {
        ShardBatch {
            results: Vec::new(),
            dispatches: Vec::new(),
            watermark,
            spent: Vec::new(),
            resets: Vec::new(),
            replica: false,
        }
    }
}
