//! The single CommitLog appender. Runs on its own glommio executor thread:
//! drains the shard rings (through [`Intake`]), assigns physical and queue
//! offsets (it is the only writer of both), patches them into the records,
//! copies a batch into one buffer and writes it with io_uring; in sync flush
//! mode one fdatasync covers the whole batch (group commit). Then it answers
//! the shards and dispatches ConsumeQueue entries to each queue's owner.
//!
//! A record never spans segments: one that does not fit is preceded by a
//! blank record filling the segment, and goes first in the next one. Before
//! the appender switches segments it fdatasyncs the old one, so only the
//! current segment can hold unflushed data.
//!
//! After any write or flush failure the appender refuses further appends
//! (answering `Unavailable`): what reached the disk is unknown, and a restart
//! runs recovery, which finds the valid end again.

use std::cell::{Cell, RefCell};
use std::collections::{HashMap, HashSet};
use std::pin::pin;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use ferrocket_protocol::record::{self, BLANK_BYTES_MIN};
use futures_lite::future;
use glommio::channels::shared_channel::{SharedReceiver, SharedSender};

use crate::checkpoint_writer::CheckpointWriter;
use crate::commitlog::{CommitLogShared, SegmentMap};
use crate::config::{FlushMode, StoreConfig, WriteMode};
use crate::error::{IoContext, IoFailure, StoreError};
use crate::files::offset_file_name;
use crate::io::{IoBuffer, SegmentFile, StorageIo};
use crate::messages::{
    read_i32, store_timestamp_of, AppendRequest, AppendResult, AppendStatus, DispatchEntry,
    Envelope, ResetDone, ShardBatch,
};
use crate::stop::Stop;
use crate::types::{QueueKey, QueueOwnerFn};

mod intake;
mod retention;
mod tasks;
mod topic_reset;

use intake::Intake;
use tasks::{checkpoint_task, flush_task, Common, OpenSegment};

/// Everything the appender thread starts from.
pub(crate) struct AppenderSetup {
    pub(crate) config: StoreConfig,
    pub(crate) io: Arc<dyn StorageIo>,
    pub(crate) shared: Arc<CommitLogShared>,
    pub(crate) queue_offsets: HashMap<QueueKey, i64>,
    /// Deleted topics' restart positions, persisted on every reset.
    pub(crate) floors: crate::queue_floors::QueueFloors,
    pub(crate) end: i64,
    pub(crate) owner: QueueOwnerFn,
    pub(crate) requests: Vec<SharedReceiver<Envelope>>,
    pub(crate) results: Vec<SharedSender<ShardBatch>>,
    pub(crate) checkpoint: Arc<CheckpointWriter>,
}

struct Appender {
    config: StoreConfig,
    io: Arc<dyn StorageIo>,
    owner: QueueOwnerFn,
    common: Rc<Common>,
    seg_bytes: i64,
    table: HashMap<QueueKey, i64>,
    floors: crate::queue_floors::QueueFloors,
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
    pos: i64,
    /// Direct mode: bytes of the current segment from the last aligned
    /// boundary up to `pos`, rewritten with the next batch.
    tail: Vec<u8>,
}

