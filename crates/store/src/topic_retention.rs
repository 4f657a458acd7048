//! Retention per topic (the topic attributes `retention.ms` and
//! `retention.bytes`), beside the broker-wide `fileReservedTime`.
//!
//! For a queue of a topic with a rule, [`lowest_kept`] says the lowest
//! queue offset that must be kept: the first message younger than
//! `retention.ms` (by store time) and the first from which the queue's
//! records sum to at most `retention.bytes` (per queue, as Kafka's
//! `retention.bytes` is per partition). It reads the queue through
//! [`RetainedQueue`], so the same rule can govern data kept elsewhere (a
//! remote tier) later. Each owner shard raises its queues' floors to it
//! (`shard::topic_retention`) and publishes, in [`KeepFloors`], the lowest
//! CommitLog position a topic with a longer time rule than the broker's
//! still needs; the appender keeps every segment from there on unless the
//! disk is over `diskSpaceCleanForciblyRatio`.

use std::collections::HashMap;
use std::sync::Mutex;

/// The topic attribute holding a time limit in milliseconds (-1: none).
pub const RETENTION_MS_ATTRIBUTE: &str = "retention.ms";
/// The topic attribute holding a size limit per queue in bytes (-1: none).
pub const RETENTION_BYTES_ATTRIBUTE: &str = "retention.bytes";

/// A topic's own retention rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TopicRetention {
    /// Messages older than this (store time) go; `u64::MAX`: kept forever
    /// (until the disk-full forced clean). `None`: the broker-wide rule.
    pub ms: Option<u64>,
    /// Per queue: the oldest messages go while the queue's records sum to
    /// more than this. `None`: no size limit.
    pub bytes: Option<u64>,
}

impl TopicRetention {
    /// The rule of a topic with these attributes; `None` when it has none.
    pub fn from_attributes<'a>(get: impl Fn(&str) -> Option<&'a str>) -> Option<Self> {
        let ms = get(RETENTION_MS_ATTRIBUTE).and_then(|v| parse_value(v).ok());
        let bytes = get(RETENTION_BYTES_ATTRIBUTE).and_then(|v| parse_value(v).ok());
        let rule = Self {
            ms: ms.flatten().or(ms.map(|_| u64::MAX)),
            bytes: bytes.flatten(),
        };
        (rule.ms.is_some() || rule.bytes.is_some()).then_some(rule)
    }

    /// Whether it keeps the topic's messages longer than the broker-wide
    /// `fileReservedTime` (`file_reserved_ms`) would.
    pub fn outlives(&self, file_reserved_ms: u64) -> bool {
        self.ms.is_some_and(|ms| ms > file_reserved_ms)
    }
}

/// Checks a `retention.ms` / `retention.bytes` value: a positive integer,
/// or -1 for no limit (`Ok(None)`).
pub fn parse_value(value: &str) -> Result<Option<u64>, String> {
    match value.trim().parse::<i64>() {
        Ok(-1) => Ok(None),
        Ok(n) if n > 0 => Ok(Some(n as u64)),
        _ => Err(format!(
            "`{value}` is not a positive integer or -1 (no limit)"
        )),
    }
}

/// A queue as the retention rule reads it.
pub trait RetainedQueue {
    /// First readable queue offset.
    fn min_offset(&self) -> i64;
    /// Next queue offset to be written.
    fn max_offset(&self) -> i64;
    /// Store time of the message at `offset`; `None` when unreadable.
    fn store_time_ms(&self, offset: i64) -> Option<i64>;
    /// Stored bytes of the message at `offset`; `None` when unreadable.
    fn entry_bytes(&self, offset: i64) -> Option<u64>;
}

/// The first offset whose message was stored at or after `now_ms -
/// retention_ms` (store times taken as non-decreasing along the queue;
/// a message whose time cannot be read, such as an entry recovery marked
/// lost, counts as young: the search must never step past a young message
/// on a guess, so the floor waits there instead). Gallops from min, so a pass reads
/// about log2 of what expired since the last one (old records are cold:
/// each read may go to disk).
pub fn time_floor(queue: &impl RetainedQueue, retention_ms: u64, now_ms: i64) -> i64 {
    let oldest_kept = now_ms.saturating_sub(i64::try_from(retention_ms).unwrap_or(i64::MAX));
    let young = |offset: i64| {
        queue
            .store_time_ms(offset)
            .map_or(true, |t| t >= oldest_kept)
    };
    let (min, max) = (queue.min_offset(), queue.max_offset());
    // Invariant: offsets below `low` are old; from `high` on, young.
    let (mut low, mut high, mut step) = (min, min, 1i64);
    while high < max && !young(high) {
        low = high + 1;
        high = high.saturating_add(step).min(max);
        step = step.saturating_mul(2);
    }
    while low < high {
        let mid = low + (high - low) / 2;
        if young(mid) {
            high = mid;
        } else {
            low = mid + 1;
        }
    }
    low
}

