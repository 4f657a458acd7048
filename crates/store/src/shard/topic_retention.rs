//! Retention per topic on each shard, for the queues it owns: every
//! `clean_interval_ms` it raises the floor of each queue of a topic with a
//! rule to [`lowest_kept`] and publishes the lowest CommitLog position the
//! topics whose time rule outlives `fileReservedTime`, and the pinned
//! queues ([`PinSource`]), still need (see `crate::topic_retention`).

use std::collections::HashMap;
use std::fs;
use std::sync::Arc;

use super::{ShardInner, ShardStore};
use crate::commitlog::LocalReader;
use crate::consume_queue::ConsumeQueue;
use crate::error::StoreError;
use crate::topic_retention::{lowest_kept, Needs, RetainedQueue, SizeTally, TopicRetention};

/// The topics with a rule of their own, as the broker's topic table says.
pub type RetentionSource = Box<dyn Fn() -> Vec<(Arc<str>, TopicRetention)>>;

/// Topics whose queues must keep their CommitLog entries from an offset on,
/// however old (a compaction topic's part not compacted yet): per topic,
/// the offset of each queue that has one; a queue not listed keeps all.
pub type PinSource = Box<dyn Fn() -> Vec<(Arc<str>, HashMap<i32, i64>)>>;

/// Per-shard state of retention per topic.
#[derive(Default)]
pub(super) struct TopicRetentionState {
    pub(super) source: std::cell::RefCell<Option<RetentionSource>>,
    pins: std::cell::RefCell<Option<PinSource>>,
    tallies: std::cell::RefCell<HashMap<(Arc<str>, i32), SizeTally>>,
    /// Every queue on disk has been opened once: from then on the open
    /// queues are all there are (new ones open on their first dispatch).
    opened_all: std::cell::Cell<bool>,
}

impl TopicRetentionState {
    /// A deleted topic's size tallies go: a topic re-created with the name
    /// counts its bytes afresh (an old tally would expire its new messages).
    pub(super) fn forget_topic(&self, topic: &str) {
        self.tallies
            .borrow_mut()
            .retain(|(name, _), _| &**name != topic);
    }
}

/// A local queue as the rule reads it.
struct LocalQueue<'a> {
    queue: &'a ConsumeQueue,
    reader: &'a LocalReader,
    shared: &'a Arc<crate::commitlog::CommitLogShared>,
}

impl LocalQueue<'_> {
    /// A message in an offloaded segment not in the read-through cache:
    /// its time is unknown now, so it counts as young (nothing goes on a
    /// guess) while the tier fetches it for a later pass, off this shard.
    fn offloaded_time(&self, physical_offset: i64, size: usize) -> Option<i64> {
        let shared = self.shared;
        if physical_offset >= shared.min_offset() || physical_offset < shared.logical_min() {
            return None;
        }
        let tier = Arc::clone(shared.tier.get()?);
        glommio::spawn_local(async move {
            let _ = tier.fetch(physical_offset, size).await;
        })
        .detach();
        Some(i64::MAX)
    }
}

impl RetainedQueue for LocalQueue<'_> {
    fn min_offset(&self) -> i64 {
        self.queue.min_offset()
    }

    fn max_offset(&self) -> i64 {
        self.queue.max_offset()
    }

    fn store_time_ms(&self, offset: i64) -> Option<i64> {
        let entry = self.queue.entry(offset).filter(|e| !e.is_lost())?;
        let size = usize::try_from(entry.size).ok()?;
        let Some(bytes) = self.reader.read(entry.physical_offset, size) else {
            return self.offloaded_time(entry.physical_offset, size);
        };
        // STORETIMESTAMP follows a born host of at most 20 bytes.
        let needed = ferrocket_protocol::record::BORN_HOST_POS + 28;
        (bytes.len() >= needed).then(|| crate::messages::store_timestamp_of(&bytes))
    }

    fn entry_bytes(&self, offset: i64) -> Option<u64> {
        let entry = self.queue.entry(offset)?;
        u64::try_from(entry.size).ok()
    }
}

