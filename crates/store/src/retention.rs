//! Disk retention (RocketMQ's `CleanCommitLogService` and
//! `CleanConsumeQueueService`): which CommitLog segments may go, and when.
//!
//! The appender runs the CommitLog side every `clean_interval_ms` on its own
//! executor (it is the only writer of the segment list): it deletes whole
//! segments, oldest first and never the active (last) one, whose last
//! modification is older than `file_reserved_ms` when the local hour is in
//! `delete_when` or the store's disk is fuller than `disk_max_used_percent`.
//! Above `disk_clean_forcibly_percent` (and with `clean_forcibly` on) the
//! oldest segments go whatever their age, as in RocketMQ. Each shard then drops the ConsumeQueue
//! files of its queues whose entries all point below the new CommitLog
//! start and moves each queue's min offset up (see `shard::retention`).

use std::path::Path;
use std::time::SystemTime;

/// Default `fileReservedTime`: 72 hours.
pub const FILE_RESERVED_HOURS_DEFAULT: u64 = 72;
/// Default `deleteWhen`: 4 in the morning.
pub const DELETE_WHEN_DEFAULT: &str = "04";
/// Default `diskMaxUsedSpaceRatio`, in percent.
pub const DISK_MAX_USED_PERCENT_DEFAULT: u8 = 75;
/// Default disk usage above which even unexpired segments are deleted
/// (RocketMQ's `diskSpaceCleanForciblyRatio` system property, 0.85).
pub const DISK_CLEAN_FORCIBLY_PERCENT_DEFAULT: u8 = 85;
/// Default `cleanResourceInterval`.
pub const CLEAN_INTERVAL_MS_DEFAULT: u64 = 10_000;
/// Most segments deleted in one pass (`DELETE_FILES_BATCH_MAX`).
pub const DELETE_SEGMENTS_PER_PASS_MAX: usize = 10;

/// Retention settings, part of [`crate::StoreConfig`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetentionConfig {
    /// Age (since last modification) after which a segment may be deleted
    /// (`fileReservedTime`, hours; Ferrocket's `fileReservedTimeMs`).
    pub file_reserved_ms: u64,
    /// Local hours of the day (0..=23) when expired segments are deleted
    /// (`deleteWhen`, e.g. "04" or "01;13").
    pub delete_when: Vec<u8>,
    /// Above this disk usage of the store's file system (percent), delete
    /// without waiting for `delete_when` (`diskMaxUsedSpaceRatio`).
    pub disk_max_used_percent: u8,
    /// Above this disk usage (percent), delete the oldest segments even when
    /// not expired (`diskSpaceCleanForciblyRatio`), if `clean_forcibly`.
    pub disk_clean_forcibly_percent: u8,
    /// Allow that forced deletion (`cleanFileForciblyEnable`).
    pub clean_forcibly: bool,
    /// At this disk usage (percent) writes stop until space is freed
    /// (`diskSpaceWarningLevelRatio`); see `disk`.
    pub disk_warning_level_percent: u8,
    /// How often retention runs (`cleanResourceInterval`).
    pub clean_interval_ms: u64,
}

impl Default for RetentionConfig {
    fn default() -> Self {
        Self {
            file_reserved_ms: FILE_RESERVED_HOURS_DEFAULT * 3_600_000,
            delete_when: vec![4],
            disk_max_used_percent: DISK_MAX_USED_PERCENT_DEFAULT,
            disk_clean_forcibly_percent: DISK_CLEAN_FORCIBLY_PERCENT_DEFAULT,
            clean_forcibly: true,
            disk_warning_level_percent: crate::disk::DISK_WARNING_LEVEL_PERCENT_DEFAULT,
            clean_interval_ms: CLEAN_INTERVAL_MS_DEFAULT,
        }
    }
}

/// Parses `deleteWhen`: hours separated by ';' ("04", "01;13").
pub fn parse_delete_when(text: &str) -> Result<Vec<u8>, String> {
    let mut hours = Vec::new();
    for part in text.split(';').map(str::trim).filter(|p| !p.is_empty()) {
        match part.parse::<u8>() {
            Ok(hour) if hour < 24 => hours.push(hour),
            _ => return Err(format!("`{part}` is not an hour of the day (0..=23)")),
        }
    }
    if hours.is_empty() {
        return Err("no hour given".into());
    }
    Ok(hours)
}

/// Why a pass may delete segments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PassReason {
    /// The hour is in `delete_when`: expired segments go.
    pub(crate) time_to_delete: bool,
    /// The disk is over `disk_max_used_percent`: expired segments go at
    /// any hour.
    pub(crate) disk_full: bool,
    /// The disk is over `disk_clean_forcibly_percent`: with `clean_forcibly`
    /// the oldest segments go even when not expired.
    pub(crate) disk_forced: bool,
}

impl PassReason {
    /// Why a pass at local `hour` with `used` percent of the disk in use
    /// may delete.
    pub(crate) fn judge(config: &RetentionConfig, hour: u8, used: Option<u8>) -> Self {
        Self {
            time_to_delete: config.is_delete_hour(hour),
            disk_full: used.is_some_and(|used| used > config.disk_max_used_percent),
            disk_forced: used.is_some_and(|used| used > config.disk_clean_forcibly_percent),
        }
    }
}

