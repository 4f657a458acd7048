//! The CommitLog half of retention (`CleanCommitLogService`), run by the
//! appender on its executor every `clean_interval_ms`: it alone changes the
//! segment list, so removing segments cannot race a roll.

use std::path::PathBuf;
use std::rc::Rc;
use std::time::{Duration, SystemTime};

use super::tasks::Common;
use crate::config::StoreConfig;
use crate::disk::{disk_space, has_room, DISK_CHECK_INTERVAL_MS};
use crate::files::offset_file_name;
use crate::files::ALLOCATION_CHUNK_BYTES;
use crate::retention::{disk_used_percent, local_hour, PassReason, DELETE_SEGMENTS_PER_PASS_MAX};
use crate::topic_retention::Needs;

/// Runs retention passes until stopped.
pub(crate) async fn retention_task(common: Rc<Common>, config: StoreConfig) {
    let interval = Duration::from_millis(config.retention.clean_interval_ms);
    while !common.retention_stop.sleep(interval).await {
        let deleted = delete_expired_segments(&common, &config).await;
        if deleted > 0 {
            tracing::info!(
                deleted,
                min_offset = common.shared.min_offset(),
                "CommitLog retention deleted segments"
            );
        }
    }
}

/// One pass: removes expired (or, on a full disk, the oldest) segments from
/// the published list, then unlinks their files. Returns how many went.
pub(crate) async fn delete_expired_segments(common: &Common, config: &StoreConfig) -> usize {
    let segments = common.shared.segment_list();
    if segments.len() <= 1 {
        return 0;
    }
    let dir = config.commitlog_dir();
    let paths: Vec<PathBuf> = segments
        .iter()
        .map(|segment| dir.join(offset_file_name(segment.start)))
        .collect();
    let retention = config.retention.clone();
    let root = config.root_dir.clone();
    // stat() calls off the executor thread.
    let looked = glommio::executor()
        .spawn_blocking(move || {
            let mtimes: Vec<SystemTime> = paths
                .iter()
                .map(|path| {
                    std::fs::metadata(path)
                        .and_then(|meta| meta.modified())
                        .unwrap_or_else(|_| SystemTime::now())
                })
                .collect();
            let used = disk_used_percent(&root);
            (mtimes, used)
        })
        .await;
    let (mtimes, used) = looked;
    let reason = PassReason::judge(&retention, local_hour(), used);
    if reason.disk_full {
        tracing::warn!(
            used_percent = used.unwrap_or(0),
            max_percent = retention.disk_max_used_percent,
            "store disk over diskMaxUsedSpaceRatio; deleting old CommitLog segments"
        );
    }
    let count = retention.segments_to_delete(&mtimes, SystemTime::now(), reason);
    let starts: Vec<i64> = segments.iter().map(|segment| segment.start).collect();
    let needs = common.shared.topic_keep.lowest(common.senders.len());
    let forced = reason.disk_forced && retention.clean_forcibly;
    let count = allowed_by_queues(&starts, count, needs, reason, forced);
    let pinned = match forced {
        true => i64::MAX,
        false => needs.map_or(i64::MIN, |needs| needs.pinned),
    };
    let count = tier_gate(common, &segments, &mtimes, count).min(below(&starts, pinned));
    if count == 0 {
        return 0;
    }
    let removed = common.shared.remove_front(count);
    assert!(
        !common.shared.segment_list().is_empty(),
        "the active segment stays"
    );
    debug_assert!(removed.len() <= count, "no more than asked go");
    if let Some(tier) = common.shared.tier.get() {
        tier.status
            .dropped_segments
            .fetch_add(removed.len() as u64, std::sync::atomic::Ordering::Relaxed);
    }
    let paths: Vec<PathBuf> = removed
        .iter()
        .map(|segment| dir.join(offset_file_name(segment.start)))
        .collect();
    // Readers keep their maps of these; the files go away once unmapped.
    drop(removed);
    let sync_dir = dir.clone();
    let unlinked = glommio::executor()
        .spawn_blocking(move || {
            for path in &paths {
                if let Err(e) = std::fs::remove_file(path) {
                    tracing::error!(path = %path.display(), error = %e, "cannot delete segment");
                }
            }
            crate::json_file::sync_dir(&sync_dir).map(|_| paths.len())
        })
        .await;
    match unlinked {
        Ok(count) => count,
        Err(e) => {
            tracing::error!(error = %e, "CommitLog directory sync after retention failed");
            count
        }
    }
}

