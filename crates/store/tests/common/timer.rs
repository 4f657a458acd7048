//! Helpers shared by the TimerStore tests (timer_wheel.rs,
//! timer_recovery.rs, timer_truncation.rs), included with `#[path]`.
#![allow(dead_code)]

use std::fs;
use std::path::Path;

use ferrocket_store::timer::{AddOutcome, TimerConfig, TimerEntry, TimerStore, TIMER_RECORD_BYTES};

/// A fixed "now" the tests count from.
pub const T0: i64 = 1_700_000_000_000;

/// A config with small log segments (64 timers).
pub fn config(max_delay_ms: u64) -> TimerConfig {
    TimerConfig {
        log_segment_bytes: 64 * TIMER_RECORD_BYTES as u64,
        ..TimerConfig::with_max_delay_ms(max_delay_ms)
    }
}

pub fn open(dir: &Path, cfg: &TimerConfig) -> TimerStore {
    TimerStore::open(dir, cfg.clone()).unwrap().0
}

/// Adds timers `(deliver_at_ms, physical_offset)` (size 10 each) at `now`.
pub fn add_all(store: &mut TimerStore, timers: &[(i64, i64)], now: i64) {
    for &(at, phy) in timers {
        let got = store.add(at, phy, 10, now).unwrap();
        assert_eq!(got, AddOutcome::Added { deliver_at_ms: at });
    }
}

pub fn keys(entries: &[TimerEntry]) -> Vec<(i64, i64)> {
    entries
        .iter()
        .map(|e| (e.deliver_at_ms, e.physical_offset))
        .collect()
}

/// Segments in the timer log directory.
pub fn log_files(dir: &Path) -> usize {
    fs::read_dir(dir.join("log")).unwrap().count()
}