/// The lowest positions topics with long time rules keep.
struct Keeps {
    local: i64,
    remote: i64,
}

impl ShardInner {
    /// One pass at `now_ms`: raises floors and publishes what this shard's
    /// queues need of the CommitLog. Returns how many queues' floors moved.
    pub(super) fn topic_retention_pass(&self, now_ms: i64) -> Result<usize, StoreError> {
        let rules = match &*self.topic_retention.source.borrow() {
            Some(source) => source(),
            None => Vec::new(),
        };
        let (raised, keeps, mut result) = self.apply_rules(&rules, now_ms);
        let pinned = self.pinned_position().unwrap_or_else(|e| {
            result = Err(e);
            i64::MIN
        });
        // Without rules only the broker-wide one frees segments (and the
        // scan of every queue is skipped); unknown: nothing goes early.
        let needed = match rules.is_empty() {
            true => i64::MIN,
            false => self.lowest_needed().unwrap_or_else(|e| {
                result = Err(e);
                i64::MIN
            }),
        };
        let needs = Needs {
            keep: keeps.local,
            keep_remote: keeps.remote,
            needed,
            pinned,
        };
        self.ctx.shared.topic_keep.publish(self.shard_id, needs);
        self.topic_retention
            .tallies
            .borrow_mut()
            .retain(|(topic, _), _| rules.iter().any(|(t, _)| t == topic));
        result.map(|()| raised)
    }

    /// Applies every rule; answers how many floors moved, the lowest
    /// positions the rules outliving `fileReservedTime` (local) and
    /// `tieredStoreFileReservedTime` (remote) keep, and the first error.
    fn apply_rules(
        &self,
        rules: &[(Arc<str>, TopicRetention)],
        now_ms: i64,
    ) -> (usize, Keeps, Result<(), StoreError>) {
        let local_ms = self.ctx.config.retention.file_reserved_ms;
        let remote_ms = self
            .ctx
            .shared
            .tier
            .get()
            .map(|t| t.config.remote_reserved_ms);
        let mut keeps = Keeps {
            local: i64::MAX,
            remote: i64::MAX,
        };
        let (mut raised, mut result) = (0, Ok(()));
        for (topic, rule) in rules {
            if self.retention.deleted.borrow().contains_key(&**topic) {
                continue;
            }
            let lowest = match self.apply_rule(topic, rule, now_ms) {
                Ok((moved, lowest)) => {
                    raised += moved;
                    lowest
                }
                Err(e) => {
                    result = Err(e);
                    i64::MIN
                }
            };
            if rule.outlives(local_ms) {
                keeps.local = keeps.local.min(lowest);
            }
            if remote_ms.is_some_and(|ms| rule.outlives(ms)) {
                keeps.remote = keeps.remote.min(lowest);
            }
        }
        (raised, keeps, result)
    }

    /// The lowest CommitLog position the pinned queues of this shard keep
    /// (see [`PinSource`]); `i64::MAX`: none.
    fn pinned_position(&self) -> Result<i64, StoreError> {
        let pins = match &*self.topic_retention.pins.borrow() {
            Some(source) => source(),
            None => return Ok(i64::MAX),
        };
        let mut lowest = i64::MAX;
        for (topic, from) in &pins {
            if self.retention.deleted.borrow().contains_key(&**topic) {
                continue;
            }
            for queue_id in self.owned_queue_ids(topic)? {
                let queue = self.queue(topic, queue_id)?;
                let start = from.get(&queue_id).copied().unwrap_or(0);
                let start = start.max(queue.min_offset());
                match queue.entry(start) {
                    Some(entry) => lowest = lowest.min(entry.physical_offset),
                    // Not readable: keep everything rather than guess.
                    None if start < queue.max_offset() => return Ok(i64::MIN),
                    None => {}
                }
            }
        }
        Ok(lowest)
    }

