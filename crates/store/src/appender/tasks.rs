//! The appender's shared state and its background tasks: the periodic
//! fdatasync (async flush mode) and the periodic checkpoint, both on the
//! appender's executor next to the batch loop.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use crate::checkpoint_writer::CheckpointWriter;
use crate::commitlog::CommitLogShared;
use crate::error::StoreError;
use crate::failure_log::{FailureLevel, RepeatedFailure};
use crate::io::SegmentFile;
use crate::messages::ShardBatch;
use crate::ring::RingTx;
use crate::stop::Stop;

/// The segment the appender is filling.
pub(crate) struct OpenSegment {
    pub(crate) start: i64,
    pub(crate) file: Rc<dyn SegmentFile>,
}

/// State shared by the batch loop and its flush/checkpoint tasks.
pub(crate) struct Common {
    pub(crate) shared: Arc<CommitLogShared>,
    pub(crate) current: RefCell<Rc<OpenSegment>>,
    /// Async flush: segments the appender has left whose last writes no
    /// fdatasync has covered yet, oldest first (the flush task syncs them
    /// before the current one; a roll does not wait for it).
    pub(crate) unsynced: RefCell<Vec<Rc<dyn SegmentFile>>>,
    pub(crate) failed: RefCell<Option<String>>,
    /// Every dispatch below this position has been sent to its shard.
    pub(crate) dispatched_upto: Cell<i64>,
    pub(crate) flush_stop: Stop,
    pub(crate) checkpoint_stop: Stop,
    pub(crate) retention_stop: Stop,
    pub(crate) disk_stop: Stop,
    pub(crate) senders: Vec<RingTx<ShardBatch>>,
}

impl Common {
    /// The state of an appender at CommitLog position `end`, filling
    /// `current`, answering the shards through `senders`.
    pub(crate) fn new(
        shared: Arc<CommitLogShared>,
        current: OpenSegment,
        end: i64,
        senders: Vec<RingTx<ShardBatch>>,
    ) -> Rc<Self> {
        shared.topic_keep.set_shard_count(senders.len());
        Rc::new(Common {
            shared,
            current: RefCell::new(Rc::new(current)),
            unsynced: RefCell::new(Vec::new()),
            failed: RefCell::new(None),
            dispatched_upto: Cell::new(end),
            flush_stop: Stop::default(),
            checkpoint_stop: Stop::default(),
            retention_stop: Stop::default(),
            disk_stop: Stop::default(),
            senders,
        })
    }

    pub(crate) fn fail(&self, reason: String) {
        tracing::error!(%reason, "CommitLog appender stops accepting writes");
        let mut failed = self.failed.borrow_mut();
        if failed.is_none() {
            *failed = Some(reason);
        }
    }

    pub(crate) fn failure(&self) -> Option<StoreError> {
        self.failed
            .borrow()
            .as_ref()
            .map(|reason| StoreError::Unavailable(format!("CommitLog failed earlier: {reason}")))
    }

    pub(crate) async fn send(&self, shard: usize, batch: ShardBatch) {
        if let Some(tx) = self.senders.get(shard) {
            // A shard that went away no longer needs answers.
            tx.send(batch).await;
        }
    }
}

/// Async flush: fdatasync the current segment every `interval_ms`.
pub(crate) async fn flush_task(common: Rc<Common>, interval_ms: u64) {
    let interval = Duration::from_millis(interval_ms);
    while !common.flush_stop.sleep(interval).await {
        if common.failed.borrow().is_some() {
            break;
        }
        if let Err(e) = sync_written(&common).await {
            common.fail(format!("periodic fdatasync: {e}"));
        }
    }
}

/// Makes everything written so far durable: fdatasyncs the segments left
/// since the last flush, oldest first, then the current one, and
/// publishes the durable position. The position, the left segments and
/// the current one are taken together, so a roll during the syncs cannot
/// leave bytes below the published position unsynced.
pub(crate) async fn sync_written(common: &Common) -> std::io::Result<()> {
    let written = common.shared.written();
    if written <= common.shared.durable() {
        return Ok(());
    }
    let mut files = common.unsynced.take();
    files.push(Rc::clone(&common.current.borrow().file));
    for file in files {
        file.sync_data().await?;
    }
    // The position was taken before the syncs: it never passed written.
    assert!(
        written <= common.shared.written(),
        "written went back during a flush"
    );
    common.shared.publish_durable(written);
    debug_assert!(common.shared.durable() >= written, "durable moved back");
    Ok(())
}

/// Every `interval_ms`: nudge idle shards' dispatch watermarks, then write
/// the checkpoint off the executor thread.
pub(crate) async fn checkpoint_task(
    common: Rc<Common>,
    writer: Arc<CheckpointWriter>,
    interval_ms: u64,
) {
    let interval = Duration::from_millis(interval_ms);
    let failures = RepeatedFailure::new("checkpoint write", FailureLevel::Warn);
    while !common.checkpoint_stop.sleep(interval).await {
        let watermark = common.dispatched_upto.get();
        for tx in &common.senders {
            // Only a hint: a full ring already carries newer watermarks.
            let _ = tx.try_send(ShardBatch::watermark_only(watermark));
        }
        let durable = common.shared.durable();
        let writer = Arc::clone(&writer);
        let outcome = glommio::executor()
            .spawn_blocking(move || writer.write(durable))
            .await;
        failures.record(&outcome);
    }
}