/// How many segments (of those starting at `starts`) go, given that
/// `count` expired by age and what the shards' queues need (`None`: not
/// known yet, so only a forced clean deletes): topics whose retention.ms
/// outlives `fileReservedTime` keep segments from `keep` on, pinned queues
/// (compaction topics) from `pinned` on; segments wholly
/// below `needed` (no queue reads them any more: their topics' own rules
/// expired them) go at a deletion hour or on a full disk, however young. A
/// forced clean (the disk over `diskSpaceCleanForciblyRatio`) wins over all.
fn allowed_by_queues(
    starts: &[i64],
    count: usize,
    needs: Option<Needs>,
    reason: PassReason,
    forced: bool,
) -> usize {
    if forced {
        return count;
    }
    let Some(needs) = needs else { return 0 };
    let below = |position: i64| below(starts, position);
    let by_age = count.min(below(needs.keep.min(needs.pinned)));
    if by_age < count {
        tracing::debug!(
            keep = needs.keep,
            kept = count - by_age,
            "CommitLog segments kept past fileReservedTime for topics' retention.ms"
        );
    }
    let unread = match reason.time_to_delete || reason.disk_full {
        true => below(needs.needed),
        false => 0,
    };
    by_age.max(unread).min(DELETE_SEGMENTS_PER_PASS_MAX)
}

/// How many of the segments starting at `starts` lie wholly below
/// `position` (segment i ends where segment i + 1 starts).
fn below(starts: &[i64], position: i64) -> usize {
    starts.windows(2).take_while(|p| p[1] <= position).count()
}

/// With tiered storage on: how many of the oldest segments go, given that
/// retention chose `count`. The local budget (size, age) adds offloaded
/// segments; every segment that goes must have a verified remote copy
/// ([`crate::tier::Offloaded::may_drop_locally`]), so the run stops at
/// the first without one. Off: `count` as it is.
fn tier_gate(
    common: &Common,
    segments: &crate::commitlog::SegmentList,
    mtimes: &[SystemTime],
    count: usize,
) -> usize {
    let Some(tier) = common.shared.tier.get() else {
        return count;
    };
    let seg = common.shared.segment_bytes;
    let sealed: Vec<(u64, SystemTime)> = mtimes[..mtimes.len().saturating_sub(1)]
        .iter()
        .map(|mtime| (seg, *mtime))
        .collect();
    let total = seg * segments.len() as u64;
    let want = count
        .max(tier.config.over_budget(&sealed, total, SystemTime::now()))
        .min(crate::retention::DELETE_SEGMENTS_PER_PASS_MAX)
        .min(sealed.len());
    segments
        .iter()
        .take(want)
        .take_while(|segment| tier.offloaded.may_drop_locally(segment.start))
        .count()
}

/// Re-reads the store disk's space every second: stops writes at
/// `disk_warning_level_percent`, and lets them in again (after that, or
/// after an allocation found no room) once usage is below the level and a
/// whole segment, with room for queue files beside it, fits.
pub(crate) async fn disk_check_task(common: Rc<Common>, config: StoreConfig) {
    let interval = Duration::from_millis(DISK_CHECK_INTERVAL_MS);
    let level = config.retention.disk_warning_level_percent;
    let needed = config.segment_bytes + 4 * ALLOCATION_CHUNK_BYTES;
    while !common.disk_stop.sleep(interval).await {
        let root = config.root_dir.clone();
        let space = glommio::executor()
            .spawn_blocking(move || disk_space(&root))
            .await;
        let Some(space) = space else { continue };
        let disk = &common.shared.disk;
        if has_room(space, level, needed) {
            disk.mark_ok(space.free_bytes);
        } else if space.used_percent >= level {
            disk.mark_full(&format!(
                "{}% of the store's file system is used (diskSpaceWarningLevelRatio is {level}%)",
                space.used_percent
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queues_keep_segments_unless_forced() {
        let starts = [0, 100, 200, 300];
        let needs = |keep, needed| {
            Some(Needs {
                keep,
                keep_remote: keep,
                needed,
                pinned: i64::MAX,
            })
        };
        let time = PassReason {
            time_to_delete: true,
            disk_full: false,
            disk_forced: false,
        };
        let idle = PassReason {
            time_to_delete: false,
            ..time
        };
        let allowed =
            |count, needs, reason| allowed_by_queues(&starts, count, needs, reason, false);
        assert_eq!(allowed(3, needs(i64::MAX, 0), time), 3);
        assert_eq!(allowed(3, needs(150, 0), time), 1);
        assert_eq!(allowed(3, needs(200, 0), time), 2);
        assert_eq!(allowed(3, needs(50, 0), time), 0);
        assert_eq!(allowed(3, None, time), 0);
        assert_eq!(allowed_by_queues(&starts, 3, needs(50, 0), time, true), 3);
        // Unread segments go young, at a deletion hour.
        assert_eq!(allowed(0, needs(i64::MAX, 250), time), 2);
        assert_eq!(allowed(0, needs(i64::MAX, 250), idle), 0);
        assert_eq!(allowed(1, needs(i64::MAX, 1000), time), 3, "never the last");
    }
}
