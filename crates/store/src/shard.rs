//! The per-shard side of the store: [`ShardStore`] lives on one shard's
//! executor (not `Send`). It sends appends to the appender over the shard's
//! request ring and completes them from the result ring; it owns the
//! ConsumeQueues of the queues this shard owns and applies the appender's
//! dispatches to them, then calls the broker's dispatch listener (to wake
//! long polls); it flushes those ConsumeQueues periodically and reports how
//! far they are flushed for the checkpoint.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::future::poll_fn;
use std::rc::Rc;
use std::sync::Arc;
use std::task::{Poll, Waker};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use foldhash::{HashMap, HashMapExt};
use glommio::channels::local_channel;
use glommio::channels::shared_channel::{SharedReceiver, SharedSender};

use crate::appender::{AppenderRings, InShardAppender};
use crate::checkpoint_writer::CheckpointWriter;
use crate::commitlog::{CommitLogReader, CommitLogShared, LocalReader};
use crate::config::StoreConfig;
use crate::consume_queue::ConsumeQueue;
use crate::error::StoreError;
use crate::messages::{
    AppendRequest, AppendResult, DispatchEntry, Envelope, ReplicaChunk, ShardBatch,
};
use crate::names::queue_dir;
use crate::ring::{RingRx, RingTx};
use crate::stop::Stop;
use crate::types::QueueOwnerFn;

mod dispatch;
mod outbox;
mod retention;
mod topic_retention;

use outbox::Outbox;

/// What every shard shares about the store.
pub(crate) struct StoreContext {
    pub(crate) config: StoreConfig,
    pub(crate) shared: Arc<CommitLogShared>,
    pub(crate) owner: QueueOwnerFn,
    pub(crate) checkpoint: Arc<CheckpointWriter>,
    pub(crate) shard_count: usize,
}

/// A shard's unconnected end of its two rings. `Send`: move it to the
/// shard's thread and call [`ShardStore::connect`] there.
pub struct ShardPort {
    pub(crate) shard_id: usize,
    pub(crate) rings: PortRings,
    pub(crate) ctx: Arc<StoreContext>,
}

/// How a shard reaches the appender.
pub(crate) enum PortRings {
    /// The appender runs on a thread of its own.
    Shared {
        requests: SharedSender<Envelope>,
        results: SharedReceiver<ShardBatch>,
    },
    /// This shard runs the appender itself; the rings between them are made
    /// on the shard's executor (`crate::ring`).
    InShard(Box<InShardAppender>),
}

impl PortRings {
    /// Connects this shard's ends (starting the appender when it runs here).
    async fn connect(
        self,
        ring_capacity: usize,
    ) -> (
        RingTx<Envelope>,
        RingRx<ShardBatch>,
        Option<glommio::Task<()>>,
    ) {
        match self {
            PortRings::Shared { requests, results } => {
                let (sender, receiver) =
                    futures_lite::future::zip(requests.connect(), results.connect()).await;
                (RingTx::Shared(sender), RingRx::Shared(receiver), None)
            }
            PortRings::InShard(appender) => {
                let (request_tx, request_rx) = local_channel::new_bounded(ring_capacity);
                let (result_tx, result_rx) = local_channel::new_bounded(ring_capacity);
                let task = appender.spawn(AppenderRings::Local {
                    requests: request_rx,
                    results: result_tx,
                });
                (
                    RingTx::local(request_tx),
                    RingRx::Local(result_rx),
                    Some(task),
                )
            }
        }
    }
}

impl ShardPort {
    pub fn shard_id(&self) -> usize {
        self.shard_id
    }
}

impl std::fmt::Debug for ShardPort {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShardPort")
            .field("shard_id", &self.shard_id)
            .finish()
    }
}

/// A one-shot result cell completed by the receiver task.
#[derive(Default)]
struct ResultCell {
    value: RefCell<Option<Result<AppendResult, StoreError>>>,
    waker: RefCell<Option<Waker>>,
}

impl ResultCell {
    fn complete(&self, value: Result<AppendResult, StoreError>) {
        *self.value.borrow_mut() = Some(value);
        if let Some(waker) = self.waker.borrow_mut().take() {
            waker.wake();
        }
    }
}

