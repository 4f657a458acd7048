//! Recovery on open (blocking, before any executor runs): find the valid end
//! of the CommitLog, cut a torn tail, bring every ConsumeQueue in line with
//! it, and rebuild the appender's queue-offset table.
//!
//! The scan starts at the checkpoint's lower position (everything below it
//! is flushed in both the CommitLog and the ConsumeQueues) when a flushed
//! ConsumeQueue entry proves a record ends there; else at the first record
//! of the segment holding it, or at the first segment without a usable
//! checkpoint. So a clean restart (a controller-mode role change) reads no
//! record, and a restart after kill -9 reads only what was written since
//! the last checkpoint, whatever the segment size.
//! Each record is checked (`scan`): magic, size within the segment, every
//! field length, the body CRC, and that its PHYSICALOFFSET is where it
//! lies. Bad bytes followed by a valid record are a damaged range
//! (`damage`): quarantined, reported, and skipped; queue offsets lost in it
//! get lost entries so every queue stays dense. Bad bytes with no valid
//! record after them are a torn tail and end the log: the rest of its
//! segment is zeroed, later segments that were never written are deleted,
//! and any that hold bytes are moved to quarantine.

use std::collections::HashMap;
use std::fs;
use std::path::PathBuf;
use std::sync::Arc;

use crate::checkpoint::{now_ms, StoreCheckpoint};
use crate::commitlog::SegmentMap;
use crate::config::StoreConfig;
use crate::consume_queue::ConsumeQueue;
use crate::damage::DamagedRange;
use crate::error::{IoContext, StoreError};
use crate::files::{list_offset_files, zero_range};
use crate::json_file::ConfigDir;
use crate::queue_floors::QueueFloors;
use crate::types::QueueKey;

mod scan;

use scan::{views, Scanner};

/// What recovery hands to the running store.
pub(crate) struct Recovered {
    pub(crate) segments: Vec<Arc<SegmentMap>>,
    /// Valid end of the CommitLog: the next append goes here.
    pub(crate) end: i64,
    /// Next queue offset of every queue with entries.
    /// The appender's table, in the map type it keeps (hashed on every send).
    pub(crate) queue_offsets: foldhash::HashMap<QueueKey, i64>,
    /// Where deleted topics' queues restarted.
    pub(crate) floors: QueueFloors,
    /// Damaged ranges quarantined by this and earlier recoveries.
    pub(crate) damaged: Vec<DamagedRange>,
    /// CommitLog bytes this recovery read (0 after a clean stop).
    pub(crate) scanned_bytes: i64,
}

/// Recovers the store in `config`'s directories (see the module doc).
pub(crate) fn recover(config: &StoreConfig) -> Result<Recovered, StoreError> {
    for dir in [
        config.commitlog_dir(),
        config.consumequeue_dir(),
        config.config_dir(),
    ] {
        fs::create_dir_all(&dir).io_context("create dir", &dir)?;
    }
    let segments = open_segments(config)?;
    let mut queues = open_queues(config)?;
    let first_start = segments.first().map(|s| s.start).unwrap_or(0);
    let floors = load_floors(config, first_start)?;
    let start = scan_start(config, &segments, &queues)?;
    let mut damaged = Vec::new();
    let end = match segments.is_empty() {
        true => 0,
        false => {
            let mut scanner = Scanner {
                config,
                segments: &segments,
                queues: &mut queues,
                floors: &floors,
                damaged: &mut damaged,
                start_is_boundary: start.is_boundary,
            };
            scanner.find_end(start.at)?
        }
    };
    quarantine_damage(config, &segments, &queues, &damaged)?;
    let scanned_bytes = (end - start.at).max(0);
    tracing::info!(
        start = start.at,
        end,
        scanned_bytes,
        segments = segments.len(),
        "CommitLog recovered"
    );
    assert!(end >= 0, "a recovered end below zero");
    let segments = settle(config, segments, &queues, end)?;
    assert!(
        segments.last().map_or(true, |last| last.start <= end),
        "the recovered end lies in or past the last segment kept"
    );
    Ok(Recovered {
        segments,
        end,
        queue_offsets: next_queue_offsets(queues),
        floors,
        damaged: all_damaged(config, damaged),
        scanned_bytes,
    })
}

