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
use crate::retention::{disk_used_percent, local_hour, PassReason};

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
    let count = tier_gate(common, &segments, &mtimes, count);
    if count == 0 {
        return 0;
    }
    let removed = common.shared.remove_front(count);
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
