//! Whether the store's disk has room for writes (RocketMQ's `RunningFlags`
//! DISK_FULL bit). Set when an allocation fails for lack of space (ENOSPC on
//! a new CommitLog segment, a ConsumeQueue, index or timer file) or when the
//! file system's used share passes `disk_warning_level_percent`; cleared by
//! the appender's disk check once usage is below that level again and a
//! whole segment fits. While set, appends are refused with
//! [`StoreError::DiskFull`] and nothing else changes: reads, pulls and
//! queries go on.

use std::ffi::CString;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

use crate::error::StoreError;

/// Default used share of the store's file system (percent) at which writes
/// stop (RocketMQ's `diskSpaceWarningLevelRatio`, 0.90).
pub const DISK_WARNING_LEVEL_PERCENT_DEFAULT: u8 = 90;
/// How often the appender re-reads the file system's free space.
pub const DISK_CHECK_INTERVAL_MS: u64 = 1_000;

/// The store-wide disk-full flag, shared by the appender and every shard.
#[derive(Debug, Default)]
pub(crate) struct DiskState {
    full: AtomicBool,
    /// How many times `full` changed: lets a registration tell the name
    /// server its routes changed (the topic table's version did not).
    changes: AtomicU64,
    reason: Mutex<String>,
    /// Writes held for a reason other than space (an empty tiered store
    /// that has not read the object store's manifest yet): the disk check
    /// does not lift it, [`DiskState::release`] does.
    held: AtomicBool,
    held_reason: Mutex<String>,
}

impl DiskState {
    pub(crate) fn is_full(&self) -> bool {
        self.full.load(Ordering::Acquire) || self.held.load(Ordering::Acquire)
    }

    /// Refuses writes (answered SERVICE_NOT_AVAILABLE with `reason`, and
    /// routed read-only) until [`DiskState::release`].
    pub(crate) fn hold(&self, reason: &str) {
        if let Ok(mut held) = self.held_reason.lock() {
            reason.clone_into(&mut held);
        }
        if !self.held.swap(true, Ordering::AcqRel) {
            self.changes.fetch_add(1, Ordering::AcqRel);
            tracing::warn!(%reason, "store refusing writes");
        }
    }

    /// Ends [`DiskState::hold`].
    pub(crate) fn release(&self) {
        if self.held.swap(false, Ordering::AcqRel) {
            self.changes.fetch_add(1, Ordering::AcqRel);
            tracing::info!("store accepting writes");
        }
    }

    pub(crate) fn changes(&self) -> u64 {
        self.changes.load(Ordering::Acquire)
    }

    /// Stops writes; logs once per change.
    pub(crate) fn mark_full(&self, reason: &str) {
        if let Ok(mut held) = self.reason.lock() {
            reason.clone_into(&mut held);
        }
        if !self.full.swap(true, Ordering::AcqRel) {
            self.changes.fetch_add(1, Ordering::AcqRel);
            tracing::warn!(%reason, "store disk full: refusing writes until space is freed");
        }
    }

    /// Lets writes in again; logs once per change.
    pub(crate) fn mark_ok(&self, free_bytes: u64) {
        if self.full.swap(false, Ordering::AcqRel) {
            self.changes.fetch_add(1, Ordering::AcqRel);
            tracing::info!(free_bytes, "store disk has room again: accepting writes");
        }
    }

    /// The answer to an append while the disk is full.
    pub(crate) fn refusal(&self) -> StoreError {
        if self.held.load(Ordering::Acquire) {
            let reason = match self.held_reason.lock() {
                Ok(reason) => reason.clone(),
                Err(_) => String::new(),
            };
            return StoreError::Unavailable(reason);
        }
        let reason = match self.reason.lock() {
            Ok(reason) => reason.clone(),
            Err(_) => String::new(),
        };
        StoreError::DiskFull(reason)
    }
}

/// What statvfs says of the file system holding a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct DiskSpace {
    /// Percent of the blocks in use by files (Java's measure).
    pub(crate) used_percent: u8,
    /// Bytes an unprivileged writer can still allocate.
    pub(crate) free_bytes: u64,
    /// Bytes held by files (Java's `getTotalSpace - getFreeSpace`).
    pub(crate) used_bytes: u64,
}

