//! Compaction topics (RocketMQ 5.1, `cleanup.policy=COMPACTION`): per
//! queue, the newest message of each key (`KEYS`) is kept in a compacted
//! file of the queue's own (`file`), rewritten in the background by
//! passes on a blocking thread (`pass`); reads of the compacted range
//! come from that file with their original queue offsets, and the rest
//! from the ConsumeQueue as usual (`read`).
//!
//! Java copies every message of such a topic into a CompactionLog and
//! serves all reads from it; Ferrocket keeps only the compacted range
//! apart and reads the uncompacted tail from the CommitLog itself.

pub(crate) mod file;
pub(crate) mod pass;
pub(crate) mod read;

use std::cell::RefCell;
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use ferrocket_protocol::body::TopicConfig;
use ferrocket_store::ShardStore;

use file::{CompactedFile, SharedFile};
use pass::{PassInput, PassOutcome};

/// Java's `TopicAttributes.CLEANUP_POLICY_ATTRIBUTE`.
pub const CLEANUP_POLICY_ATTRIBUTE: &str = "cleanup.policy";
/// Its values (`CleanupPolicy`); `DELETE` is the default.
pub const CLEANUP_POLICIES: [&str; 2] = ["DELETE", "COMPACTION"];
/// `compactionScheduleInternal` (sic, Java's key): 15 minutes.
pub const COMPACTION_INTERVAL_MS_DEFAULT: u64 = 15 * 60 * 1000;
/// `maxOffsetMapSize`: 100 MiB, shared by the shards' passes.
pub const MAX_OFFSET_MAP_BYTES_DEFAULT: u64 = 100 * 1024 * 1024;
/// The least key-map share a shard's pass gets.
pub const KEY_MAP_BYTES_MIN: usize = 1 << 20;
/// Most ConsumeQueue entries one pass takes (about 2 MiB of entries).
pub const PASS_ENTRIES_MAX: usize = 100_000;
/// Most passes over one queue in one round.
pub const PASSES_PER_ROUND_MAX: usize = 10;
/// Most offloaded bytes (tiered storage) one pass brings back into the
/// read-through cache before it runs (less with a smaller cache, so what
/// it fetched is still there when it reads); its range ends after them.
pub const PASS_FETCH_BYTES_MAX: usize = 8 << 20;

/// The compaction settings (Java's `MessageStoreConfig` keys).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompactionConfig {
    /// `enableCompaction`: off, compaction topics read as normal ones.
    pub enabled: bool,
    /// `compactionScheduleInternal`: ms between passes.
    pub interval_ms: u64,
    /// `maxOffsetMapSize`: bytes the key maps of all shards may count.
    pub max_offset_map_bytes: u64,
}

impl Default for CompactionConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            interval_ms: COMPACTION_INTERVAL_MS_DEFAULT,
            max_offset_map_bytes: MAX_OFFSET_MAP_BYTES_DEFAULT,
        }
    }
}

impl CompactionConfig {
    /// One shard's key-map bound.
    pub fn key_map_bytes(&self, shards: usize) -> usize {
        let share = self.max_offset_map_bytes / shards.max(1) as u64;
        usize::try_from(share)
            .unwrap_or(usize::MAX)
            .max(KEY_MAP_BYTES_MIN)
    }
}

/// Whether `config` is a compaction topic.
pub fn is_compaction_topic(config: &TopicConfig) -> bool {
    config
        .attributes
        .get(CLEANUP_POLICY_ATTRIBUTE)
        .is_some_and(|p| p == "COMPACTION")
}

/// A queue's compacted file as loaded, or why it could not be.
#[derive(Clone)]
enum Loaded {
    File(SharedFile),
    Failed,
}

/// One shard's compacted files of the queues it owns.
#[derive(Default)]
pub(crate) struct Compactions {
    queues: RefCell<HashMap<(String, i32), Loaded>>,
}

impl Compactions {
    /// The compacted file of a queue, loaded on first use; `None` when it
    /// cannot be read (logged once: reads then go to the ConsumeQueue).
    pub fn file(&self, root: &Path, topic: &str, queue_id: i32) -> Option<SharedFile> {
        let key = (topic.to_string(), queue_id);
        if let Some(loaded) = self.queues.borrow().get(&key) {
            return match loaded {
                Loaded::File(file) => Some(Arc::clone(file)),
                Loaded::Failed => None,
            };
        }
        let loaded =
            match file::queue_dir(root, topic, queue_id).and_then(|d| CompactedFile::load(&d)) {
                Ok(file) => Loaded::File(Arc::new(file)),
                Err(why) => {
                    tracing::error!(topic, queue_id, %why, "compacted file unreadable");
                    Loaded::Failed
                }
            };
        self.queues.borrow_mut().insert(key, loaded.clone());
        match loaded {
            Loaded::File(file) => Some(file),
            Loaded::Failed => None,
        }
    }

