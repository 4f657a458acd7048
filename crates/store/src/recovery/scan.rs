//! The scan of recovery: from a start position to the valid end of the
//! CommitLog, checking every record, indexing it into its ConsumeQueue, and
//! stepping over damaged ranges (see the parent module's doc).

use std::cmp::Ordering;
use std::collections::HashMap;
use std::sync::Arc;

use ferrocket_protocol::properties::tags_code;
use ferrocket_protocol::record::{self, RecordPeek};

use crate::commitlog::SegmentMap;
use crate::config::StoreConfig;
use crate::consume_queue::{ConsumeQueue, CqEntry};
use crate::damage::{DamagedRange, SegmentView};
use crate::error::StoreError;
use crate::queue_floors::QueueFloors;
use crate::types::QueueKey;

enum ScanStop {
    /// The log ends here.
    End(i64),
    /// A record's queue offset is past its ConsumeQueue's end: the scan
    /// started too late.
    Gap,
}

/// The segments as the damage search reads them.
pub(super) fn views(segments: &[Arc<SegmentMap>]) -> Vec<SegmentView<'_>> {
    segments
        .iter()
        .map(|segment| SegmentView {
            start: segment.start,
            bytes: segment.bytes(),
            path: Some(&segment.path),
        })
        .collect()
}

/// One pass over the CommitLog from some position to its end.
pub(super) struct Scanner<'a> {
    pub(super) config: &'a StoreConfig,
    pub(super) segments: &'a [Arc<SegmentMap>],
    pub(super) queues: &'a mut HashMap<QueueKey, ConsumeQueue>,
    pub(super) floors: &'a QueueFloors,
    /// Damaged ranges found by this pass.
    pub(super) damaged: &'a mut Vec<DamagedRange>,
    /// The first scan's start is a record boundary: bad bytes there are
    /// the log's end (or damage), not a start inside a record.
    pub(super) start_is_boundary: bool,
}

/// What lies at a scan position.
enum Found<'a> {
    Record(record::RecordView<'a>),
    /// The end-of-segment filler: go on at the next segment.
    SegmentEnd,
    Invalid,
}

/// The size of the valid message record at `pos`, if one lies there.
pub(super) fn record_at(segments: &[Arc<SegmentMap>], seg_bytes: i64, pos: i64) -> Option<usize> {
    if segments.is_empty() || pos < segments[0].start {
        return None;
    }
    match found_at(segments, seg_bytes, pos)? {
        Found::Record(view) => Some(view.total_size),
        Found::SegmentEnd | Found::Invalid => None,
    }
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
    pub(super) fn find_end(&mut self, start: i64) -> Result<i64, StoreError> {
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
                Some(Found::Invalid)
                    if first_record && pos != segment_start && !self.start_is_boundary =>
                {
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
            let tags_code = entry_tags_code(self.config, &view);
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
    assert!(queue_offset > max, "only a record past the queue's end");
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
    queue.append(queue_offset, entry)?;
    debug_assert_eq!(
        queue.max_offset(),
        queue_offset + 1,
        "the queue stays dense"
    );
    Ok(())
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

/// Java's delay-level topic, whose ConsumeQueue tag codes are deliver times.
const SCHEDULE_TOPIC: &str = "SCHEDULE_TOPIC_XXXX";

/// A rebuilt entry's tag code: the TAGS hash, or for a delay-level message
/// its deliver time (store time + its level's delay), which a Java broker
/// on this store reads as when to deliver it.
fn entry_tags_code(config: &StoreConfig, view: &ferrocket_protocol::record::RecordView<'_>) -> i64 {
    if view.topic == SCHEDULE_TOPIC {
        let delay = usize::try_from(view.queue_id)
            .ok()
            .and_then(|level| config.schedule_delays_ms.get(level));
        if let Some(delay) = delay {
            return view.store_timestamp_ms.saturating_add(*delay);
        }
    }
    view.properties().tags().map(tags_code).unwrap_or(0)
}