/// The space of the file system holding `path`, or `None` when it cannot be
/// told (`UtilAll.getDiskPartitionSpaceUsedPercent`).
pub(crate) fn disk_space(path: &Path) -> Option<DiskSpace> {
    use std::os::unix::ffi::OsStrExt;
    let c_path = CString::new(path.as_os_str().as_bytes()).ok()?;
    // SAFETY: statvfs writes only into `stats`; the path is NUL-terminated.
    let stats = unsafe {
        let mut stats: libc::statvfs = std::mem::zeroed();
        if libc::statvfs(c_path.as_ptr(), &mut stats) != 0 {
            return None;
        }
        stats
    };
    let total = stats.f_blocks as u128;
    if total == 0 {
        return None;
    }
    // Used as Java counts it (`getTotalSpace - getFreeSpace`): blocks held
    // by files, not the blocks reserved for root, which on some hosts are
    // most of the disk.
    let used = total.saturating_sub(stats.f_bfree as u128);
    let available = stats.f_bavail as u128 * stats.f_frsize as u128;
    let used_bytes = used * stats.f_frsize as u128;
    Some(DiskSpace {
        used_percent: ((used * 100) / total).min(100) as u8,
        free_bytes: available.min(u128::from(u64::MAX)) as u64,
        used_bytes: used_bytes.min(u128::from(u64::MAX)) as u64,
    })
}

/// Bytes in use on the file system holding `path` (RocketMQ's
/// `rocketmq_storage_size`), or `None` when it cannot be told.
pub fn disk_used_bytes(path: &Path) -> Option<u64> {
    disk_space(path).map(|space| space.used_bytes)
}

/// Bytes an unprivileged writer can still allocate on the file system
/// holding `path`, or `None` when it cannot be told.
pub fn disk_free_bytes(path: &Path) -> Option<u64> {
    disk_space(path).map(|space| space.free_bytes)
}

/// The disk check's verdict: whether writes may go on, given the space
/// now, the level, and the bytes the next segment needs.
pub(crate) fn has_room(space: DiskSpace, warning_level_percent: u8, needed_bytes: u64) -> bool {
    space.used_percent < warning_level_percent && space.free_bytes >= needed_bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn room_needs_both_the_level_and_the_bytes() {
        let space = |used_percent, free_bytes| DiskSpace {
            used_percent,
            free_bytes,
            used_bytes: 0,
        };
        assert!(has_room(space(50, 10 << 20), 90, 4 << 20));
        assert!(!has_room(space(90, 10 << 20), 90, 4 << 20));
        assert!(!has_room(space(50, 3 << 20), 90, 4 << 20));
    }

    #[test]
    fn a_hold_outlasts_the_disk_check_until_released() {
        let disk = DiskState::default();
        disk.hold("waiting for the manifest");
        disk.mark_ok(1 << 30);
        assert!(disk.is_full(), "the space check does not lift a hold");
        let refusal = disk.refusal();
        assert!(matches!(refusal, StoreError::Unavailable(_)), "{refusal}");
        assert!(refusal.to_string().contains("manifest"), "{refusal}");
        disk.release();
        assert!(!disk.is_full());
        assert_eq!(disk.changes(), 2);
    }

    #[test]
    fn the_flag_carries_its_reason_into_the_refusal() {
        let disk = DiskState::default();
        assert!(!disk.is_full());
        disk.mark_full("no space for segment 4096");
        assert!(disk.is_full());
        let refusal = disk.refusal();
        assert!(refusal.is_disk_full());
        assert!(refusal.to_string().contains("segment 4096"), "{refusal}");
        disk.mark_full("again");
        disk.mark_ok(1 << 30);
        assert!(!disk.is_full());
        assert_eq!(disk.changes(), 2, "changes, not calls, are counted");
    }

    #[test]
    fn space_of_a_real_directory() {
        let dir = tempfile::tempdir().unwrap();
        let space = disk_space(dir.path()).unwrap();
        assert!(space.used_percent <= 100);
        assert_eq!(disk_space(Path::new("/no/such/dir/here")), None);
    }
}