/// Maps every CommitLog segment, checking that they are aligned and
/// contiguous; a short last one gets its full size.
fn open_segments(config: &StoreConfig) -> Result<Vec<Arc<SegmentMap>>, StoreError> {
    let seg_bytes = config.segment_bytes;
    let files = list_offset_files(&config.commitlog_dir())?;
    let mut segments = Vec::with_capacity(files.len());
    for (index, (start, path)) in files.iter().enumerate() {
        if *start as u64 % seg_bytes != 0 {
            return Err(StoreError::Corrupt(format!(
                "segment {} does not start at a multiple of the segment size {seg_bytes}",
                path.display()
            )));
        }
        if let Some(first) = files.first() {
            if first.0 + index as i64 * seg_bytes as i64 != *start {
                return Err(StoreError::Corrupt(format!(
                    "CommitLog segments are not contiguous at {}",
                    path.display()
                )));
            }
        }
        extend_if_short(path, seg_bytes, index + 1 == files.len())?;
        segments.push(Arc::new(SegmentMap::open(path, *start, seg_bytes)?));
    }
    Ok(segments)
}

/// The deleted topics' floors, without those below the CommitLog's start
/// (`first_start`): their records are gone.
fn load_floors(config: &StoreConfig, first_start: i64) -> Result<QueueFloors, StoreError> {
    let config_dir = ConfigDir::open(config.config_dir())?;
    let mut floors = QueueFloors::load(&config_dir)?;
    if floors.prune(first_start) {
        floors.store(&config_dir)?;
    }
    Ok(floors)
}

/// Where recovery's scan starts.
struct ScanStart {
    at: i64,
    /// A record is known to end at `at` (or `at` starts the log).
    is_boundary: bool,
}

/// Where the scan starts: the checkpoint's position when a ConsumeQueue
/// entry proves a record ends there; else the first record of the segment
/// holding it (records before it there are re-checked cheaply, and a
/// checkpoint that claims too much is caught); the first segment when
/// there is no usable checkpoint or a ConsumeQueue must be rebuilt.
fn scan_start(
    config: &StoreConfig,
    segments: &[Arc<SegmentMap>],
    queues: &HashMap<QueueKey, ConsumeQueue>,
) -> Result<ScanStart, StoreError> {
    let seg = config.segment_bytes as i64;
    let first_start = segments.first().map(|s| s.start).unwrap_or(0);
    let last_end = segments.last().map(|s| s.start + seg).unwrap_or(0);
    let from_first = ScanStart {
        at: first_start,
        is_boundary: true,
    };
    let checkpoint = StoreCheckpoint::load(&config.checkpoint_path())?;
    if queues.values().any(ConsumeQueue::was_repaired) {
        tracing::warn!("a ConsumeQueue file was short; rescanning the whole CommitLog");
        return Ok(from_first);
    }
    let Some(checkpoint) = checkpoint else {
        return Ok(from_first);
    };
    let checkpointed = checkpoint
        .commitlog_flushed
        .min(checkpoint.consumequeue_flushed)
        .clamp(first_start, last_end);
    if checkpointed == first_start || record_ends_at(segments, seg, queues, checkpointed) {
        return Ok(ScanStart {
            at: checkpointed,
            is_boundary: true,
        });
    }
    let at = (checkpointed - checkpointed.rem_euclid(seg))
        .min(last_end - seg)
        .max(first_start);
    Ok(ScanStart {
        at,
        is_boundary: at == first_start,
    })
}

/// Whether a record ends exactly at `pos`: a ConsumeQueue entry ends there
/// and the record it names checks (so the log's last record before a
/// clean stop's checkpoint is read once, and a torn one is caught). Then
/// the next record, a segment's filler or the log's end starts at `pos`.
fn record_ends_at(
    segments: &[Arc<SegmentMap>],
    seg_bytes: i64,
    queues: &HashMap<QueueKey, ConsumeQueue>,
    pos: i64,
) -> bool {
    let Some(entry) = queues
        .values()
        .find_map(|queue| entry_ending_at(queue, pos))
    else {
        return false;
    };
    scan::record_at(segments, seg_bytes, entry.physical_offset)
        .is_some_and(|size| size as i64 == i64::from(entry.size))
}

