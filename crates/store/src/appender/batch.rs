//! One batch through the appender: apply its topic resets, number its
//! appends (physical and queue offsets, patched into the records), write
//! them as one job, flush (sync mode: one fdatasync for the batch, the group
//! commit), then answer the shards and send each queue's owner its
//! ConsumeQueue dispatches.

use std::pin::pin;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::BytesMut;
use ferrocket_protocol::record::{self, BLANK_BYTES_MIN, RECORD_BYTES_MIN};
use foldhash::{HashMap, HashSet};
use futures_lite::future;

use super::tasks::Common;
use super::topic_reset;
use super::writer::SegmentWriter;
use crate::config::{FlushMode, StoreConfig};
use crate::error::StoreError;
use crate::messages::{
    read_i32, store_timestamp_of, AppendRequest, AppendResult, AppendStatus, DispatchEntry,
    Envelope, ReplicaChunk, ResetDone, ShardBatch,
};
use crate::queue_floors::QueueFloors;
use crate::types::{QueueKey, QueueOwnerFn};

/// Per shard: `(seq, outcome)` of its appends.
pub(super) type Results = Vec<Vec<(u64, Result<AppendResult, StoreError>)>>;
/// Per shard: the ConsumeQueue entries of the queues it owns.
pub(super) type Dispatches = Vec<Vec<DispatchEntry>>;

pub(super) fn per_shard<T>(shard_count: usize) -> Vec<Vec<T>> {
    (0..shard_count).map(|_| Vec::new()).collect()
}

/// The appender's state between batches.
pub(super) struct Appender {
    pub(super) config: StoreConfig,
    pub(super) owner: QueueOwnerFn,
    pub(super) common: Rc<Common>,
    pub(super) writer: SegmentWriter,
    pub(super) seg_bytes: i64,
    /// Next queue offset per queue.
    pub(super) table: HashMap<QueueKey, i64>,
    /// Deleted topics' restart positions, persisted on every reset.
    floors: QueueFloors,
    /// One `Arc` per topic, owned here: dispatch entries share these rather
    /// than the shards' `Arc`s, so no topic string is freed on a thread
    /// other than the one that allocated it.
    topics: HashSet<Arc<str>>,
    /// Per shard: requests copied into the current batch, returned with
    /// the shard's answer (see [`ShardBatch::spent`]).
    spent: Vec<Vec<AppendRequest>>,
    /// Per shard: topic resets applied for this batch, sent with the
    /// shard's first answer (see [`ShardBatch::resets`]).
    resets: Vec<Vec<ResetDone>>,
    /// Next physical offset.
    pub(super) pos: i64,
}

/// One append of a batch: the shard that sent it and its sequence number.
struct Append {
    shard: usize,
    seq: u64,
    request: AppendRequest,
}

/// One replica chunk of a batch (a slave's; see `replica`): the shard that
/// sent it and its sequence number.
pub(super) struct Replica {
    pub(super) shard: usize,
    pub(super) seq: u64,
    pub(super) chunk: ReplicaChunk,
}

/// What one accepted request will be answered with.
struct Accepted {
    shard: usize,
    seq: u64,
    result: AppendResult,
}

/// The bytes of one write: `[start, start + bytes.len())` of the current
/// segment, ending at the appender's position.
struct Job {
    start: i64,
    bytes: BytesMut,
}

/// A batch's answers, filled while it is numbered and written.
struct Answers {
    results: Results,
    dispatches: Dispatches,
}

impl Answers {
    fn new(shard_count: usize) -> Self {
        Answers {
            results: per_shard(shard_count),
            dispatches: per_shard(shard_count),
        }
    }

    fn fail(&mut self, shard: usize, seq: u64, error: &StoreError) {
        self.results[shard].push((seq, Err(error.clone())));
    }

    fn accept(&mut self, accepted: Vec<Accepted>, status: AppendStatus) {
        for a in accepted {
            let mut result = a.result;
            result.status = status;
            self.results[a.shard].push((a.seq, Ok(result)));
        }
    }
}