/// Runs the appender until every shard ring is closed and drained.
pub(crate) async fn run(setup: AppenderSetup) -> Result<i64, StoreError> {
    let shard_count = setup.requests.len();
    // Connect every endpoint concurrently: each connect waits for its peer.
    let mut connecting_rx = Vec::new();
    for ring in setup.requests {
        connecting_rx.push(glommio::spawn_local(ring.connect()));
    }
    let mut connecting_tx = Vec::new();
    for ring in setup.results {
        connecting_tx.push(glommio::spawn_local(ring.connect()));
    }
    let intake = Intake::new(shard_count, setup.config.batch_bytes_max);
    for (shard, task) in connecting_rx.into_iter().enumerate() {
        intake.spawn_ring(shard, task.await);
    }
    let mut senders = Vec::new();
    for task in connecting_tx {
        senders.push(task.await);
    }

    let seg_bytes = setup.config.segment_bytes as i64;
    let end = setup.end;
    let current_start = end - end.rem_euclid(seg_bytes);
    let path = setup
        .config
        .commitlog_dir()
        .join(offset_file_name(current_start));
    let exists = setup
        .shared
        .segment_list()
        .last()
        .is_some_and(|last| last.start == current_start);
    let file = setup
        .io
        .open_segment(&path, seg_bytes as u64, setup.config.write_mode)
        .await
        .io_context("open segment", &path)?;
    check_alignment(&*file, seg_bytes)?;
    if !exists {
        crate::json_file::sync_dir(&setup.config.commitlog_dir())?;
        let map = SegmentMap::open(&path, current_start, seg_bytes as u64)?;
        setup.shared.push_segment(Arc::new(map));
    }
    let tail = tail_block(&setup.shared, &*file, current_start, end);
    let common = Rc::new(Common {
        shared: Arc::clone(&setup.shared),
        current: RefCell::new(Rc::new(OpenSegment {
            start: current_start,
            file,
        })),
        failed: RefCell::new(None),
        dispatched_upto: Cell::new(end),
        flush_stop: Stop::default(),
        checkpoint_stop: Stop::default(),
        retention_stop: Stop::default(),
        senders,
    });
    let topics = setup
        .queue_offsets
        .keys()
        .map(|(topic, _)| Arc::clone(topic))
        .collect();
    let mut appender = Appender {
        config: setup.config.clone(),
        io: setup.io,
        owner: setup.owner,
        common: Rc::clone(&common),
        seg_bytes,
        table: setup.queue_offsets,
        floors: setup.floors,
        topics,
        spent: (0..shard_count).map(|_| Vec::new()).collect(),
        resets: (0..shard_count).map(|_| Vec::new()).collect(),
        pos: end,
        tail,
    };
    let flusher = match setup.config.flush_mode {
        FlushMode::Async { interval_ms } => Some(glommio::spawn_local(flush_task(
            Rc::clone(&common),
            interval_ms,
        ))),
        FlushMode::Sync { .. } => None,
    };
    let checkpointer = glommio::spawn_local(checkpoint_task(
        Rc::clone(&common),
        Arc::clone(&setup.checkpoint),
        setup.config.checkpoint_interval_ms,
    ));

    let retention = glommio::spawn_local(retention::retention_task(
        Rc::clone(&common),
        setup.config.clone(),
    ));

    loop {
        let batch = intake.next_batch(appender.config.batch_bytes_max).await;
        if batch.is_empty() {
            break;
        }
        appender.process(batch).await;
    }
    // Stop the background tasks and wait for them: none may be inside a
    // blocking-pool call when this executor exits.
    common.flush_stop.stop();
    common.checkpoint_stop.stop();
    common.retention_stop.stop();
    if let Some(flusher) = flusher {
        flusher.await;
    }
    checkpointer.await;
    retention.await;
    // Final flush, then tell every shard how far dispatches went.
    let failed = common.failure();
    if failed.is_none() {
        let written = common.shared.written();
        if common.shared.durable() < written {
            let file = Rc::clone(&common.current.borrow().file);
            match file.sync_data().await {
                Ok(()) => common.shared.publish_durable(written),
                Err(e) => common.fail(format!("final fdatasync: {e}")),
            }
        }
    }
    for shard in 0..shard_count {
        let watermark = common.dispatched_upto.get();
        common
            .send(shard, ShardBatch::watermark_only(watermark))
            .await;
    }
    for tx in &common.senders {
        tx.close();
    }
    match common.failure() {
        Some(error) => Err(error),
        None => Ok(appender.pos),
    }
}

/// Aligned writes must never pass the segment's end.
fn check_alignment(file: &dyn SegmentFile, seg_bytes: i64) -> Result<(), StoreError> {
    let align = file.alignment() as i64;
    if align < 1 || seg_bytes % align != 0 {
        return Err(StoreError::Config(format!(
            "segment size {seg_bytes} is not a multiple of the write alignment {align}"
        )));
    }
    Ok(())
}