/// The bytes of a queue's messages in `[from, upto)`, carried from pass to
/// pass so that each pass reads only what was appended or dropped since.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct SizeTally {
    from: i64,
    upto: i64,
    bytes: u64,
}

impl SizeTally {
    /// The first offset from which the queue holds at most `limit` bytes.
    pub fn floor(&mut self, queue: &impl RetainedQueue, limit: u64) -> i64 {
        let (min, max) = (queue.min_offset(), queue.max_offset());
        if self.from < min || self.upto > max || self.upto < self.from {
            // Dropped under it, or a new queue: count again from min.
            *self = Self {
                from: min,
                upto: min,
                bytes: 0,
            };
        }
        while self.upto < max {
            self.bytes += queue.entry_bytes(self.upto).unwrap_or(0);
            self.upto += 1;
        }
        while self.bytes > limit && self.from < self.upto {
            let bytes = queue.entry_bytes(self.from).unwrap_or(0);
            self.bytes = self.bytes.saturating_sub(bytes);
            self.from += 1;
        }
        self.from
    }
}

/// The lowest queue offset the rule keeps (never below the queue's min).
pub fn lowest_kept(
    rule: &TopicRetention,
    queue: &impl RetainedQueue,
    tally: &mut SizeTally,
    now_ms: i64,
) -> i64 {
    let mut floor = queue.min_offset();
    if let Some(ms) = rule.ms {
        floor = floor.max(time_floor(queue, ms, now_ms));
    }
    if let Some(limit) = rule.bytes {
        floor = floor.max(tally.floor(queue, limit));
    }
    floor.min(queue.max_offset().max(queue.min_offset()))
}

/// Milliseconds since the Unix epoch (store times are in these).
pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// What one shard's queues need of the CommitLog (positions; `i64::MAX`:
/// nothing).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Needs {
    /// Topics whose time rule outlives `fileReservedTime` need every
    /// segment from here on, however old.
    pub(crate) keep: i64,
    /// The same for object storage: topics whose time rule outlives
    /// `tieredStoreFileReservedTime` keep remote segments from here on.
    pub(crate) keep_remote: i64,
    /// No queue reads below here (every queue's first readable message, and
    /// what is not dispatched yet): segments wholly below may go.
    pub(crate) needed: i64,
    /// Pinned queues (a compaction topic's part not compacted yet) read
    /// the CommitLog itself from here on: segments from here stay local,
    /// however old, tiered storage or not.
    pub(crate) pinned: i64,
}

/// Per shard, what its queues need of the CommitLog.
#[derive(Debug, Default)]
pub(crate) struct KeepFloors {
    shards: Mutex<HashMap<usize, Needs>>,
    /// How many shards publish (set when the appender starts).
    shard_count: std::sync::OnceLock<usize>,
}

impl KeepFloors {
    pub(crate) fn set_shard_count(&self, count: usize) {
        let _ = self.shard_count.set(count);
    }

    /// What every shard needs together; `None` before the appender started
    /// or before every shard published.
    pub(crate) fn lowest_all(&self) -> Option<Needs> {
        self.lowest(*self.shard_count.get()?)
    }

    pub(crate) fn publish(&self, shard: usize, needs: Needs) {
        if let Ok(mut shards) = self.shards.lock() {
            shards.insert(shard, needs);
        }
    }

    /// What `shard_count` shards need together; `None` until every shard
    /// has published once (nothing may go on a guess).
    pub(crate) fn lowest(&self, shard_count: usize) -> Option<Needs> {
        let shards = self.shards.lock().ok()?;
        if (0..shard_count).any(|shard| !shards.contains_key(&shard)) {
            return None;
        }
        let mut all = Needs {
            keep: i64::MAX,
            keep_remote: i64::MAX,
            needed: i64::MAX,
            pinned: i64::MAX,
        };
        for needs in shards.values() {
            all.keep = all.keep.min(needs.keep);
            all.keep_remote = all.keep_remote.min(needs.keep_remote);
            all.needed = all.needed.min(needs.needed);
            all.pinned = all.pinned.min(needs.pinned);
        }
        Some(all)
    }
}

#[cfg(test)]
mod tests;
