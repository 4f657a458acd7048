//! Names every part of the store shares: who owns a queue, and how a queue
//! is keyed. They live here, below everything else, so that naming a queue
//! never makes the appender, recovery and the shards import one another.

use std::sync::Arc;

/// Which shard owns a queue: `owner(topic, queue_id) < shard_count`.
pub type QueueOwnerFn = Arc<dyn Fn(&str, i32) -> usize + Send + Sync>;

/// A queue as `(topic, queue id)`: the key of the appender's queue-offset
/// table and of recovery's ConsumeQueues.
pub(crate) type QueueKey = (Arc<str>, i32);