    /// The lowest CommitLog position a queue of this shard still reads
    /// (its first readable message), and at most what is dispatched here.
    fn lowest_needed(&self) -> Result<i64, StoreError> {
        if !self.topic_retention.opened_all.get() {
            for (topic, queue_id) in self.owned_queues_on_disk()? {
                if !self.retention.deleted.borrow().contains_key(topic.as_str()) {
                    self.queue(&topic, queue_id)?;
                }
            }
            self.topic_retention.opened_all.set(true);
        }
        let mut needed = self.applied.get();
        for queues in self.queues.borrow().values() {
            for queue in queues.values() {
                let (min, max) = (queue.min_offset(), queue.max_offset());
                match queue.entry(min) {
                    Some(entry) => needed = needed.min(entry.physical_offset),
                    None if min < max => return Ok(i64::MIN),
                    None => {}
                }
            }
        }
        Ok(needed)
    }

    /// Raises the floors of `topic`'s queues owned here; answers how many
    /// moved and the lowest CommitLog position they still hold.
    fn apply_rule(
        &self,
        topic: &Arc<str>,
        rule: &TopicRetention,
        now_ms: i64,
    ) -> Result<(usize, i64), StoreError> {
        let (mut moved, mut lowest) = (0, i64::MAX);
        for queue_id in self.owned_queue_ids(topic)? {
            let queue = self.queue(topic, queue_id)?;
            let view = LocalQueue {
                queue: &queue,
                reader: &self.reader,
                shared: &self.ctx.shared,
            };
            let floor = {
                let mut tallies = self.topic_retention.tallies.borrow_mut();
                let tally = tallies.entry((Arc::clone(topic), queue_id)).or_default();
                lowest_kept(rule, &view, tally, now_ms)
            };
            if floor > queue.min_offset() {
                queue.raise_floor(floor)?;
                moved += 1;
            }
            if let Some(entry) = queue.entry(queue.min_offset()) {
                lowest = lowest.min(entry.physical_offset);
            }
        }
        Ok((moved, lowest))
    }

    /// Ids of `topic`'s queues with a directory, owned by this shard.
    fn owned_queue_ids(&self, topic: &str) -> Result<Vec<i32>, StoreError> {
        let dir = crate::names::topic_dir(&self.ctx.config.consumequeue_dir(), topic)?;
        let Ok(entries) = fs::read_dir(&dir) else {
            return Ok(Vec::new());
        };
        Ok(entries
            .flatten()
            .filter_map(|e| e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()))
            .filter(|id| (self.ctx.owner)(topic, *id) == self.shard_id)
            .collect())
    }
}

impl ShardStore {
    /// Where this shard's retention passes find the topics with a rule of
    /// their own (the broker reads them from its topic table). Without one
    /// no topic has a rule.
    pub fn set_topic_retention_source(
        &self,
        source: impl Fn() -> Vec<(Arc<str>, TopicRetention)> + 'static,
    ) {
        *self.inner.topic_retention.source.borrow_mut() = Some(Box::new(source));
    }

    /// Where this shard's retention passes find the queues whose entries
    /// must stay past every age rule (the broker's compaction topics).
    pub fn set_queue_pin_source(
        &self,
        source: impl Fn() -> Vec<(Arc<str>, HashMap<i32, i64>)> + 'static,
    ) {
        *self.inner.topic_retention.pins.borrow_mut() = Some(Box::new(source));
    }

    /// Runs this shard's retention per topic now, as of `now_ms` (it also
    /// runs every `cleanResourceInterval`); returns how many queues' floors
    /// moved.
    pub fn run_topic_retention(&self, now_ms: i64) -> Result<usize, StoreError> {
        self.inner.topic_retention_pass(now_ms)
    }
}