type Queues = HashMap<Arc<str>, HashMap<i32, Rc<ConsumeQueue>>>;
type Listener = Rc<dyn Fn(&DispatchEntry)>;

struct ShardInner {
    shard_id: usize,
    ctx: Arc<StoreContext>,
    /// The request ring to the appender.
    outbox: Rc<Outbox>,
    next_seq: Cell<u64>,
    pending: RefCell<HashMap<u64, Rc<ResultCell>>>,
    /// Envelopes sent and not answered yet, whether or not their sender
    /// still waits.
    unanswered: Cell<u64>,
    queues: RefCell<Queues>,
    listener: RefCell<Option<Listener>>,
    written_listener: RefCell<Option<Rc<dyn Fn()>>>,
    /// Every dispatch below this CommitLog position has been applied here.
    applied: Cell<i64>,
    /// The latest batch watermark: `applied` once nothing is deferred.
    watermark: Cell<i64>,
    /// Dispatches that found no disk space for their ConsumeQueue or wait
    /// behind the dispatch gate, in order, with whether they are a slave's;
    /// retried until they fit and the gate is past them.
    deferred: RefCell<VecDeque<(DispatchEntry, bool)>>,
    /// A dispatch found no disk space (logged once the backlog is applied).
    disk_deferred: Cell<bool>,
    /// Records ending past this CommitLog position are not dispatched yet
    /// (controller mode's confirm offset); `i64::MAX`: no gate.
    gate: Cell<i64>,
    /// A ConsumeQueue write or flush failed: stop advancing the flushed
    /// watermark so recovery rebuilds from the last good point.
    cq_broken: Cell<bool>,
    reader: LocalReader,
    done: Cell<bool>,
    done_waiters: RefCell<Vec<Waker>>,
    flush_stop: Stop,
    flush_task: RefCell<Option<glommio::Task<()>>>,
    /// The appender, when it runs on this shard's executor.
    appender_task: RefCell<Option<glommio::Task<()>>>,
    retention: retention::ShardRetention,
    topic_retention: topic_retention::TopicRetentionState,
}

/// One shard's handle on the store. Create it inside the shard's executor.
pub struct ShardStore {
    inner: Rc<ShardInner>,
}

/// Removes a pending slot when an append future ends, however it ends.
struct PendingGuard<'a> {
    inner: &'a ShardInner,
    seq: u64,
}

impl Drop for PendingGuard<'_> {
    fn drop(&mut self) {
        self.inner.pending.borrow_mut().remove(&self.seq);
    }
}

impl ShardStore {
    /// Connects the shard's rings (waits for the appender to connect its
    /// ends) and starts the result/dispatch task and the ConsumeQueue flush
    /// task on the current executor.
    pub async fn connect(port: ShardPort) -> ShardStore {
        let ShardPort {
            shard_id,
            rings,
            ctx,
        } = port;
        let (sender, receiver, appender_task) = rings.connect(ctx.config.ring_capacity).await;
        let start = ctx.shared.written();
        let gate = if ctx.config.dispatch_gated {
            start
        } else {
            i64::MAX
        };
        let inner = Rc::new(ShardInner {
            shard_id,
            reader: LocalReader::new(Arc::clone(&ctx.shared)),
            ctx,
            outbox: Outbox::new(sender),
            next_seq: Cell::new(0),
            pending: RefCell::new(HashMap::new()),
            unanswered: Cell::new(0),
            queues: RefCell::new(HashMap::new()),
            listener: RefCell::new(None),
            written_listener: RefCell::new(None),
            applied: Cell::new(start),
            watermark: Cell::new(start),
            deferred: RefCell::new(VecDeque::new()),
            disk_deferred: Cell::new(false),
            gate: Cell::new(gate),
            cq_broken: Cell::new(false),
            done: Cell::new(false),
            done_waiters: RefCell::new(Vec::new()),
            flush_stop: Stop::default(),
            flush_task: RefCell::new(None),
            appender_task: RefCell::new(appender_task),
            retention: retention::ShardRetention::default(),
            topic_retention: Default::default(),
        });
        let task_inner = Rc::clone(&inner);
        glommio::spawn_local(async move {
            while let Some(batch) = receiver.recv().await {
                task_inner.apply(batch);
            }
            task_inner.finish();
        })
        .detach();
        let flush_inner = Rc::clone(&inner);
        let flusher = glommio::spawn_local(async move {
            let interval = Duration::from_millis(flush_inner.ctx.config.cq_flush_interval_ms);
            while !flush_inner.flush_stop.sleep(interval).await {
                flush_inner.retry_deferred();
                flush_inner.flush_queues().await;
            }
        });
        *inner.flush_task.borrow_mut() = Some(flusher);
        inner.start_retention();
        ShardStore { inner }
    }