    fn replace(&self, topic: &str, queue_id: i32, file: CompactedFile) {
        let key = (topic.to_string(), queue_id);
        self.queues
            .borrow_mut()
            .insert(key, Loaded::File(Arc::new(file)));
    }

    /// Forgets the queues of topics no longer compacted (their files stay).
    pub fn retain_topics(&self, keep: impl Fn(&str) -> bool) {
        self.queues.borrow_mut().retain(|(topic, _), _| keep(topic));
    }
}

/// One pass over a queue this shard owns: the entries past the compacted
/// range, at most [`PASS_ENTRIES_MAX`], folded into the compacted file on
/// a blocking thread. Returns whether entries remain past the new range.
pub(crate) async fn compact_queue(
    store: &ShardStore,
    compactions: &Compactions,
    (topic, queue_id): (&str, i32),
    key_map_bytes: usize,
) -> Result<bool, String> {
    let root = store.root_dir().to_path_buf();
    let Some(old) = compactions.file(&root, topic, queue_id) else {
        return Ok(false);
    };
    let queue = store
        .consume_queue(topic, queue_id)
        .map_err(|e| e.to_string())?;
    let start = old.upto().max(queue.min_offset());
    let mut entries = queue.get(start, PASS_ENTRIES_MAX);
    fetch_offloaded(store, &mut entries).await;
    if entries.is_empty() {
        return Ok(false);
    }
    let input = PassInput {
        dir: file::queue_dir(&root, topic, queue_id)?,
        old,
        start,
        entries,
        reader: store.reader(),
        key_map_bytes,
    };
    let outcome: Option<PassOutcome> = glommio::executor()
        .spawn_blocking(move || pass::run(input))
        .await?;
    let Some(outcome) = outcome else {
        return Ok(false);
    };
    tracing::info!(
        topic,
        queue_id,
        upto = outcome.file.upto(),
        kept = outcome.kept,
        dropped = outcome.dropped,
        "compacted"
    );
    let more = outcome.file.upto() < queue.max_offset();
    compactions.replace(topic, queue_id, outcome.file);
    Ok(more)
}

/// Brings the range's records that only object storage holds into the
/// read-through cache (off this executor), at most
/// [`fetch_budget`] bytes: the range is cut after them. A store error
/// stops the fetching; the pass's range then ends before what it could not
/// read (`pass`), and a later pass tries again.
async fn fetch_offloaded(store: &ShardStore, entries: &mut Vec<ferrocket_store::CqEntry>) {
    let reader = store.reader();
    let Some(tier) = reader.tier() else {
        return;
    };
    let budget = fetch_budget(tier.config.read_cache_bytes, tier.config.read_ahead_bytes);
    let local_min = reader.min_offset();
    let mut fetched = 0usize;
    for (index, entry) in entries.iter().enumerate() {
        // Offloaded segments are the CommitLog's oldest: past the local
        // start every record is on the local disk.
        if entry.physical_offset >= local_min {
            return;
        }
        let size = usize::try_from(entry.size).unwrap_or(0);
        if entry.is_lost() || size == 0 {
            continue;
        }
        if fetched >= budget {
            entries.truncate(index);
            return;
        }
        let read =
            crate::services::records::try_read_bytes_through(store, entry.physical_offset, size)
                .await;
        if let Err(reject) = read {
            tracing::warn!(remark = %reject.remark, "compaction: offloaded record not fetched; compacted later");
            return;
        }
        fetched += size;
    }
}

/// Record bytes a pass fetches: half the read-through cache less the chunk
/// read ahead past them, at most [`PASS_FETCH_BYTES_MAX`] (the first
/// record is fetched whatever this says, so every pass moves on).
fn fetch_budget(cache_bytes: usize, read_ahead_bytes: usize) -> usize {
    (cache_bytes / 2)
        .saturating_sub(read_ahead_bytes)
        .min(PASS_FETCH_BYTES_MAX)
}

#[cfg(test)]
mod tests;