/// Direct mode: the partly written block at the end, from the segment map.
fn tail_block(
    shared: &CommitLogShared,
    file: &dyn SegmentFile,
    seg_start: i64,
    end: i64,
) -> Vec<u8> {
    let align = file.alignment() as i64;
    if align <= 1 {
        return Vec::new();
    }
    let in_seg = end - seg_start;
    let from = in_seg - in_seg % align;
    let segments = shared.segment_list();
    segments
        .iter()
        .find(|segment| segment.start == seg_start)
        .map(|segment| segment.bytes()[from as usize..in_seg as usize].to_vec())
        .unwrap_or_else(|| vec![0u8; (in_seg - from) as usize])
}

/// One append of a batch: the shard that sent it and its sequence number.
struct Append {
    shard: usize,
    seq: u64,
    request: AppendRequest,
}

/// What one accepted request will be answered with.
struct Accepted {
    shard: usize,
    seq: u64,
    result: AppendResult,
}

impl Appender {
    /// The appender's own `Arc` for `topic` (added on first sight).
    fn intern(&mut self, topic: &Arc<str>) -> Arc<str> {
        if let Some(known) = self.topics.get(&**topic) {
            return Arc::clone(known);
        }
        let own: Arc<str> = Arc::from(&**topic);
        self.topics.insert(Arc::clone(&own));
        own
    }

    fn current(&self) -> Rc<OpenSegment> {
        Rc::clone(&self.common.current.borrow())
    }

