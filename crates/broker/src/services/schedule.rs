//! One shard's delay-level scheduler state (Java's `ScheduleMessageService`
//! offset table): how far each level this shard owns has delivered.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;

use ferrocket_protocol::body::DataVersion;
use ferrocket_runtime::shard::owner_shard;
use ferrocket_runtime::sync::Notify;

use crate::services::delay_levels::{DelayLevels, DelayOffsets};
use crate::services::topics::SCHEDULE_TOPIC;

/// One shard's scheduler state.
pub(crate) struct ScheduleState {
    pub levels: DelayLevels,
    /// Next queue offset to deliver, for the levels this shard owns.
    pub progress: RefCell<DelayOffsets>,
    pub changed: Cell<bool>,
    /// Shard 0, at shutdown: the progress other shards reported.
    pub reports: RefCell<BTreeMap<usize, DelayOffsets>>,
    pub reported: Notify,
    /// Shard 0: the version written into delayOffset.json.
    pub data_version: RefCell<DataVersion>,
    /// Per level: its head (the message at its delivery offset) as last
    /// read and found not due, so it is read once per head rather than
    /// every look (an offloaded head would be fetched again each time).
    heads: RefCell<BTreeMap<i32, HeadDue>>,
}

/// A level's head that was not due when read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct HeadDue {
    /// Its queue offset and CommitLog offset (a cut log may put another
    /// message at the same queue offset).
    pub offset: i64,
    pub physical_offset: i64,
    pub due_ms: i64,
}

impl ScheduleState {
    pub fn new(index: usize, count: usize, levels: &DelayLevels, start: &DelayOffsets) -> Self {
        let progress = levels
            .levels()
            .filter(|level| owner_shard(SCHEDULE_TOPIC, level - 1, count) == index)
            .map(|level| (level, start.get(&level).copied().unwrap_or(0)))
            .collect();
        Self {
            levels: levels.clone(),
            progress: RefCell::new(progress),
            changed: Cell::new(false),
            reports: RefCell::new(BTreeMap::new()),
            reported: Notify::default(),
            data_version: RefCell::new(DataVersion::default()),
            heads: RefCell::new(BTreeMap::new()),
        }
    }

    /// This shard's levels' progress, and whether it moved since the last
    /// `take_changed` look.
    pub fn progress(&self, take_changed: bool) -> (DelayOffsets, bool) {
        let changed = if take_changed {
            self.changed.replace(false)
        } else {
            self.changed.get()
        };
        (self.progress.borrow().clone(), changed)
    }

    /// Whether the level's head at (`offset`, `physical_offset`) is known
    /// not to be due at `now`, without reading it again. A remembered due
    /// time more than `delay_ms` ahead (the clock went back) is not
    /// trusted: the head is read again, as a due time is corrected then.
    pub fn head_waits(
        &self,
        level: i32,
        offset: i64,
        physical_offset: i64,
        now: i64,
        delay_ms: i64,
    ) -> bool {
        self.heads.borrow().get(&level).is_some_and(|head| {
            head.offset == offset
                && head.physical_offset == physical_offset
                && head.due_ms > now
                && head.due_ms <= now.saturating_add(delay_ms)
        })
    }

    /// Remembers a level's head read and found not due.
    pub fn remember_head(&self, level: i32, head: HeadDue) {
        self.heads.borrow_mut().insert(level, head);
    }

    pub fn advance(&self, level: i32, offset: i64) {
        self.progress.borrow_mut().insert(level, offset);
        self.changed.set(true);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_head_not_due_is_read_once_until_due() {
        let levels = DelayLevels::parse("1s 10s").unwrap();
        let state = ScheduleState::new(0, 1, &levels, &DelayOffsets::new());
        assert!(!state.head_waits(2, 0, 100, 1_000, 10_000), "never read");
        let head = HeadDue {
            offset: 0,
            physical_offset: 100,
            due_ms: 11_000,
        };
        state.remember_head(2, head);
        assert!(state.head_waits(2, 0, 100, 1_000, 10_000));
        assert!(state.head_waits(2, 0, 100, 10_999, 10_000));
        assert!(!state.head_waits(2, 0, 100, 11_000, 10_000), "due: read it");
        assert!(!state.head_waits(1, 0, 100, 1_000, 10_000), "another level");
        assert!(!state.head_waits(2, 1, 100, 1_000, 10_000), "the next head");
        assert!(
            !state.head_waits(2, 0, 200, 1_000, 10_000),
            "another message"
        );
        // The clock went back past the delay: read again (it is corrected).
        assert!(!state.head_waits(2, 0, 100, 500, 10_000));
    }
}