/// Patches the queue and physical offsets into each record of `records`
/// (back to back, the first at `physical_offset` with queue offset
/// `first_queue_offset`) and adds its dispatch to `out`. Returns how many
/// records there were.
fn patch_records(
    records: &mut [u8],
    physical_offset: i64,
    first_queue_offset: i64,
    topic: &Arc<str>,
    request: &AppendRequest,
    out: &mut Vec<DispatchEntry>,
) -> usize {
    let mut at = 0;
    let mut index = 0;
    while at < records.len() {
        let record_size = read_i32(records, at) as usize;
        // `AppendRequest::validate` checked the framing on the shard.
        assert!(
            record_size >= RECORD_BYTES_MIN && at + record_size <= records.len(),
            "record {index} of {record_size} bytes at {at} breaks its request's framing"
        );
        let record_bytes = &mut records[at..at + record_size];
        let queue_offset = first_queue_offset + index as i64;
        let record_offset = physical_offset + at as i64;
        record::patch_offsets(record_bytes, queue_offset, record_offset);
        out.push(DispatchEntry {
            topic: Arc::clone(topic),
            queue_id: request.queue_id,
            queue_offset,
            physical_offset: record_offset,
            size: record_size as i32,
            tags_code: request.tags_codes.get(index),
            store_timestamp_ms: store_timestamp_of(record_bytes),
        });
        at += record_size;
        index += 1;
    }
    assert_eq!(
        index,
        request.tags_codes.len(),
        "one tag hash per record, checked on the shard"
    );
    index
}

impl Appender {
    /// Starts at CommitLog position `end` with recovery's queue offsets.
    pub(super) fn new(
        config: StoreConfig,
        owner: QueueOwnerFn,
        common: Rc<Common>,
        writer: SegmentWriter,
        table: HashMap<QueueKey, i64>,
        floors: QueueFloors,
        end: i64,
    ) -> Self {
        let shard_count = common.senders.len();
        let topics = table.keys().map(|(topic, _)| Arc::clone(topic)).collect();
        Appender {
            seg_bytes: config.segment_bytes as i64,
            config,
            owner,
            common,
            writer,
            table,
            floors,
            topics,
            spent: per_shard(shard_count),
            resets: per_shard(shard_count),
            pos: end,
        }
    }

    /// Next physical offset: the end of everything written.
    pub(super) fn position(&self) -> i64 {
        self.pos
    }

    pub(super) fn shard_count(&self) -> usize {
        self.common.senders.len()
    }

    /// The appender's own `Arc` for `topic` (added on first sight).
    pub(super) fn intern(&mut self, topic: &str) -> Arc<str> {
        if let Some(known) = self.topics.get(topic) {
            return Arc::clone(known);
        }
        let own: Arc<str> = Arc::from(topic);
        self.topics.insert(Arc::clone(&own));
        own
    }

    /// Takes one batch from intake to answers.
    pub(super) async fn process(&mut self, batch: Vec<(usize, Envelope)>) {
        let (appends, replicas) = self.apply_resets(batch);
        if !replicas.is_empty() {
            self.replicate(replicas).await;
        }
        let mut answers = Answers::new(self.shard_count());
        if appends.is_empty() {
            // Only resets: answer them, with nothing to write or flush.
            self.answer(answers.results, Vec::new(), None).await;
            return;
        }
        // A slave's CommitLog is the master's copy; nothing else enters it
        // (an append sent before a master turned slave in place is refused).
        let replica = self.common.shared.is_replica().then(|| {
            StoreError::Unavailable(
                "this store turned a slave's copy: it takes only the master's bytes".into(),
            )
        });
        let refusal = replica.or_else(|| self.common.failure()).or_else(|| {
            let disk = &self.common.shared.disk;
            disk.is_full().then(|| disk.refusal())
        });
        if let Some(error) = refusal {
            for append in &appends {
                answers.fail(append.shard, append.seq, &error);
            }
            self.answer(answers.results, Vec::new(), None).await;
            return;
        }
        let Ok(accepted) = self.write_batch(appends, &mut answers).await else {
            self.answer(answers.results, Vec::new(), None).await;
            return;
        };
        let end = self.pos;
        self.common.shared.publish_written(end);
        match self.config.flush_mode {
            FlushMode::Async { .. } => {
                answers.accept(accepted, AppendStatus::Ok);
                self.answer(answers.results, answers.dispatches, Some(end))
                    .await;
            }
            FlushMode::Sync { timeout_ms } => {
                // Replication need not wait for the flush.
                if let Some(shard) = self.config.notify_written_shard {
                    let watermark = self.common.dispatched_upto.get();
                    self.common
                        .send(shard, ShardBatch::watermark_only(watermark))
                        .await;
                }
                self.group_commit(accepted, answers, end, timeout_ms).await;
            }
        }
    }

    /// Applies the batch's topic resets (see `topic_reset`) before any
    /// append of it is numbered, and returns its appends and replica chunks.
    fn apply_resets(&mut self, batch: Vec<(usize, Envelope)>) -> (Vec<Append>, Vec<Replica>) {
        let mut appends = Vec::with_capacity(batch.len());
        let mut replicas = Vec::new();
        let mut reset = false;
        for (shard, envelope) in batch {
            match envelope {
                Envelope::Append { seq, request } => appends.push(Append {
                    shard,
                    seq,
                    request,
                }),
                Envelope::ResetTopic { topic } => {
                    topic_reset::apply(
                        &mut self.table,
                        &mut self.floors,
                        &self.owner,
                        &topic,
                        shard,
                        self.pos,
                    );
                    self.resets[shard].push(ResetDone {
                        topic,
                        position: self.pos,
                    });
                    reset = true;
                }
                Envelope::Replicate { seq, chunk } => replicas.push(Replica { shard, seq, chunk }),
            }
        }
        if reset {
            let commitlog_min = self.common.shared.logical_min();
            topic_reset::persist(&mut self.floors, commitlog_min, &self.config.config_dir());
        }
        (appends, replicas)
    }

