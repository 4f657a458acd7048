//! Recovery on open (blocking, before any executor runs): find the valid end
//! of the CommitLog, cut a torn tail, bring every ConsumeQueue in line with
//! it, and rebuild the appender's queue-offset table.
//!
//! The scan starts at the segment holding the checkpoint's lower position
//! (everything below it is flushed in both the CommitLog and the
//! ConsumeQueues), or at the first segment without a usable checkpoint. Each record is checked: magic,
//! size within the segment, every field length, the body CRC, and that its
//! PHYSICALOFFSET is where it lies. Bad bytes followed by a valid record are
//! a damaged range (`damage`): quarantined, reported, and skipped; queue
//! offsets lost in it get lost entries so every queue stays dense. Bad bytes
//! with no valid record after them are a torn tail and end the log: the
//! rest of its segment is zeroed, later segments that were never written
//! are deleted, and any that hold bytes are moved to quarantine.

use std::cmp::Ordering;
use std::collections::HashMap;
use std::fs;
use std::path::PathBuf;
use std::sync::Arc;

use ferrocket_protocol::properties::tags_code;
use ferrocket_protocol::record::{self, RecordPeek};

use crate::checkpoint::{now_ms, StoreCheckpoint};
use crate::commitlog::SegmentMap;
use crate::config::StoreConfig;
use crate::consume_queue::{ConsumeQueue, CqEntry};
use crate::damage::{DamagedRange, SegmentView};
use crate::error::{IoContext, StoreError};
use crate::files::{list_offset_files, zero_range};
use crate::json_file::ConfigDir;
use crate::queue_floors::QueueFloors;
use crate::types::QueueKey;

/// What recovery hands to the running store.
pub(crate) struct Recovered {
    pub(crate) segments: Vec<Arc<SegmentMap>>,
    /// Valid end of the CommitLog: the next append goes here.
    pub(crate) end: i64,
    /// Next queue offset of every queue with entries.
    pub(crate) queue_offsets: HashMap<QueueKey, i64>,
    /// Where deleted topics' queues restarted.
    pub(crate) floors: QueueFloors,
    /// Damaged ranges quarantined by this and earlier recoveries.
    pub(crate) damaged: Vec<DamagedRange>,
}

