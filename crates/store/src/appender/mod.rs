//! The single CommitLog appender. Runs on its own glommio executor thread:
//! drains the shard rings (through [`Intake`]), assigns physical and queue
//! offsets (it is the only writer of both), patches them into the records,
//! copies a batch into one buffer and writes it with io_uring; in sync flush
//! mode one fdatasync covers the whole batch (group commit). Then it answers
//! the shards and dispatches ConsumeQueue entries to each queue's owner.
//!
//! A record never spans segments: one that does not fit is preceded by a
//! blank record filling the segment, and goes first in the next one. Under
//! sync flush the appender fdatasyncs the old segment before it switches;
//! under async flush the switch does not wait: the old segment joins
//! `unsynced`, which the flush task syncs before the current one.
//!
//! After any write or flush failure the appender refuses further appends
//! (answering `Unavailable`): what reached the disk is unknown, and a restart
//! runs recovery, which finds the valid end again.
//!
//! [`run`] here is the control flow: connect the rings, open the current
//! segment, start the periodic tasks (`tasks`, `retention`), feed batches
//! from `intake` to the [`Appender`] until every ring is closed, shut down.
//! `batch` takes one batch from numbering to answers, `writer` does the
//! segment writes and rolls, `ahead` creates the next segment while the
//! current one fills, `topic_reset` applies deleted topics' resets.
//! The children never import this module, so they form no cycle with it.

use std::rc::Rc;
use std::sync::Arc;

use foldhash::HashMap;
use glommio::channels::local_channel::{LocalReceiver, LocalSender};
use glommio::channels::shared_channel::{SharedReceiver, SharedSender};
use glommio::Task;

use crate::checkpoint_writer::CheckpointWriter;
use crate::commitlog::CommitLogShared;
use crate::config::{FlushMode, StoreConfig};
use crate::error::StoreError;
use crate::io::StorageIo;
use crate::messages::{Envelope, ShardBatch};
use crate::queue_floors::QueueFloors;
use crate::ring::{RingRx, RingTx};
use crate::types::{QueueKey, QueueOwnerFn};

mod ahead;
mod batch;
mod intake;
mod replica;
mod retention;
mod tasks;
mod topic_reset;
mod writer;

use batch::Appender;
use intake::Intake;
use tasks::Common;
use writer::SegmentWriter;

/// Everything the appender thread starts from.
pub(crate) struct AppenderSetup {
    pub(crate) config: StoreConfig,
    pub(crate) io: Arc<dyn StorageIo>,
    pub(crate) shared: Arc<CommitLogShared>,
    pub(crate) queue_offsets: HashMap<QueueKey, i64>,
    /// Deleted topics' restart positions, persisted on every reset.
    pub(crate) floors: QueueFloors,
    pub(crate) end: i64,
    pub(crate) owner: QueueOwnerFn,
    pub(crate) checkpoint: Arc<CheckpointWriter>,
}

/// The appender's ends of its rings, not yet connected.
pub(crate) enum AppenderRings {
    /// On a thread of its own: one request and one result ring per shard,
    /// in shard order.
    Shared {
        requests: Vec<SharedReceiver<Envelope>>,
        results: Vec<SharedSender<ShardBatch>>,
    },
    /// On the only shard's executor (see `crate::ring`).
    Local {
        requests: LocalReceiver<Envelope>,
        results: LocalSender<ShardBatch>,
    },
}

/// The appender's setup travelling to the one shard that runs it, and where
/// its outcome goes.
pub(crate) struct InShardAppender {
    pub(crate) setup: AppenderSetup,
    pub(crate) result: std::sync::mpsc::Sender<Result<i64, StoreError>>,
}

impl InShardAppender {
    /// Runs the appender as a task of the current (the shard's) executor,
    /// on the shard's `rings`; its outcome goes to `AppenderHandle::join`.
    pub(crate) fn spawn(self, rings: AppenderRings) -> Task<()> {
        glommio::spawn_local(async move {
            let outcome = run(self.setup, rings).await;
            // Nobody waits when the broker is already gone.
            let _ = self.result.send(outcome);
        })
    }
}