    pub fn shard_id(&self) -> usize {
        self.inner.shard_id
    }

    pub fn shard_count(&self) -> usize {
        self.inner.ctx.shard_count
    }

    /// Whether writes are stopped because the store's disk is full (see
    /// [`StoreError::DiskFull`]); reads go on.
    pub fn is_disk_full(&self) -> bool {
        self.inner.ctx.shared.disk.is_full()
    }

    /// How many times [`ShardStore::is_disk_full`] changed since start.
    pub fn disk_full_changes(&self) -> u64 {
        self.inner.ctx.shared.disk.changes()
    }

    /// The shard that owns `(topic, queue_id)`.
    pub fn owner_of(&self, topic: &str, queue_id: i32) -> usize {
        (self.inner.ctx.owner)(topic, queue_id)
    }

    /// Appends one request (one record, or a batch for one queue). Resolves
    /// once the appender has written it (and flushed it, in sync mode). A
    /// full ring makes this wait; it never drops the request.
    pub async fn append(&self, request: AppendRequest) -> Result<AppendResult, StoreError> {
        if self.inner.ctx.shared.is_replica() {
            return Err(StoreError::Unavailable(
                "this store is a slave's copy: it takes only the master's bytes".into(),
            ));
        }
        request.validate(self.inner.ctx.config.append_bytes_max())?;
        self.submit(|seq| Envelope::Append { seq, request }).await
    }

    /// A slave's append of `bytes`, whole records copied from the master's
    /// CommitLog at its offset `start` (which must be where this CommitLog
    /// ends, or anywhere for an empty one). The records keep their offsets
    /// and are dispatched to their ConsumeQueues. The result's
    /// `physical_offset` is `start`; `record_count` counts messages.
    pub async fn replicate(&self, start: i64, bytes: BytesMut) -> Result<AppendResult, StoreError> {
        if !self.inner.ctx.shared.is_replica() {
            return Err(StoreError::Unavailable(
                "this store is not a slave's".into(),
            ));
        }
        let (chunk, _) = ReplicaChunk::new(start, bytes, self.inner.ctx.config.segment_bytes)?;
        self.submit(|seq| Envelope::Replicate { seq, chunk }).await
    }

    /// Sends the envelope `make(seq)` to the appender and waits for its
    /// answer under `seq`.
    async fn submit(&self, make: impl FnOnce(u64) -> Envelope) -> Result<AppendResult, StoreError> {
        if self.inner.outbox.is_closed() {
            return Err(StoreError::Unavailable("the store is shutting down".into()));
        }
        let seq = self.inner.next_seq.get();
        self.inner.next_seq.set(seq + 1);
        let slot = Rc::new(ResultCell::default());
        self.inner
            .pending
            .borrow_mut()
            .insert(seq, Rc::clone(&slot));
        let _guard = PendingGuard {
            inner: &self.inner,
            seq,
        };
        if !self.inner.outbox.send(make(seq)).await {
            return Err(StoreError::Unavailable(
                "the CommitLog appender is gone".into(),
            ));
        }
        let unanswered = &self.inner.unanswered;
        unanswered.set(unanswered.get() + 1);
        poll_fn(|cx| {
            if let Some(value) = slot.value.borrow_mut().take() {
                return Poll::Ready(value);
            }
            *slot.waker.borrow_mut() = Some(cx.waker().clone());
            Poll::Pending
        })
        .await
    }

    /// Appends and replica chunks this shard sent that the appender has
    /// not answered yet (also those whose sender stopped waiting).
    pub fn unanswered(&self) -> u64 {
        self.inner.unanswered.get()
    }