    /// Applies the batch's topic resets (see `topic_reset`) before any
    /// append of it is numbered, and returns its appends.
    fn apply_resets(&mut self, batch: Vec<(usize, Envelope)>) -> Vec<Append> {
        let mut appends = Vec::with_capacity(batch.len());
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
            }
        }
        if reset {
            let commitlog_min = self.common.shared.min_offset();
            topic_reset::persist(&mut self.floors, commitlog_min, &self.config.config_dir());
        }
        appends
    }

    async fn process(&mut self, batch: Vec<(usize, Envelope)>) {
        let batch = self.apply_resets(batch);
        let shard_count = self.common.senders.len();
        let mut results: Vec<Vec<(u64, Result<AppendResult, StoreError>)>> =
            (0..shard_count).map(|_| Vec::new()).collect();
        let mut dispatches: Vec<Vec<DispatchEntry>> =
            (0..shard_count).map(|_| Vec::new()).collect();
        if batch.is_empty() {
            // Only resets: answer them, with nothing to write or flush.
            self.answer(results, Vec::new(), None).await;
            return;
        }
        if let Some(error) = self.common.failure() {
            for append in batch {
                results[append.shard].push((append.seq, Err(error.clone())));
            }
            self.answer(results, Vec::new(), None).await;
            return;
        }

        let total: usize = batch.iter().map(|a| a.request.len_bytes()).sum();
        let mut job = BytesMut::with_capacity(total + BLANK_BYTES_MIN);
        let mut job_start = self.pos;
        let mut accepted = Vec::with_capacity(batch.len());
        let mut error: Option<StoreError> = None;
        for Append {
            shard,
            seq,
            request,
        } in batch
        {
            if let Some(error) = &error {
                results[shard].push((seq, Err(error.clone())));
                continue;
            }
            let size = request.records.len() as i64;
            let in_seg = self.pos - self.current().start;
            assert!(
                size + (BLANK_BYTES_MIN as i64) <= self.seg_bytes,
                "oversized append passed validation"
            );
            if in_seg + size + BLANK_BYTES_MIN as i64 > self.seg_bytes {
                let blank = (self.seg_bytes - in_seg) as usize;
                record::encode_blank(blank, &mut job);
                self.pos += blank as i64;
                let finished = std::mem::take(&mut job).freeze();
                if let Err(e) = self.finish_segment(job_start, finished).await {
                    self.common.fail(e.to_string());
                    results[shard].push((seq, Err(e.clone())));
                    error = Some(e);
                    continue;
                }
                job_start = self.pos;
            }
            let topic = self.intern(&request.topic);
            let key: QueueKey = (Arc::clone(&topic), request.queue_id);
            let next = self.table.entry(key).or_insert(0);
            let first_queue_offset = *next;
            let physical_offset = self.pos;
            let owner = (self.owner)(&request.topic, request.queue_id);
            assert!(owner < shard_count, "owner shard {owner} out of range");
            let base = job.len();
            job.extend_from_slice(&request.records);
            let mut at = base;
            let mut index = 0;
            while at < job.len() {
                let record_size = read_i32(&job, at) as usize;
                let record_bytes = &mut job[at..at + record_size];
                let queue_offset = first_queue_offset + index as i64;
                let record_offset = physical_offset + (at - base) as i64;
                record::patch_offsets(record_bytes, queue_offset, record_offset);
                dispatches[owner].push(DispatchEntry {
                    topic: Arc::clone(&topic),
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
            *next += index as i64;
            self.pos += size;
            self.spent[shard].push(request);
            accepted.push(Accepted {
                shard,
                seq,
                result: AppendResult {
                    physical_offset,
                    queue_offset: first_queue_offset,
                    record_count: index as u32,
                    total_bytes: size as u32,
                    status: AppendStatus::Ok,
                },
            });
        }
        if error.is_none() && !job.is_empty() {
            if let Err(e) = self.write_job(job_start, job.freeze()).await {
                self.common.fail(e.to_string());
                error = Some(e);
            }
        }
        if let Some(error) = error {
            for a in accepted {
                results[a.shard].push((a.seq, Err(error.clone())));
            }
            self.answer(results, Vec::new(), None).await;
            return;
        }
        let end = self.pos;
        self.common.shared.publish_written(end);
        match self.config.flush_mode {
            FlushMode::Async { .. } => {
                for a in accepted {
                    results[a.shard].push((a.seq, Ok(a.result)));
                }
                self.answer(results, dispatches, Some(end)).await;
            }
            FlushMode::Sync { timeout_ms } => {
                self.group_commit(accepted, results, dispatches, end, timeout_ms)
                    .await;
            }
        }
    }

    /// Sync flush: one fdatasync for the batch, answered within the timeout.
    async fn group_commit(
        &mut self,
        accepted: Vec<Accepted>,
        mut results: Vec<Vec<(u64, Result<AppendResult, StoreError>)>>,
        dispatches: Vec<Vec<DispatchEntry>>,
        end: i64,
        timeout_ms: u64,
    ) {
        let file = Rc::clone(&self.current().file);
        let started = Instant::now();
        let mut sync = pin!(file.sync_data());
        let first = future::or(async { Some((&mut sync).await) }, async {
            glommio::timer::sleep(Duration::from_millis(timeout_ms)).await;
            None
        })
        .await;
        let outcome = match first {
            Some(outcome) => outcome,
            None => {
                // Too slow: answer now, as RocketMQ does, and keep waiting
                // for the flush before dispatching or taking the next batch.
                let mut late = results;
                for a in &accepted {
                    let mut result = a.result;
                    result.status = AppendStatus::FlushDiskTimeout;
                    late[a.shard].push((a.seq, Ok(result)));
                }
                self.answer(late, Vec::new(), None).await;
                results = (0..self.common.senders.len()).map(|_| Vec::new()).collect();
                let outcome = sync.await;
                tracing::warn!(
                    elapsed_ms = started.elapsed().as_millis() as u64,
                    "sync flush exceeded its timeout"
                );
                match outcome {
                    Ok(()) => {
                        self.common.shared.publish_durable(end);
                        self.answer(results, dispatches, Some(end)).await;
                    }
                    Err(e) => self.common.fail(format!("fdatasync: {e}")),
                }
                return;
            }
        };
        match outcome {
            Ok(()) => {
                self.common.shared.publish_durable(end);
                for a in accepted {
                    results[a.shard].push((a.seq, Ok(a.result)));
                }
                self.answer(results, dispatches, Some(end)).await;
            }
            Err(e) => {
                let reason = format!("fdatasync: {e}");
                self.common.fail(reason.clone());
                for a in accepted {
                    results[a.shard].push((a.seq, Err(StoreError::FlushFailed(reason.clone()))));
                }
                self.answer(results, Vec::new(), None).await;
            }
        }
    }

    /// Sends each shard its results and dispatches. `dispatched` is the
    /// batch end when `dispatches` are this batch's.
    async fn answer(
        &mut self,
        results: Vec<Vec<(u64, Result<AppendResult, StoreError>)>>,
        dispatches: Vec<Vec<DispatchEntry>>,
        dispatched: Option<i64>,
    ) {
        let watermark = dispatched.unwrap_or(self.common.dispatched_upto.get());
        let mut dispatches = dispatches.into_iter();
        for (shard, results) in results.into_iter().enumerate() {
            let dispatches = dispatches.next().unwrap_or_default();
            let spent = self
                .spent
                .get_mut(shard)
                .map(std::mem::take)
                .unwrap_or_default();
            let resets = self
                .resets
                .get_mut(shard)
                .map(std::mem::take)
                .unwrap_or_default();
            if results.is_empty() && dispatches.is_empty() && spent.is_empty() && resets.is_empty()
            {
                continue;
            }
            self.common
                .send(
                    shard,
                    ShardBatch {
                        results,
                        dispatches,
                        watermark,
                        spent,
                        resets,
                    },
                )
                .await;
        }
        if let Some(end) = dispatched {
            self.common.dispatched_upto.set(end);
        }
    }

    /// Writes the last bytes of the current segment (ending in the blank
    /// filler), makes them durable, and opens the next segment.
    async fn finish_segment(&mut self, job_start: i64, job: Bytes) -> Result<(), StoreError> {
        self.write_job(job_start, job).await?;
        let old = self.current();
        old.file
            .sync_data()
            .await
            .map_err(|e| StoreError::FlushFailed(format!("fdatasync before segment roll: {e}")))?;
        let start = old.start + self.seg_bytes;
        assert_eq!(
            self.pos, start,
            "a segment must be full before the next one"
        );
        let path = self.config.commitlog_dir().join(offset_file_name(start));
        let file = self
            .io
            .open_segment(&path, self.seg_bytes as u64, self.config.write_mode)
            .await
            .io_context("create segment", &path)?;
        check_alignment(&*file, self.seg_bytes)?;
        crate::json_file::sync_dir(&self.config.commitlog_dir())?;
        let map = SegmentMap::open(&path, start, self.seg_bytes as u64)?;
        self.common.shared.push_segment(Arc::new(map));
        *self.common.current.borrow_mut() = Rc::new(OpenSegment { start, file });
        self.tail.clear();
        Ok(())
    }

    /// Writes `job` (the bytes for `[job_start, job_start + len)`, all in
    /// the current segment).
    async fn write_job(&mut self, job_start: i64, job: Bytes) -> Result<(), StoreError> {
        let segment = self.current();
        let file_pos = (job_start - segment.start) as u64;
        assert!(
            file_pos + job.len() as u64 <= self.seg_bytes as u64,
            "a write must stay within its segment"
        );
        // Named lazily: the write path formats nothing unless a write fails.
        let io_error = |e| IoFailure::new("write segment", format!("segment {}", segment.start), e);
        match self.config.write_mode {
            WriteMode::Buffered => {
                // Zero-copy: the batch buffer becomes the write buffer.
                let buf = IoBuffer::Heap(Vec::from(job));
                segment
                    .file
                    .write_at(buf, file_pos)
                    .await
                    .map_err(io_error)?;
            }
            WriteMode::Direct => {
                let align = segment.file.alignment();
                let aligned = file_pos - file_pos % align;
                assert_eq!(
                    (file_pos - aligned) as usize,
                    self.tail.len(),
                    "tail block out of step"
                );
                let total = self.tail.len() + job.len();
                let padded = total.div_ceil(align as usize) * align as usize;
                let mut buf = segment.file.alloc_buffer(padded);
                let bytes = buf.as_mut_slice();
                bytes[..self.tail.len()].copy_from_slice(&self.tail);
                bytes[self.tail.len()..total].copy_from_slice(&job);
                bytes[total..].fill(0);
                let new_end = file_pos + job.len() as u64;
                let keep_from = (new_end - new_end % align - aligned) as usize;
                let new_tail = bytes[keep_from..total].to_vec();
                segment
                    .file
                    .write_at(buf, aligned)
                    .await
                    .map_err(io_error)?;
                self.tail = new_tail;
                self.common.shared.push_hot(job_start, job);
            }
        }
        Ok(())
    }
}