/// Runs the appender until every shard ring is closed and drained; returns
/// the CommitLog's end.
pub(crate) async fn run(setup: AppenderSetup, rings: AppenderRings) -> Result<i64, StoreError> {
    let AppenderSetup {
        config,
        io,
        shared,
        queue_offsets,
        floors,
        end,
        owner,
        checkpoint,
    } = setup;
    let (intake, senders) = connect(rings, config.batch_bytes_max).await;
    let (current, tail) = writer::open_current(&config, &*io, &shared, end).await?;
    let common = Common::new(shared, current, end, senders);
    let writer = SegmentWriter::new(&config, io, Rc::clone(&common), tail);
    let background = Background::start(&common, &config, checkpoint);
    let mut appender = Appender::new(
        config.clone(),
        owner,
        Rc::clone(&common),
        writer,
        queue_offsets,
        floors,
        end,
    );
    loop {
        let batch = intake.next_batch(config.batch_bytes_max).await;
        if batch.is_empty() {
            break;
        }
        appender.process(batch).await;
    }
    background.stop(&common).await;
    appender.writer.discard_ahead().await;
    shut_down(&common).await;
    match common.failure() {
        Some(error) => Err(error),
        None => Ok(appender.position()),
    }
}

/// Connects every ring end (each shared connect waits for its peer, so all
/// of them at once) and starts the intake of the request rings.
async fn connect(
    rings: AppenderRings,
    batch_bytes_max: usize,
) -> (Rc<Intake>, Vec<RingTx<ShardBatch>>) {
    let (requests, results) = match rings {
        AppenderRings::Local { requests, results } => {
            let intake = Intake::new(1, batch_bytes_max);
            intake.spawn_ring(0, RingRx::Local(requests));
            return (intake, vec![RingTx::local(results)]);
        }
        AppenderRings::Shared { requests, results } => (requests, results),
    };
    let connecting_rx: Vec<_> = requests
        .into_iter()
        .map(|ring| glommio::spawn_local(ring.connect()))
        .collect();
    let connecting_tx: Vec<_> = results
        .into_iter()
        .map(|ring| glommio::spawn_local(ring.connect()))
        .collect();
    let intake = Intake::new(connecting_rx.len(), batch_bytes_max);
    for (shard, task) in connecting_rx.into_iter().enumerate() {
        intake.spawn_ring(shard, RingRx::Shared(task.await));
    }
    let mut senders = Vec::with_capacity(connecting_tx.len());
    for task in connecting_tx {
        senders.push(RingTx::Shared(task.await));
    }
    (intake, senders)
}

/// The appender's periodic tasks, on its executor beside the batch loop.
struct Background {
    /// Async flush mode only.
    flusher: Option<Task<()>>,
    checkpointer: Task<()>,
    retention: Task<()>,
    disk_check: Task<()>,
}

impl Background {
    fn start(common: &Rc<Common>, config: &StoreConfig, checkpoint: Arc<CheckpointWriter>) -> Self {
        let flusher = match config.flush_mode {
            FlushMode::Async { interval_ms } => Some(glommio::spawn_local(tasks::flush_task(
                Rc::clone(common),
                interval_ms,
            ))),
            FlushMode::Sync { .. } => None,
        };
        let checkpointer = glommio::spawn_local(tasks::checkpoint_task(
            Rc::clone(common),
            checkpoint,
            config.checkpoint_interval_ms,
        ));
        let retention =
            glommio::spawn_local(retention::retention_task(Rc::clone(common), config.clone()));
        let disk_check = glommio::spawn_local(retention::disk_check_task(
            Rc::clone(common),
            config.clone(),
        ));
        Background {
            flusher,
            checkpointer,
            retention,
            disk_check,
        }
    }

    /// Stops the tasks and waits for them: none may be inside a
    /// blocking-pool call when this executor exits.
    async fn stop(self, common: &Common) {
        common.flush_stop.stop();
        common.checkpoint_stop.stop();
        common.retention_stop.stop();
        common.disk_stop.stop();
        if let Some(flusher) = self.flusher {
            flusher.await;
        }
        self.checkpointer.await;
        self.retention.await;
        self.disk_check.await;
    }
}

/// After the last batch: a final flush, then every shard learns how far
/// dispatches went, and the result rings close.
async fn shut_down(common: &Common) {
    if common.failure().is_none() {
        if let Err(e) = tasks::sync_written(common).await {
            common.fail(format!("final fdatasync: {e}"));
        }
    }
    for shard in 0..common.senders.len() {
        let watermark = common.dispatched_upto.get();
        common
            .send(shard, ShardBatch::watermark_only(watermark))
            .await;
    }
    for tx in &common.senders {
        tx.close();
    }
}