    /// Numbers the appends into one job and writes it, rolling segments as
    /// needed. On a failure the appender stops accepting writes, every
    /// append of the batch is answered with the error in `answers`, and
    /// `Err` comes back.
    async fn write_batch(
        &mut self,
        appends: Vec<Append>,
        answers: &mut Answers,
    ) -> Result<Vec<Accepted>, StoreError> {
        assert!(
            self.pos >= self.writer.segment_start(),
            "the appender's position lies in its segment"
        );
        let total: usize = appends.iter().map(|a| a.request.len_bytes()).sum();
        let mut job = Job {
            start: self.pos,
            bytes: BytesMut::with_capacity(total + BLANK_BYTES_MIN),
        };
        let mut accepted = Vec::with_capacity(appends.len());
        let mut appends = appends.into_iter();
        let mut outcome = self
            .fill(&mut appends, &mut job, &mut accepted, answers)
            .await;
        if outcome.is_ok() && !job.bytes.is_empty() {
            assert_eq!(
                job.start + job.bytes.len() as i64,
                self.pos,
                "a job ends at the appender's position"
            );
            outcome = self.writer.write(job.start, job.bytes.freeze()).await;
        }
        let Err(error) = outcome else {
            return Ok(accepted);
        };
        self.common.fail(error.to_string());
        for append in appends {
            answers.fail(append.shard, append.seq, &error);
        }
        for a in accepted {
            answers.fail(a.shard, a.seq, &error);
        }
        Err(error)
    }

    /// Numbers appends into `job` until they run out or a segment roll
    /// fails (the append that needed the roll is answered then). A roll that
    /// finds no room for the next segment changes nothing: the disk is marked
    /// full, this append and the rest are refused with that, and the job
    /// numbered so far (all in the current segment) is still written.
    async fn fill(
        &mut self,
        appends: &mut impl Iterator<Item = Append>,
        job: &mut Job,
        accepted: &mut Vec<Accepted>,
        answers: &mut Answers,
    ) -> Result<(), StoreError> {
        while let Some(append) = appends.next() {
            if !self.fits(append.request.len_bytes()) {
                match self.roll(job).await {
                    Ok(()) => {}
                    Err(e) if e.is_disk_full() => {
                        self.common.shared.disk.mark_full(&e.to_string());
                        let refusal = self.common.shared.disk.refusal();
                        answers.fail(append.shard, append.seq, &refusal);
                        for append in appends.by_ref() {
                            answers.fail(append.shard, append.seq, &refusal);
                        }
                        return Ok(());
                    }
                    Err(e) => {
                        answers.fail(append.shard, append.seq, &e);
                        return Err(e);
                    }
                }
            }
            accepted.push(self.number(append, job, answers));
        }
        Ok(())
    }

    /// Whether `size` bytes of records fit in the current segment with room
    /// left for the blank record that ends it.
    fn fits(&self, size: usize) -> bool {
        let size = size as i64;
        assert!(
            size + (BLANK_BYTES_MIN as i64) <= self.seg_bytes,
            "oversized append passed validation"
        );
        let in_seg = self.pos - self.writer.segment_start();
        in_seg + size + BLANK_BYTES_MIN as i64 <= self.seg_bytes
    }

    /// Creates the next segment, then ends this one with a blank record,
    /// writes and syncs `job`, and starts the job again at the next segment.
    /// When the next segment cannot be created nothing has changed.
    async fn roll(&mut self, job: &mut Job) -> Result<(), StoreError> {
        let next = self.writer.create_next().await?;
        let in_seg = self.pos - self.writer.segment_start();
        let blank = (self.seg_bytes - in_seg) as usize;
        assert!(blank >= BLANK_BYTES_MIN, "room for the blank filler");
        record::encode_blank(blank, &mut job.bytes);
        self.pos += blank as i64;
        let finished = std::mem::take(&mut job.bytes).freeze();
        self.writer.roll(job.start, finished, next).await?;
        assert_eq!(
            self.pos,
            self.writer.segment_start(),
            "a roll ends where the next segment starts"
        );
        job.start = self.pos;
        Ok(())
    }