/// Binary search of one queue (its entries lie in CommitLog order) for
/// the last entry starting before `pos`, when it ends at `pos`.
fn entry_ending_at(queue: &ConsumeQueue, pos: i64) -> Option<crate::consume_queue::CqEntry> {
    let (mut low, mut high) = (queue.min_offset(), queue.max_offset());
    // Entries below `low` start before `pos`; from `high` on, at or after.
    while low < high {
        let mid = low + (high - low) / 2;
        // A hole: this queue proves nothing.
        let entry = queue.entry(mid)?;
        match entry.physical_offset < pos {
            true => low = mid + 1,
            false => high = mid,
        }
    }
    if low == queue.min_offset() {
        return None;
    }
    queue
        .entry(low - 1)
        .filter(|entry| !entry.is_lost() && entry.end() == pos)
}

/// Makes the recovered state the state on disk: queues end with the log,
/// the torn tail is cut, and the checkpoint names the end.
fn settle(
    config: &StoreConfig,
    segments: Vec<Arc<SegmentMap>>,
    queues: &HashMap<QueueKey, ConsumeQueue>,
    end: i64,
) -> Result<Vec<Arc<SegmentMap>>, StoreError> {
    for queue in queues.values() {
        queue.truncate_beyond(end)?;
        queue.flush_blocking()?;
    }
    let segments = cut_tail(config, segments, end)?;
    let now = now_ms();
    StoreCheckpoint {
        commitlog_flushed: end,
        consumequeue_flushed: end,
        commitlog_timestamp_ms: now,
        consumequeue_timestamp_ms: now,
    }
    .store(&config.checkpoint_path())?;
    Ok(segments)
}

/// The appender's queue-offset table: the next offset of every queue with
/// entries.
fn next_queue_offsets(queues: HashMap<QueueKey, ConsumeQueue>) -> foldhash::HashMap<QueueKey, i64> {
    queues
        .into_iter()
        .filter(|(_, queue)| queue.max_offset() > 0)
        .map(|(key, queue)| (key, queue.max_offset()))
        .collect()
}

/// Marks the queue entries of each damaged range lost, copies its bytes to
/// quarantine and reports it.
fn quarantine_damage(
    config: &StoreConfig,
    segments: &[Arc<SegmentMap>],
    queues: &HashMap<QueueKey, ConsumeQueue>,
    damaged: &[DamagedRange],
) -> Result<(), StoreError> {
    for range in damaged {
        // Entries that already pointed into the range (a full scan over
        // existing queues) must not hand its bytes out.
        let marked: usize = queues
            .values()
            .map(|queue| queue.mark_lost_within(range.start, range.end))
            .sum();
        if marked > 0 {
            tracing::warn!(
                start = range.start,
                marked,
                "ConsumeQueue entries of the damaged range marked lost"
            );
        }
        let path = crate::damage::quarantine(&config.root_dir, &views(segments), *range)?;
        tracing::error!(start = range.start, end = range.end, bytes = range.len_bytes(),
            copy = %path.display(),
            "damaged CommitLog range skipped; the records after it are kept");
    }
    Ok(())
}

/// The ranges of earlier recoveries (from quarantine) with this one's.
fn all_damaged(config: &StoreConfig, found: Vec<DamagedRange>) -> Vec<DamagedRange> {
    let mut all = crate::damage::load_ranges(&config.root_dir);
    all.retain(|r| !found.contains(r));
    all.extend(found);
    all.sort_by_key(|r| r.start);
    all
}

