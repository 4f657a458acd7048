//! Ferrocket's storage: the CommitLog (one per broker, one appender), the
//! per-queue ConsumeQueues, the checkpoint and crash recovery, plus atomic
//! JSON config files for the broker. Beside them: the IndexFile (`index`),
//! the timer store (`timer`), the epoch file of controller mode (`epoch`),
//! retention by age and per topic (`retention`, `topic_retention`), damaged
//! ranges and their quarantine, and the store's side of tiered storage
//! (`tier`: the manifest and the read-through cache; `ferrocket-tier` does
//! the I/O). Depends on `ferrocket-protocol` only.
//!
//! # Threads
//!
//! - **Appender**: one glommio `LocalExecutor` thread of its own
//!   ([`AppenderParts::start_appender`]). It alone writes the CommitLog and
//!   assigns physical and queue offsets.
//! - **Shards**: each broker shard (a glommio executor per core) holds a
//!   [`ShardStore`]. It sends appends to the appender and owns the
//!   ConsumeQueues of its queues (`owner(topic, queue_id) == shard`).
//! - **Any thread**: [`StoreHandle`] and [`CommitLogReader`] are
//!   `Send + Sync`; reads go through shared read-only memory maps.
//!
//! # Rings
//!
//! Each shard has a bounded request ring to the appender and a bounded result
//! ring back (capacity `ring_capacity`). They are glommio `shared_channel`s:
//! a lock-free single-producer/single-consumer ring plus an eventfd wake-up
//! of the peer executor when it sleeps. The first design named crossbeam rings; a
//! crossbeam queue is just as lock-free but cannot wake a parked glommio
//! executor, so the appender would have to spin or poll on a timer. A full
//! ring makes `append` wait (backpressure); nothing is ever dropped. When
//! the appender runs on the only shard's executor (`appenderInShard`) the
//! rings are glommio `local_channel`s instead, which wake the other side in
//! the same executor turn (`ring`).
//!
//! The result ring also carries ConsumeQueue dispatches: after a batch is
//! written (async flush) or flushed (sync flush), the appender sends each
//! queue's entries to its owner shard, which appends them to the
//! ConsumeQueue and calls the broker's dispatch listener (to wake long
//! polls). A consumer therefore never sees an entry before its bytes are
//! readable, and under sync flush never before they are durable.
//!
//! # Failures
//!
//! Sync flush: an append is answered only after the fdatasync covering its
//! batch (group commit); a flush slower than `timeout_ms` is answered with
//! [`AppendStatus::FlushDiskTimeout`] (stored; response code 10). A failed
//! write or fdatasync answers the batch with an error, and the appender then
//! refuses every later append with [`StoreError::Unavailable`] (code 14)
//! until a restart, whose recovery finds the valid end. The storage seam
//! ([`StorageIo`], [`FaultyIo`]) lets tests inject those faults.
//!
//! # Recent data stays in memory
//!
//! Buffered mode writes through the page cache, which the segment maps read.
//! Direct mode (O_DIRECT) bypasses it, so the appender keeps the most recent
//! `hot_tail_bytes` of written batches in memory and readers try that first
//! (one short mutex-guarded lookup, Direct mode only).
//!
//! Retention ([`retention`]): the appender deletes expired CommitLog
//! segments (never the active one) every `clean_interval_ms`; each shard
//! then deletes its ConsumeQueue files that point only below the new start
//! and moves their min offsets up. [`ShardStore::delete_topic_queues`]
//! drops a deleted topic's queues and restarts their offsets at 0.
//!
//! Known limits: one batch write in flight at a time (Direct mode is bound
//! by device write latency); recovery rebuilds tags codes as
//! `tags_code(TAGS)`, and may re-index a deleted topic's records that are
//! still in the CommitLog past the checkpoint. The IndexFile (`index`, its
//! retention included) and the timer store (`timer`) are fed by the broker.
//!
//! # Using it (broker)
//!
//! ```ignore
//! let (store, parts) = MessageStore::open(config)?;               // recovery
//! let owner: QueueOwnerFn = Arc::new(move |topic, qid| hash(topic, qid) % shards);
//! let (appender, ports) = parts.start_appender(shards, owner, Placement::Unbound)?;
//! // move ports[i] to shard i's executor, then inside it:
//! let shard = ShardStore::connect(port).await;
//! shard.set_dispatch_listener(|entry| wake_long_polls(entry));
//! let mut rec = BytesMut::new();
//! NewRecord { .. }.encode(0, 0, &mut rec)?;                         // placeholder offsets
//! let r = shard.append(AppendRequest::new(topic, qid, rec, tags_code)).await?;
//! let cq = shard.consume_queue(&topic, qid)?;                      // owner shard only
//! for e in cq.get(offset, 32) { shard.read_records(e.physical_offset, e.size as usize); }
//! // shutdown: every shard `shard.shutdown().await`, then `appender.join()`.
//! ```

mod appender;
mod checkpoint;
mod checkpoint_writer;
mod commitlog;
mod config;
mod consume_queue;
mod damage;
mod disk;
pub mod epoch;
mod error;
mod failure_log;
mod fault;
mod files;
pub mod index;
mod io;
mod json_file;
mod messages;
mod names;
mod queue_floors;
mod recovery;
pub mod retention;
mod ring;
mod shard;
mod stop;
mod store;
pub mod tier;
pub mod timer;
pub mod topic_retention;
mod truncate;
mod types;

pub use checkpoint::StoreCheckpoint;
pub use commitlog::CommitLogReader;
pub use config::*;
pub use consume_queue::{ConsumeQueue, CqEntry, CQ_ENTRY_BYTES, LOST_TAGS_CODE};
pub use damage::{DamagedRange, QUARANTINE_DIR};
pub use disk::{disk_free_bytes, disk_used_bytes, DISK_WARNING_LEVEL_PERCENT_DEFAULT};
pub use error::StoreError;
pub use failure_log::{FailureLevel, RepeatedFailure, FAILURE_LOG_INTERVAL_MS};
pub use fault::{FaultPlan, FaultyIo};
pub use files::offset_file_name;
pub use index::{IndexConfig, IndexError, IndexService};
pub use io::{GlommioIo, IoBuffer, LocalBoxFuture, SegmentFile, StorageIo};
pub use json_file::{write_atomic, ConfigDir};
pub use messages::{AppendRequest, AppendResult, AppendStatus, DispatchEntry, ReplicaChunk};
pub use names::{check_queue_name, queue_dir, topic_dir};
pub use queue_floors::QUEUE_FLOORS_FILE;
pub use retention::{parse_delete_when, RetentionConfig};
pub use shard::{ShardPort, ShardStore};
pub use store::{AppenderHandle, AppenderParts, MessageStore, StoreHandle, APPENDER_THREAD_NAME};
pub use timer::{AddOutcome, TimerConfig, TimerEntry, TimerError, TimerRecovery, TimerStore};
pub use topic_retention::{TopicRetention, RETENTION_BYTES_ATTRIBUTE, RETENTION_MS_ATTRIBUTE};
pub use truncate::{commitlog_end, truncate_commitlog};
pub use types::QueueOwnerFn;

/// glommio's placement, re-exported for `start_appender`.
pub use glommio::Placement;