enum ScanStop {
    /// The log ends here.
    End(i64),
    /// A record's queue offset is past its ConsumeQueue's end: the scan
    /// started too late.
    Gap,
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
            };
            scanner.find_end(start)?
        }
    };
    quarantine_damage(config, &segments, &queues, &damaged)?;
    tracing::info!(start, end, segments = segments.len(), "CommitLog recovered");
    let segments = settle(config, segments, &queues, end)?;
    Ok(Recovered {
        segments,
        end,
        queue_offsets: next_queue_offsets(queues),
        floors,
        damaged: all_damaged(config, damaged),
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

/// Where the scan starts: the first record of the segment holding the
/// checkpoint's position, or the first segment when there is no usable
/// checkpoint or a ConsumeQueue must be rebuilt.
fn scan_start(
    config: &StoreConfig,
    segments: &[Arc<SegmentMap>],
    queues: &HashMap<QueueKey, ConsumeQueue>,
) -> Result<i64, StoreError> {
    let seg = config.segment_bytes as i64;
    let first_start = segments.first().map(|s| s.start).unwrap_or(0);
    let last_end = segments.last().map(|s| s.start + seg).unwrap_or(0);
    let checkpoint = StoreCheckpoint::load(&config.checkpoint_path())?;
    if queues.values().any(ConsumeQueue::was_repaired) {
        tracing::warn!("a ConsumeQueue file was short; rescanning the whole CommitLog");
        return Ok(first_start);
    }
    // Scan the whole segment holding the checkpoint's position: records
    // before it there are re-checked cheaply (their ConsumeQueue entries
    // exist), and a checkpoint that claims too much is caught.
    let checkpointed = checkpoint
        .map(|c| c.commitlog_flushed.min(c.consumequeue_flushed))
        .unwrap_or(first_start)
        .clamp(first_start, last_end);
    Ok((checkpointed - checkpointed.rem_euclid(seg))
        .min(last_end - seg)
        .max(first_start))
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
fn next_queue_offsets(queues: HashMap<QueueKey, ConsumeQueue>) -> HashMap<QueueKey, i64> {
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

/// The segments as the damage search reads them.
fn views(segments: &[Arc<SegmentMap>]) -> Vec<SegmentView<'_>> {
    segments
        .iter()
        .map(|segment| SegmentView {
            start: segment.start,
            bytes: segment.bytes(),
        })
        .collect()
}

/// One pass over the CommitLog from some position to its end.
struct Scanner<'a> {
    config: &'a StoreConfig,
    segments: &'a [Arc<SegmentMap>],
    queues: &'a mut HashMap<QueueKey, ConsumeQueue>,
    floors: &'a QueueFloors,
    /// Damaged ranges found by this pass.
    damaged: &'a mut Vec<DamagedRange>,
}

/// What lies at a scan position.
enum Found<'a> {
    Record(record::RecordView<'a>),
    /// The end-of-segment filler: go on at the next segment.
    SegmentEnd,
    Invalid,
}

/// What lies at `pos` (`None` past the last segment).
fn found_at(segments: &[Arc<SegmentMap>], seg_bytes: i64, pos: i64) -> Option<Found<'_>> {
    let index = ((pos - segments[0].start) / seg_bytes) as usize;
    let segment = segments.get(index)?;
    let at = (pos - segment.start) as usize;
    let bytes = &segment.bytes()[at..];
    Some(match record::peek_record(bytes) {
        Ok(RecordPeek::Blank { total_size }) if at + total_size == seg_bytes as usize => {
            Found::SegmentEnd
        }
        Ok(RecordPeek::Message { total_size, .. }) if total_size <= bytes.len() => {
            match record::decode_record(&bytes[..total_size], true) {
                Ok(view) if view.physical_offset == pos => Found::Record(view),
                _ => Found::Invalid,
            }
        }
        _ => Found::Invalid,
    })
}

impl Scanner<'_> {
    /// The valid end of the log, scanning from `start`; from the first
    /// segment again when the ConsumeQueues turn out to be behind `start`.
    fn find_end(&mut self, start: i64) -> Result<i64, StoreError> {
        let first_start = self.segments[0].start;
        if let ScanStop::End(end) = self.scan(start)? {
            return Ok(end);
        }
        tracing::warn!(
            start,
            "ConsumeQueues behind the checkpoint; rescanning the whole CommitLog"
        );
        self.damaged.clear();
        match self.scan(first_start)? {
            ScanStop::End(end) => Ok(end),
            ScanStop::Gap => unreachable!("a full scan skips gaps"),
        }
    }

    fn scan(&mut self, start: i64) -> Result<ScanStop, StoreError> {
        let seg_bytes = self.config.segment_bytes as i64;
        let full_scan = start == self.segments[0].start;
        let mut pos = start;
        let mut first_record = true;
        loop {
            let segment_start = pos - (pos - self.segments[0].start).rem_euclid(seg_bytes);
            let segments = self.segments;
            let view = match found_at(segments, seg_bytes, pos) {
                None => return Ok(ScanStop::End(pos)),
                Some(Found::SegmentEnd) => {
                    pos = segment_start + seg_bytes;
                    first_record = false;
                    continue;
                }
                Some(Found::Record(view)) => view,
                Some(Found::Invalid) if first_record && pos != segment_start => {
                    // The checkpoint should name a record boundary; if not,
                    // start over from its segment's first record.
                    tracing::warn!(
                        pos,
                        "no record at the checkpoint; scanning its whole segment"
                    );
                    pos = segment_start;
                    first_record = false;
                    continue;
                }
                Some(Found::Invalid) => {
                    match crate::damage::next_record(&views(self.segments), pos) {
                        Some(next) => {
                            self.note_damage(pos, next);
                            pos = next;
                            continue;
                        }
                        None => return Ok(ScanStop::End(pos)),
                    }
                }
            };
            first_record = false;
            let (topic, queue_id, queue_offset, size) = (
                view.topic,
                view.queue_id,
                view.queue_offset,
                view.total_size,
            );
            let tags_code = view.properties().tags().map(tags_code).unwrap_or(0);
            let entry = CqEntry {
                physical_offset: pos,
                size: size as i32,
                tags_code,
            };
            let indexed = self.index(topic, queue_id, queue_offset, entry, full_scan)?;
            if !indexed {
                return Ok(ScanStop::Gap);
            }
            pos += size as i64;
        }
    }

    /// Records a damaged range. Entries already pointing into it become
    /// lost now, so a queue whose last entry lay in it can still take lost
    /// offsets behind it (`lost_in` looks past the last entry).
    fn note_damage(&mut self, start: i64, end: i64) {
        for queue in self.queues.values() {
            queue.mark_lost_within(start, end);
        }
        self.damaged.push(DamagedRange { start, end });
    }

    /// Puts `entry` (the record at queue offset `queue_offset`) into its
    /// ConsumeQueue; `false` when the queue ends before it and the scan
    /// must start over from the first segment.
    fn index(
        &mut self,
        topic: &str,
        queue_id: i32,
        queue_offset: i64,
        entry: CqEntry,
        full_scan: bool,
    ) -> Result<bool, StoreError> {
        let pos = entry.physical_offset;
        if self.floors.hides(topic, queue_id, pos) {
            // A deleted topic's record: its queue restarted after it.
            return Ok(true);
        }
        let Some(queue) = queue_for(self.queues, self.config, topic, queue_id, pos)? else {
            return Ok(true);
        };
        let max = queue.max_offset();
        match queue_offset.cmp(&max) {
            Ordering::Less => keep_or_rebuild(queue, topic, queue_id, queue_offset, entry)?,
            Ordering::Equal => queue.append(queue_offset, entry)?,
            Ordering::Greater if !full_scan => return Ok(false),
            Ordering::Greater => {
                append_after_loss(queue, self.damaged, topic, queue_id, queue_offset, entry)?
            }
        }
        Ok(true)
    }
}