/// A last segment shorter than configured was being created when the
/// process died: give it its full size.
fn extend_if_short(
    path: &std::path::Path,
    seg_bytes: u64,
    is_last: bool,
) -> Result<(), StoreError> {
    let file = fs::OpenOptions::new()
        .write(true)
        .open(path)
        .io_context("open segment", path)?;
    let len = file.metadata().io_context("stat segment", path)?.len();
    if len < seg_bytes && is_last {
        file.set_len(seg_bytes).io_context("extend segment", path)?;
    }
    Ok(())
}

/// Opens every `consumequeue/{topic}/{queueId}`.
fn open_queues(config: &StoreConfig) -> Result<HashMap<QueueKey, ConsumeQueue>, StoreError> {
    let root = config.consumequeue_dir();
    let mut queues = HashMap::new();
    let topics = fs::read_dir(&root).io_context("list dir", &root)?;
    for topic in topics {
        let topic = topic.io_context("list dir", &root)?;
        let Some(topic_name) = topic.file_name().to_str().map(str::to_owned) else {
            continue;
        };
        if crate::names::topic_dir(&root, &topic_name).is_err() {
            tracing::warn!(dir = %topic.path().display(), "not a topic's queue directory; ignored");
            continue;
        }
        let topic_path = topic.path();
        if !topic_path.is_dir() {
            continue;
        }
        let ids = fs::read_dir(&topic_path).io_context("list dir", &topic_path)?;
        for id in ids {
            let id = id.io_context("list dir", &topic_path)?;
            let Some(queue_id) = id.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
                continue;
            };
            let queue = ConsumeQueue::open(id.path(), config.cq_entries_per_file)?;
            queues.insert((Arc::from(topic_name.as_str()), queue_id), queue);
        }
    }
    Ok(queues)
}

/// Bytes at a segment's start that tell a never-written (preallocated)
/// segment from one that was written to.
const SEGMENT_HEAD_BYTES: usize = 4096;
// Every segment is at least that long.
const _: () = assert!(SEGMENT_HEAD_BYTES as u64 <= crate::config::SEGMENT_BYTES_MIN);

/// Zeroes everything after `end` in its segment and deletes later segments.
fn cut_tail(
    config: &StoreConfig,
    mut segments: Vec<Arc<SegmentMap>>,
    end: i64,
) -> Result<Vec<Arc<SegmentMap>>, StoreError> {
    let seg_bytes = config.segment_bytes as i64;
    let clog_dir = config.commitlog_dir();
    let path_of = |start: i64| -> PathBuf { clog_dir.join(crate::files::offset_file_name(start)) };
    while let Some(last) = segments.last() {
        if last.start > end {
            let path = path_of(last.start);
            let written = last.bytes()[..SEGMENT_HEAD_BYTES.min(last.bytes().len())]
                .iter()
                .any(|b| *b != 0);
            segments.pop();
            if written {
                let kept = crate::damage::quarantine_segment(&config.root_dir, &path)?;
                tracing::error!(path = %path.display(), kept = %kept.display(),
                    "segment past the CommitLog's end holds bytes but no record; moved to quarantine");
            } else {
                // A segment created ahead of a roll that never came.
                fs::remove_file(&path).io_context("remove segment", &path)?;
                tracing::info!(path = %path.display(), "removed unwritten segment past the CommitLog's end");
            }
            continue;
        }
        break;
    }
    if let Some(last) = segments.last() {
        // The end came from scanning these segments: it lies in the last one kept.
        assert!(
            (0..=seg_bytes).contains(&(end - last.start)),
            "the end {end} lies in the segment at {}",
            last.start
        );
        let from = (end - last.start) as u64;
        let path = path_of(last.start);
        let file = fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .io_context("open segment", &path)?;
        // Whatever lies past the end (a torn batch, never-acknowledged
        // writes) must not be mistaken for records later: zero it. Punching
        // a hole is cheap, so do it without looking.
        zero_range(&file, &path, from, seg_bytes as u64)?;
        file.sync_data().io_context("fdatasync segment", &path)?;
    }
    crate::json_file::sync_dir(&clog_dir)?;
    debug_assert!(
        segments.iter().all(|s| s.start <= end),
        "no segment past the end stays"
    );
    Ok(segments)
}
