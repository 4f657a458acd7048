//! Apache RocketMQ's timer checkpoint, `config/timercheck` (its
//! `TimerCheckpoint`): one 4 KiB page of big-endian longs, lastReadTimeMs
//! at 0, lastTimerLogFlushPos at 8, lastTimerQueueOffset at 16,
//! masterTimerQueueOffset at 24, then a data version (32, 40, 48).
//!
//! Ferrocket holds timers in its own store (`timer/`), not in Java's
//! timerlog and timerwheel; what both share is the timer queue
//! (`rmq_sys_wheel_timer` queue 0), which keeps every timer message. This
//! file says where to resume reading it when the store changes hands:
//!
//! - **Ferrocket on a store a Java broker had last** (the file is Java's:
//!   Ferrocket marks its own): a timer in an entry
//!   below Java's queue offset whose second came before Java's read time was
//!   delivered by Java and is skipped; every other one is taken, due or not
//!   (what Java's own restart does).
//! - **Java on a Ferrocket store**: Ferrocket writes this file as its timer
//!   progresses. With no timer pending, it points past the last entry taken
//!   (nothing comes twice); with timers pending, at the queue's start (Java
//!   clamps it to the first entry kept): no pending timer is lost, and timers
//!   delivered already may be delivered again.

use std::path::Path;

use ferrocket_store::{write_atomic, StoreError};

/// The file under `config/` (Java's `BrokerPathConfigHelper.getTimerCheckPath`).
pub const JAVA_TIMER_CHECK_FILE: &str = "timercheck";
/// Java maps one page.
const FILE_BYTES: usize = 4096;
/// Ferrocket writes this as the data version's stateVersion (byte 32),
/// which a Java broker overwrites at its first flush: a file without it is
/// Java's.
const FERROCKET_MARK: i64 = i64::from_be_bytes(*b"FRCKTIMR");
/// Java's default `timerPrecisionMs`: the width of one wheel slot.
const SLOT_MS: i64 = 1_000;

/// The part of Java's timer checkpoint that says what was delivered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JavaTimerCheck {
    /// Every timer whose slot is before this was delivered.
    pub last_read_time_ms: i64,
    /// Timer-queue entries below this are in the timer's own log.
    pub queue_offset: i64,
}

impl JavaTimerCheck {
    /// Reads `config_dir/timercheck` when a Java broker wrote it last;
    /// `None` when it is missing, short or Ferrocket's.
    pub fn read_javas(config_dir: &Path) -> Option<Self> {
        let (check, mark) = Self::read(config_dir)?;
        (mark != FERROCKET_MARK).then_some(check)
    }

    /// Reads `config_dir/timercheck` and its stateVersion; `None` when it
    /// is missing or short.
    fn read(config_dir: &Path) -> Option<(Self, i64)> {
        let bytes = std::fs::read(config_dir.join(JAVA_TIMER_CHECK_FILE)).ok()?;
        let long_at = |at: usize| -> Option<i64> {
            let raw: [u8; 8] = bytes.get(at..at + 8)?.try_into().ok()?;
            Some(i64::from_be_bytes(raw))
        };
        let last = long_at(16)?;
        let master = long_at(24)?;
        let check = Self {
            last_read_time_ms: long_at(0)?,
            queue_offset: last.min(master).max(0),
        };
        Some((check, long_at(32)?))
    }

    /// Writes it as Java does (one page; both queue offsets the same, no
    /// timer log of Java's to point into).
    pub fn write(&self, config_dir: &Path) -> Result<(), StoreError> {
        let mut page = vec![0u8; FILE_BYTES];
        page[0..8].copy_from_slice(&self.last_read_time_ms.to_be_bytes());
        page[16..24].copy_from_slice(&self.queue_offset.to_be_bytes());
        page[24..32].copy_from_slice(&self.queue_offset.to_be_bytes());
        page[32..40].copy_from_slice(&FERROCKET_MARK.to_be_bytes());
        write_atomic(&config_dir.join(JAVA_TIMER_CHECK_FILE), &page, false)
    }

    /// Whether Java delivered the timer of the entry at `queue_offset` due
    /// at `deliver_at_ms`.
    pub fn delivered(&self, queue_offset: i64, deliver_at_ms: i64) -> bool {
        let slot = deliver_at_ms - deliver_at_ms.rem_euclid(SLOT_MS);
        queue_offset < self.queue_offset && slot < self.last_read_time_ms
    }

    /// What Ferrocket's timer state says for a Java broker: `pending`
    /// timers held, every entry below `next_queue_offset` taken, `now_ms`.
    pub fn of_ferrocket(pending: u64, next_queue_offset: i64, now_ms: i64) -> Self {
        let read_from = now_ms - now_ms.rem_euclid(SLOT_MS);
        Self {
            last_read_time_ms: read_from,
            queue_offset: if pending == 0 { next_queue_offset } else { 0 },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_in_javas_layout() {
        let dir = tempfile::tempdir().unwrap();
        let check = JavaTimerCheck::of_ferrocket(0, 42, 1_700_000_000_500);
        check.write(dir.path()).unwrap();
        let bytes = std::fs::read(dir.path().join(JAVA_TIMER_CHECK_FILE)).unwrap();
        assert_eq!(bytes.len(), FILE_BYTES);
        assert_eq!(&bytes[0..8], &1_700_000_000_000i64.to_be_bytes());
        assert_eq!(&bytes[24..32], &42i64.to_be_bytes());
        assert_eq!(
            JavaTimerCheck::read(dir.path()).map(|(c, _)| c),
            Some(check)
        );
        // Ours, not Java's: nothing to import.
        assert_eq!(JavaTimerCheck::read_javas(dir.path()), None);
        let mut page = bytes.clone();
        page[32..40].copy_from_slice(&0i64.to_be_bytes());
        std::fs::write(dir.path().join(JAVA_TIMER_CHECK_FILE), page).unwrap();
        assert_eq!(JavaTimerCheck::read_javas(dir.path()), Some(check));
        assert_eq!(JavaTimerCheck::of_ferrocket(3, 42, 0).queue_offset, 0);
    }

    #[test]
    fn delivered_means_below_the_offset_and_before_the_read_slot() {
        let check = JavaTimerCheck {
            last_read_time_ms: 10_000,
            queue_offset: 5,
        };
        assert!(check.delivered(4, 9_999));
        assert!(!check.delivered(4, 10_000));
        assert!(!check.delivered(5, 1_000));
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(JavaTimerCheck::read_javas(dir.path()), None);
        std::fs::write(dir.path().join(JAVA_TIMER_CHECK_FILE), [0u8; 20]).unwrap();
        assert_eq!(JavaTimerCheck::read_javas(dir.path()), None);
    }
}
