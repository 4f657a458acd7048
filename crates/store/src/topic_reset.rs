//! Resetting a deleted topic's queue offsets (Java's
//! `removeQueueFromTopicQueueTable`), so a topic re-created under the same
//! name starts at queue offset 0.
//!
//! The owner shard deletes its ConsumeQueues of the topic and posts a reset
//! here; the appender applies pending resets before its next batch (it
//! alone owns the queue-offset table) and records the CommitLog position
//! where it did. Dispatches for those queues below that position carry old
//! offsets and are dropped by the owner; from it on they start at 0. The
//! appender records the position before sending any dispatch of the batch,
//! so a shard that receives a later dispatch always sees it.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};

use crate::commitlog::CommitLogShared;
use crate::json_file::ConfigDir;
use crate::queue_floors::QueueFloors;
use crate::types::{QueueKey, QueueOwnerFn};

/// A topic's queues owned by one shard.
pub(crate) type ResetKey = (Arc<str>, usize);

#[derive(Default)]
pub(crate) struct ResetBoard {
    pending: Mutex<Vec<ResetKey>>,
    /// CommitLog position from which the reset queues count from 0 again.
    done: Mutex<HashMap<ResetKey, i64>>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    match mutex.lock() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    }
}

impl ResetBoard {
    /// Owner shard: asks for `topic`'s queues owned by `shard` to restart.
    pub(crate) fn request(&self, topic: &str, shard: usize) {
        let key: ResetKey = (Arc::from(topic), shard);
        lock(&self.done).remove(&key);
        lock(&self.pending).push(key);
    }

    /// Appender: the resets to apply now.
    pub(crate) fn take_pending(&self) -> Vec<ResetKey> {
        std::mem::take(&mut *lock(&self.pending))
    }

    /// Appender: `key` was applied; appends from `position` on are new.
    pub(crate) fn applied(&self, key: ResetKey, position: i64) {
        lock(&self.done).insert(key, position);
    }

    /// Owner shard: where the reset of `topic` took effect, once it has.
    pub(crate) fn position(&self, topic: &str, shard: usize) -> Option<i64> {
        lock(&self.done).get(&(Arc::from(topic), shard)).copied()
    }

    /// Owner shard: the reset no longer matters (all older dispatches seen).
    pub(crate) fn forget(&self, topic: &str, shard: usize) {
        lock(&self.done).remove(&(Arc::from(topic), shard));
    }
}

/// Appender: applies every pending reset at CommitLog position `pos`:
/// drops the queues from the offset table and records `pos` as their floor.
/// The floors are persisted first (blocking, a rare admin step), so
/// recovery never re-indexes the old records into the new queues.
pub(crate) fn apply_pending(
    shared: &CommitLogShared,
    table: &mut HashMap<QueueKey, i64>,
    floors: &mut QueueFloors,
    owner: &QueueOwnerFn,
    pos: i64,
    config_dir: &Path,
) {
    let pending = shared.resets.take_pending();
    if pending.is_empty() {
        return;
    }
    for (topic, shard) in &pending {
        table.retain(|(t, q), _| {
            let reset = **t == **topic && owner(t, *q) == *shard;
            if reset {
                floors.set(t, *q, pos);
            }
            !reset
        });
        tracing::info!(topic = %topic, shard, position = pos, "queue offsets reset");
    }
    floors.prune(shared.min_offset());
    if let Err(e) = ConfigDir::open(config_dir).and_then(|dir| floors.store(&dir)) {
        tracing::error!(error = %e, "cannot persist queue floors");
    }
    for key in pending {
        shared.resets.applied(key, pos);
    }
}
