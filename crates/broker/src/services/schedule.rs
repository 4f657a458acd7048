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

    pub fn advance(&self, level: i32, offset: i64) {
        self.progress.borrow_mut().insert(level, offset);
        self.changed.set(true);
    }
}
