//! Shared checkpoint bookkeeping: each shard publishes how far its
//! ConsumeQueues are flushed; the appender (periodically) and the final
//! shutdown write the checkpoint file from those and the CommitLog's durable
//! position. Values only grow.

use std::path::PathBuf;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Mutex;

use crate::checkpoint::{now_ms, StoreCheckpoint};
use crate::error::StoreError;

pub(crate) struct CheckpointWriter {
    path: PathBuf,
    /// Per shard: every dispatch for CommitLog positions below this value
    /// is in that shard's ConsumeQueue files, flushed.
    shard_flushed: Vec<AtomicI64>,
    last: Mutex<StoreCheckpoint>,
}

impl CheckpointWriter {
    pub(crate) fn new(path: PathBuf, shard_count: usize, recovered_end: i64) -> Self {
        let now = now_ms();
        Self {
            path,
            shard_flushed: (0..shard_count)
                .map(|_| AtomicI64::new(recovered_end))
                .collect(),
            last: Mutex::new(StoreCheckpoint {
                commitlog_flushed: recovered_end,
                consumequeue_flushed: recovered_end,
                commitlog_timestamp_ms: now,
                consumequeue_timestamp_ms: now,
            }),
        }
    }

    /// A shard reports its ConsumeQueues flushed below `watermark`.
    pub(crate) fn shard_flushed(&self, shard: usize, watermark: i64) {
        assert!(
            shard < self.shard_flushed.len(),
            "shard {shard} out of range"
        );
        assert!(watermark >= 0, "a flushed watermark below zero");
        self.shard_flushed[shard].fetch_max(watermark, Ordering::AcqRel);
    }

    fn consumequeue_flushed(&self) -> i64 {
        self.shard_flushed
            .iter()
            .map(|slot| slot.load(Ordering::Acquire))
            .min()
            .unwrap_or(0)
    }

    /// Writes the checkpoint if it moved (blocking I/O).
    pub(crate) fn write(&self, commitlog_flushed: i64) -> Result<(), StoreError> {
        assert!(
            commitlog_flushed >= 0,
            "a flushed CommitLog position below zero"
        );
        let consumequeue_flushed = self.consumequeue_flushed();
        let mut last = match self.last.lock() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        };
        let now = now_ms();
        let mut next = *last;
        if commitlog_flushed > next.commitlog_flushed {
            next.commitlog_flushed = commitlog_flushed;
            next.commitlog_timestamp_ms = now;
        }
        if consumequeue_flushed > next.consumequeue_flushed {
            next.consumequeue_flushed = consumequeue_flushed;
            next.consumequeue_timestamp_ms = now;
        }
        if next == *last {
            return Ok(());
        }
        debug_assert!(
            next.commitlog_flushed >= last.commitlog_flushed
                && next.consumequeue_flushed >= last.consumequeue_flushed,
            "a checkpoint never goes back"
        );
        next.store(&self.path)?;
        *last = next;
        Ok(())
    }

    pub(crate) fn last(&self) -> StoreCheckpoint {
        match self.last.lock() {
            Ok(guard) => *guard,
            Err(poisoned) => *poisoned.into_inner(),
        }
    }
}