impl RetentionConfig {
    /// How many of `mtimes` (segment last-modified times, oldest first; the
    /// last is the active segment) to delete from the front: every expired
    /// one up to the first that is not (no holes), all of them when forced,
    /// never the last, at most [`DELETE_SEGMENTS_PER_PASS_MAX`].
    pub(crate) fn segments_to_delete(
        &self,
        mtimes: &[SystemTime],
        now: SystemTime,
        reason: PassReason,
    ) -> usize {
        if !reason.time_to_delete && !reason.disk_full && !reason.disk_forced {
            return 0;
        }
        let forced = reason.disk_forced && self.clean_forcibly;
        let candidates = mtimes.len().saturating_sub(1);
        let mut count = 0;
        for mtime in &mtimes[..candidates] {
            let age_ms = now
                .duration_since(*mtime)
                .map(|d| d.as_millis())
                .unwrap_or(0);
            if !forced && age_ms < u128::from(self.file_reserved_ms) {
                break;
            }
            count += 1;
            if count >= DELETE_SEGMENTS_PER_PASS_MAX {
                break;
            }
        }
        count
    }

    /// Whether `hour` (local, 0..=23) is a deletion hour.
    pub(crate) fn is_delete_hour(&self, hour: u8) -> bool {
        self.delete_when.contains(&hour)
    }
}

/// The current local hour of the day (`UtilAll.isItTimeToDo`).
pub(crate) fn local_hour() -> u8 {
    // SAFETY: time() and localtime_r() write only into our locals.
    unsafe {
        let now = libc::time(std::ptr::null_mut());
        let mut tm: libc::tm = std::mem::zeroed();
        if libc::localtime_r(&now, &mut tm).is_null() {
            return 0;
        }
        tm.tm_hour.clamp(0, 23) as u8
    }
}

/// Percent of the file system holding `path` in use, or `None` when it
/// cannot be told (`UtilAll.getDiskPartitionSpaceUsedPercent`).
pub(crate) fn disk_used_percent(path: &Path) -> Option<u8> {
    crate::disk::disk_space(path).map(|space| space.used_percent)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn ages(now: SystemTime, secs: &[u64]) -> Vec<SystemTime> {
        secs.iter().map(|s| now - Duration::from_secs(*s)).collect()
    }

    #[test]
    fn deletes_expired_prefix_never_the_last() {
        let config = RetentionConfig {
            file_reserved_ms: 100_000,
            ..RetentionConfig::default()
        };
        let now = SystemTime::now();
        let time = PassReason::judge(&config, 4, Some(10));
        let idle = PassReason::judge(&config, 5, Some(10));
        assert!(time.time_to_delete && !time.disk_full && !idle.time_to_delete);
        // Old, old, young, old(active).
        let mtimes = ages(now, &[500, 300, 10, 900]);
        assert_eq!(config.segments_to_delete(&mtimes, now, time), 2);
        assert_eq!(config.segments_to_delete(&mtimes, now, idle), 0);
        // A young segment first stops the pass (no holes).
        let mtimes = ages(now, &[10, 500, 900]);
        assert_eq!(config.segments_to_delete(&mtimes, now, time), 0);
        // Only the active one: kept.
        assert_eq!(config.segments_to_delete(&ages(now, &[900]), now, time), 0);
        // Disk full: expired ones go at any hour; forced: the young too.
        let full = PassReason::judge(&config, 5, Some(80));
        assert!(full.disk_full && !full.disk_forced);
        let mtimes = ages(now, &[500, 20, 30]);
        assert_eq!(config.segments_to_delete(&mtimes, now, full), 1);
        let full = PassReason::judge(&config, 5, Some(90));
        assert!(full.disk_forced);
        let mtimes = ages(now, &[10, 20, 30]);
        assert_eq!(config.segments_to_delete(&mtimes, now, full), 2);
        let gentle = RetentionConfig {
            clean_forcibly: false,
            ..config.clone()
        };
        assert_eq!(gentle.segments_to_delete(&mtimes, now, full), 0);
        let many = ages(now, &[900; 30]);
        assert_eq!(
            config.segments_to_delete(&many, now, time),
            DELETE_SEGMENTS_PER_PASS_MAX
        );
    }

    #[test]
    fn parses_delete_when() {
        assert_eq!(parse_delete_when("04").unwrap(), vec![4]);
        assert_eq!(parse_delete_when("01; 13;").unwrap(), vec![1, 13]);
        assert!(parse_delete_when("24").is_err());
        assert!(parse_delete_when("").is_err());
        assert!(parse_delete_when("x").is_err());
        let config = RetentionConfig::default();
        assert!(config.is_delete_hour(4) && !config.is_delete_hour(5));
        assert!(local_hour() < 24);
    }

    #[test]
    fn disk_usage_is_a_percentage() {
        let dir = tempfile::tempdir().unwrap();
        let used = disk_used_percent(dir.path()).unwrap();
        assert!(used <= 100);
        assert_eq!(disk_used_percent(Path::new("/no/such/dir/here")), None);
    }
}