/// The ConsumeQueue of `(topic, queue_id)`, opened (or created) on first
/// sight; `None` for a record whose names make no queue directory.
fn queue_for<'q>(
    queues: &'q mut HashMap<QueueKey, ConsumeQueue>,
    config: &StoreConfig,
    topic: &str,
    queue_id: i32,
    pos: i64,
) -> Result<Option<&'q ConsumeQueue>, StoreError> {
    let key: QueueKey = (Arc::from(topic), queue_id);
    if queues.contains_key(&key) {
        return Ok(queues.get(&key));
    }
    let dir = match crate::names::queue_dir(&config.consumequeue_dir(), topic, queue_id) {
        Ok(dir) => dir,
        Err(err) => {
            // Written before names were checked on append: kept in the
            // log, never given queue files.
            tracing::warn!(pos, %err, "record with an illegal topic or queue id not indexed");
            return Ok(None);
        }
    };
    let queue = ConsumeQueue::open(dir, config.cq_entries_per_file)?;
    Ok(Some(queues.entry(key).or_insert(queue)))
}

/// The queue already holds `queue_offset`: keep the entry when it points at
/// this record, else rebuild the queue's tail from here.
fn keep_or_rebuild(
    queue: &ConsumeQueue,
    topic: &str,
    queue_id: i32,
    queue_offset: i64,
    entry: CqEntry,
) -> Result<(), StoreError> {
    if queue
        .entry(queue_offset)
        .is_some_and(|found| found.physical_offset == entry.physical_offset)
    {
        return Ok(());
    }
    tracing::warn!(
        topic,
        queue_id,
        queue_offset,
        "ConsumeQueue disagrees with CommitLog; rebuilding its tail"
    );
    queue.truncate(queue_offset)?;
    queue.append(queue_offset, entry)
}

/// A full scan found the record at `queue_offset` past the queue's end:
/// the offsets between were lost in a damaged range (they get lost entries,
/// keeping the queue dense), or, when no damaged range can hold them, the
/// record is reported and not indexed.
fn append_after_loss(
    queue: &ConsumeQueue,
    damaged: &[DamagedRange],
    topic: &str,
    queue_id: i32,
    queue_offset: i64,
    entry: CqEntry,
) -> Result<(), StoreError> {
    let max = queue.max_offset();
    let Some(range) = lost_in(damaged, queue.last_entry(), queue_offset - max) else {
        tracing::error!(
            topic,
            queue_id,
            queue_offset,
            max,
            "record past its ConsumeQueue's end; not indexed"
        );
        return Ok(());
    };
    tracing::warn!(
        topic,
        queue_id,
        from = max,
        to = queue_offset,
        "queue offsets lost in a damaged range; marked lost"
    );
    for lost in max..queue_offset {
        queue.append(lost, CqEntry::lost(range.start))?;
    }
    queue.append(queue_offset, entry)
}

/// The damaged range that can hold the `missing` records a queue skipped
/// after its `last` entry: the latest one past that entry, when it is big
/// enough.
fn lost_in(damaged: &[DamagedRange], last: Option<CqEntry>, missing: i64) -> Option<DamagedRange> {
    let after = last.map_or(0, |entry| entry.end());
    let ranges: Vec<&DamagedRange> = damaged.iter().filter(|r| r.start >= after).collect();
    let room: i64 = ranges.iter().map(|r| r.records_max()).sum();
    let latest = ranges.last()?;
    (missing <= room).then_some(**latest)
}

/// Bytes at a segment's start that tell a never-written (preallocated)
/// segment from one that was written to.
const SEGMENT_HEAD_BYTES: usize = 4096;

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
                fs::remove_file(&path).io_context("remove segment", &path)?;
                tracing::warn!(path = %path.display(), "removed unwritten segment past the CommitLog's end");
            }
            continue;
        }
        break;
    }
    if let Some(last) = segments.last() {
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
    Ok(segments)
}