    /// Gives `append` its physical and queue offsets: copies its records
    /// into `job`, patches the offsets in, and queues one dispatch per
    /// record for the queue's owner.
    fn number(&mut self, append: Append, job: &mut Job, answers: &mut Answers) -> Accepted {
        let Append {
            shard,
            seq,
            request,
        } = append;
        let topic = self.intern(&request.topic);
        let owner = (self.owner)(&request.topic, request.queue_id);
        assert!(
            owner < self.shard_count(),
            "owner shard {owner} out of range"
        );
        let physical_offset = self.pos;
        let size = request.records.len();
        let segment_end = self.writer.segment_start() + self.seg_bytes;
        assert!(
            physical_offset + (size + BLANK_BYTES_MIN) as i64 <= segment_end,
            "an append must fit in its segment with room for the blank record"
        );
        let next = self
            .table
            .entry((Arc::clone(&topic), request.queue_id))
            .or_insert(0);
        let first_queue_offset = *next;
        let base = job.bytes.len();
        job.bytes.extend_from_slice(&request.records);
        let count = patch_records(
            &mut job.bytes[base..],
            physical_offset,
            first_queue_offset,
            &topic,
            &request,
            &mut answers.dispatches[owner],
        );
        // Dense: the queue's next append starts right after these records.
        *next = first_queue_offset + count as i64;
        self.pos += size as i64;
        self.spent[shard].push(request);
        Accepted {
            shard,
            seq,
            result: AppendResult {
                physical_offset,
                queue_offset: first_queue_offset,
                record_count: count as u32,
                total_bytes: size as u32,
                status: AppendStatus::Ok,
            },
        }
    }

    /// Sync flush: one fdatasync for the batch, answered within the timeout.
    async fn group_commit(
        &mut self,
        accepted: Vec<Accepted>,
        mut answers: Answers,
        end: i64,
        timeout_ms: u64,
    ) {
        let file = Rc::clone(&self.writer.current().file);
        let started = Instant::now();
        let mut sync = pin!(file.sync_data());
        let first = future::or(async { Some((&mut sync).await) }, async {
            glommio::timer::sleep(Duration::from_millis(timeout_ms)).await;
            None
        })
        .await;
        let Some(outcome) = first else {
            // Too slow: answer now, as RocketMQ does, and keep waiting for
            // the flush before dispatching or taking the next batch.
            answers.accept(accepted, AppendStatus::FlushDiskTimeout);
            self.answer(answers.results, Vec::new(), None).await;
            let outcome = sync.await;
            tracing::warn!(
                elapsed_ms = started.elapsed().as_millis() as u64,
                "sync flush exceeded its timeout"
            );
            match outcome {
                Ok(()) => {
                    self.common.shared.publish_durable(end);
                    let results = per_shard(self.shard_count());
                    self.answer(results, answers.dispatches, Some(end)).await;
                }
                Err(e) => self.common.fail(format!("fdatasync: {e}")),
            }
            return;
        };
        match outcome {
            Ok(()) => {
                self.common.shared.publish_durable(end);
                answers.accept(accepted, AppendStatus::Ok);
                self.answer(answers.results, answers.dispatches, Some(end))
                    .await;
            }
            Err(e) => {
                let reason = format!("fdatasync: {e}");
                self.common.fail(reason.clone());
                let error = StoreError::FlushFailed(reason);
                for a in accepted {
                    answers.fail(a.shard, a.seq, &error);
                }
                self.answer(answers.results, Vec::new(), None).await;
            }
        }
    }

    /// Sends each shard its results, dispatches, spent requests and reset
    /// answers. `dispatched` is the batch end when `dispatches` are this
    /// batch's.
    pub(super) async fn answer(
        &mut self,
        results: Results,
        dispatches: Dispatches,
        dispatched: Option<i64>,
    ) {
        let watermark = dispatched.unwrap_or(self.common.dispatched_upto.get());
        assert!(
            watermark <= self.common.shared.written(),
            "no dispatch beyond the written end"
        );
        let mut dispatches = dispatches.into_iter();
        for (shard, results) in results.into_iter().enumerate() {
            let batch = ShardBatch {
                results,
                dispatches: dispatches.next().unwrap_or_default(),
                watermark,
                spent: std::mem::take(&mut self.spent[shard]),
                resets: std::mem::take(&mut self.resets[shard]),
                replica: self.common.shared.is_replica(),
            };
            let told_of_writes =
                dispatched.is_some() && self.config.notify_written_shard == Some(shard);
            if batch.results.is_empty()
                && batch.dispatches.is_empty()
                && batch.spent.is_empty()
                && batch.resets.is_empty()
                && !told_of_writes
            {
                continue;
            }
            self.common.send(shard, batch).await;
        }
        if let Some(end) = dispatched {
            assert!(
                end >= self.common.dispatched_upto.get(),
                "dispatches only move forward"
            );
            self.common.dispatched_upto.set(end);
        }
    }
}