    /// The ConsumeQueue of a queue this shard owns (opened on first use).
    pub fn consume_queue(
        &self,
        topic: &str,
        queue_id: i32,
    ) -> Result<Rc<ConsumeQueue>, StoreError> {
        let owner = self.owner_of(topic, queue_id);
        if owner != self.inner.shard_id {
            return Err(StoreError::NotOwner {
                topic: topic.to_owned(),
                queue_id,
                owner,
                shard: self.inner.shard_id,
            });
        }
        self.inner.queue(topic, queue_id)
    }

    /// Queues of this shard that have been opened, as (topic, queue id).
    pub fn open_queues(&self) -> Vec<(Arc<str>, i32)> {
        self.inner
            .queues
            .borrow()
            .iter()
            .flat_map(|(topic, ids)| ids.keys().map(move |id| (Arc::clone(topic), *id)))
            .collect()
    }

    /// Called after each dispatched entry is in its ConsumeQueue (on this
    /// shard's executor): the hook for waking long-polling pulls.
    pub fn set_dispatch_listener(&self, listener: impl Fn(&DispatchEntry) + 'static) {
        *self.inner.listener.borrow_mut() = Some(Rc::new(listener));
    }

    /// Controller mode's confirm offset (Java's reput end): dispatches of
    /// records that end past `end` wait here, in CommitLog order, until the
    /// gate moves past them, so no ConsumeQueue shows a record a failover
    /// could take back. `i64::MAX` (the default) opens it. It may move back
    /// (a slave joined the in-sync set): what is dispatched stays.
    pub fn set_dispatch_gate(&self, end: i64) {
        self.inner.gate.set(end);
        self.inner.retry_deferred();
    }

    /// Called after each batch the appender sends this shard: on the shard
    /// named `notify_written_shard`, after every written batch.
    pub fn set_written_listener(&self, listener: impl Fn() + 'static) {
        *self.inner.written_listener.borrow_mut() = Some(Rc::new(listener));
    }

    /// Zero-copy CommitLog bytes `[physical_offset, physical_offset + size)`;
    /// `None` when not (yet) written or not within one segment.
    pub fn read_records(&self, physical_offset: i64, size: usize) -> Option<Bytes> {
        self.inner.reader.read(physical_offset, size)
    }

    /// Brings the offloaded bytes at `physical_offset` into the
    /// read-through cache (tiered storage); the fetch runs off this executor.
    pub async fn fetch_offloaded(
        &self,
        physical_offset: i64,
        size: usize,
    ) -> Result<(), StoreError> {
        match self.inner.ctx.shared.tier.get() {
            Some(tier) => tier.fetch(physical_offset, size).await,
            None => Err(StoreError::Unavailable("tiered storage is off".into())),
        }
    }

    /// Every CommitLog record below this position is in this shard's
    /// ConsumeQueues (what the metrics call dispatched).
    pub fn dispatched_offset(&self) -> i64 {
        self.inner.applied.get()
    }

    /// The store's root directory.
    pub fn root_dir(&self) -> &std::path::Path {
        &self.inner.ctx.config.root_dir
    }

    /// A `Send + Sync` reader, for other threads.
    pub fn reader(&self) -> CommitLogReader {
        CommitLogReader {
            shared: Arc::clone(&self.inner.ctx.shared),
        }
    }

    /// Stops this shard's appends, waits until the appender has answered
    /// everything and closed (which happens once every shard has called
    /// `shutdown`), then flushes this shard's ConsumeQueues. Call it on
    /// every shard, then `AppenderHandle::join`.
    pub async fn shutdown(&self) {
        self.inner.outbox.close();
        poll_fn(|cx| {
            if self.inner.done.get() {
                Poll::Ready(())
            } else {
                self.inner
                    .done_waiters
                    .borrow_mut()
                    .push(cx.waker().clone());
                Poll::Pending
            }
        })
        .await;
        // Stop the periodic flush and wait for it (it may be inside a
        // blocking-pool call), then flush everything once more.
        self.inner.stop_retention().await;
        self.inner.flush_stop.stop();
        let flusher = self.inner.flush_task.borrow_mut().take();
        if let Some(flusher) = flusher {
            flusher.await;
        }
        self.inner.flush_queues().await;
        // It closed this shard's result ring as its last step but one; let
        // it hand its outcome to `AppenderHandle::join`.
        let appender = self.inner.appender_task.borrow_mut().take();
        if let Some(appender) = appender {
            appender.await;
        }
    }
}

