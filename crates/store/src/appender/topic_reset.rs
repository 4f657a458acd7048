//! Resetting a deleted topic's queue offsets (Java's
//! `removeQueueFromTopicQueueTable`), so a topic re-created under the same
//! name starts at queue offset 0.
//!
//! The owner shard deletes its ConsumeQueues of the topic and sends an
//! [`Envelope::ResetTopic`](crate::messages::Envelope) over its request
//! ring, in order with its appends. The appender (it alone owns the
//! queue-offset table) applies every reset of a batch before it numbers any
//! append of that batch, and answers the shard with a
//! [`ResetDone`](crate::messages::ResetDone) naming the CommitLog position
//! where it did. Dispatches for those queues below that position carry old
//! offsets and are dropped by the owner; from it on they start at 0. The
//! `ResetDone` goes out with the batch's first answer, on the same ring as
//! (and never after) the batch's dispatches, so a shard that receives a
//! later dispatch has always seen it.

use std::path::Path;

use foldhash::HashMap;

use crate::json_file::ConfigDir;
use crate::queue_floors::QueueFloors;
use crate::types::{QueueKey, QueueOwnerFn};

/// Drops the queues of `topic` owned by `shard` from the offset table and
/// records CommitLog position `pos` as their floor.
pub(crate) fn apply(
    table: &mut HashMap<QueueKey, i64>,
    floors: &mut QueueFloors,
    owner: &QueueOwnerFn,
    topic: &str,
    shard: usize,
    pos: i64,
) {
    table.retain(|(t, q), _| {
        let reset = **t == *topic && owner(t, *q) == shard;
        if reset {
            floors.set(t, *q, pos);
        }
        !reset
    });
    tracing::info!(topic = %topic, shard, position = pos, "queue offsets reset");
}

/// Persists the floors after resets (blocking, a rare admin step) before
/// any append numbered after them is written, so recovery never re-indexes
/// the old records into the new queues. Floors below the CommitLog's start
/// (`commitlog_min`) guard nothing any more and go.
pub(crate) fn persist(floors: &mut QueueFloors, commitlog_min: i64, config_dir: &Path) {
    floors.prune(commitlog_min);
    if let Err(e) = ConfigDir::open(config_dir).and_then(|dir| floors.store(&dir)) {
        tracing::error!(error = %e, "cannot persist queue floors");
    }
}