impl Drop for ShardStore {
    fn drop(&mut self) {
        // Without this the appender would wait for this ring forever.
        self.inner.outbox.close();
    }
}

impl ShardInner {
    fn queue(&self, topic: &str, queue_id: i32) -> Result<Rc<ConsumeQueue>, StoreError> {
        if let Some(queue) = self
            .queues
            .borrow()
            .get(topic)
            .and_then(|ids| ids.get(&queue_id))
        {
            return Ok(Rc::clone(queue));
        }
        let dir = queue_dir(&self.ctx.config.consumequeue_dir(), topic, queue_id)?;
        let queue = Rc::new(ConsumeQueue::open(
            dir,
            self.ctx.config.cq_entries_per_file,
        )?);
        // Entries below the CommitLog's start (local or, with tiered
        // storage, remote) are gone (retention), and those below the
        // topic's retention floor.
        queue.correct_min(self.ctx.shared.logical_min());
        queue.load_floor()?;
        self.queues
            .borrow_mut()
            .entry(Arc::from(topic))
            .or_default()
            .insert(queue_id, Rc::clone(&queue));
        Ok(queue)
    }

    fn apply(&self, batch: ShardBatch) {
        // The appender published the written end before sending the batch.
        let written = self.ctx.shared.written();
        assert!(
            batch.watermark <= written,
            "dispatch watermark {} beyond the written end {written}",
            batch.watermark
        );
        // Before the dispatches: they may be numbered after these resets.
        for done in &batch.resets {
            self.reset_done(done);
        }
        for (seq, result) in batch.results {
            self.unanswered.set(self.unanswered.get().saturating_sub(1));
            let slot = self.pending.borrow_mut().remove(&seq);
            if let Some(slot) = slot {
                slot.complete(result);
            }
        }
        self.dispatch_batch(&batch.dispatches, batch.replica, batch.watermark, written);
        // Freed here, on the thread that allocated them.
        drop(batch.spent);
        drop(batch.resets);
        let written_listener = self.written_listener.borrow().clone();
        if let Some(listener) = written_listener {
            listener();
        }
    }

    /// The appender closed the result ring: nothing more will come.
    fn finish(&self) {
        let pending: Vec<Rc<ResultCell>> =
            self.pending.borrow_mut().drain().map(|(_, s)| s).collect();
        for slot in pending {
            slot.complete(Err(StoreError::Unavailable(
                "the CommitLog appender stopped".into(),
            )));
        }
        self.done.set(true);
        for waker in self.done_waiters.borrow_mut().drain(..) {
            waker.wake();
        }
    }

    /// fdatasyncs dirty ConsumeQueue files on the blocking pool, then
    /// reports the watermark they cover.
    async fn flush_queues(&self) {
        if self.cq_broken.get() {
            return;
        }
        let watermark = self.applied.get();
        let queues: Vec<Rc<ConsumeQueue>> = self
            .queues
            .borrow()
            .values()
            .flat_map(|ids| ids.values().cloned())
            .collect();
        let mut files = Vec::new();
        for queue in queues {
            match queue.take_dirty_files() {
                Ok(dirty) => files.extend(dirty),
                Err(e) => {
                    tracing::error!(error = %e, "ConsumeQueue flush failed");
                    self.cq_broken.set(true);
                    return;
                }
            }
        }
        if !files.is_empty() {
            let synced = glommio::executor()
                .spawn_blocking(move || files.iter().try_for_each(|file| file.sync_data()))
                .await;
            if let Err(e) = synced {
                tracing::error!(error = %e, "ConsumeQueue fdatasync failed");
                self.cq_broken.set(true);
                return;
            }
        }
        assert!(
            watermark <= self.applied.get(),
            "applied went back during a flush"
        );
        debug_assert!(
            watermark <= self.watermark.get(),
            "flushed past the watermark"
        );
        self.ctx.checkpoint.shard_flushed(self.shard_id, watermark);
    }
}
