//! Recovery on open (blocking, before any executor runs): find the valid end
//! of the CommitLog, cut a torn tail, bring every ConsumeQueue in line with
//! it, and rebuild the appender's queue-offset table.
//!
//! The scan starts at the segment holding the checkpoint's lower position
//! (everything below it is flushed in both the CommitLog and the
//! ConsumeQueues), or at the first segment without a usable checkpoint. Each record is checked: magic,
//! size within the segment, every field length, the body CRC, and that its
//! PHYSICALOFFSET is where it lies. The first bad record ends the log; the
//! rest of its segment is zeroed and later segments are deleted.

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
use crate::error::StoreError;
use crate::files::{list_offset_files, zero_range};
use crate::json_file::ConfigDir;
use crate::queue_floors::QueueFloors;

/// Queue key used by the appender's offset table.
pub(crate) type QueueKey = (Arc<str>, i32);

/// What recovery hands to the running store.
pub(crate) struct Recovered {
    pub(crate) segments: Vec<Arc<SegmentMap>>,
    /// Valid end of the CommitLog: the next append goes here.
    pub(crate) end: i64,
    /// Next queue offset of every queue with entries.
    pub(crate) queue_offsets: HashMap<QueueKey, i64>,
    /// Where deleted topics' queues restarted.
    pub(crate) floors: QueueFloors,
}

enum ScanStop {
    /// The log ends here.
    End(i64),
    /// A record's queue offset is past its ConsumeQueue's end: the scan
    /// started too late.
    Gap,
}

pub(crate) fn recover(config: &StoreConfig) -> Result<Recovered, StoreError> {
    let clog_dir = config.commitlog_dir();
    for dir in [&clog_dir, &config.consumequeue_dir(), &config.config_dir()] {
        fs::create_dir_all(dir).map_err(|e| StoreError::io("create dir", dir, e))?;
    }
    let seg_bytes = config.segment_bytes;
    let files = list_offset_files(&clog_dir)?;
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
    let mut queues = open_queues(config)?;
    let first_start = segments.first().map(|s| s.start).unwrap_or(0);
    let last_end = segments
        .last()
        .map(|s| s.start + seg_bytes as i64)
        .unwrap_or(0);
    let config_dir = ConfigDir::open(config.config_dir())?;
    let mut floors = QueueFloors::load(&config_dir)?;
    if floors.prune(first_start) {
        floors.store(&config_dir)?;
    }
    let checkpoint = StoreCheckpoint::load(&config.checkpoint_path())?;
    // Scan the whole segment holding the checkpoint's position: records
    // before it there are re-checked cheaply (their ConsumeQueue entries
    // exist), and a checkpoint that claims too much is caught.
    let checkpointed = checkpoint
        .map(|c| c.commitlog_flushed.min(c.consumequeue_flushed))
        .unwrap_or(first_start)
        .clamp(first_start, last_end);
    let seg = seg_bytes as i64;
    let start = (checkpointed - checkpointed.rem_euclid(seg))
        .min(last_end - seg)
        .max(first_start);

    let end = if segments.is_empty() {
        0
    } else {
        match scan(config, &segments, &mut queues, &floors, start)? {
            ScanStop::End(end) => end,
            ScanStop::Gap => {
                tracing::warn!(
                    start,
                    "ConsumeQueues behind the checkpoint; rescanning the whole CommitLog"
                );
                match scan(config, &segments, &mut queues, &floors, first_start)? {
                    ScanStop::End(end) => end,
                    ScanStop::Gap => unreachable!("a full scan skips gaps"),
                }
            }
        }
    };
    tracing::info!(start, end, segments = segments.len(), "CommitLog recovered");

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

    let queue_offsets = queues
        .into_iter()
        .filter(|(_, queue)| queue.max_offset() > 0)
        .map(|(key, queue)| (key, queue.max_offset()))
        .collect();
    Ok(Recovered {
        segments,
        end,
        queue_offsets,
        floors,
    })
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
        .map_err(|e| StoreError::io("open segment", path, e))?;
    let len = file
        .metadata()
        .map_err(|e| StoreError::io("stat segment", path, e))?
        .len();
    if len < seg_bytes && is_last {
        file.set_len(seg_bytes)
            .map_err(|e| StoreError::io("extend segment", path, e))?;
    }
    Ok(())
}

/// Opens every `consumequeue/{topic}/{queueId}`.
fn open_queues(config: &StoreConfig) -> Result<HashMap<QueueKey, ConsumeQueue>, StoreError> {
    let root = config.consumequeue_dir();
    let mut queues = HashMap::new();
    let topics = fs::read_dir(&root).map_err(|e| StoreError::io("list dir", &root, e))?;
    for topic in topics {
        let topic = topic.map_err(|e| StoreError::io("list dir", &root, e))?;
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
        let ids =
            fs::read_dir(&topic_path).map_err(|e| StoreError::io("list dir", &topic_path, e))?;
        for id in ids {
            let id = id.map_err(|e| StoreError::io("list dir", &topic_path, e))?;
            let Some(queue_id) = id.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
                continue;
            };
            let queue = ConsumeQueue::open(id.path(), config.cq_entries_per_file)?;
            queues.insert((Arc::from(topic_name.as_str()), queue_id), queue);
        }
    }
    Ok(queues)
}

fn scan(
    config: &StoreConfig,
    segments: &[Arc<SegmentMap>],
    queues: &mut HashMap<QueueKey, ConsumeQueue>,
    floors: &QueueFloors,
    start: i64,
) -> Result<ScanStop, StoreError> {
    let seg_bytes = config.segment_bytes as i64;
    let first_start = segments[0].start;
    let full_scan = start == first_start;
    let mut pos = start;
    let mut first_record = true;
    loop {
        let index = ((pos - first_start) / seg_bytes) as usize;
        let Some(segment) = segments.get(index) else {
            return Ok(ScanStop::End(pos));
        };
        let at = (pos - segment.start) as usize;
        let bytes = &segment.bytes()[at..];
        let valid = match record::peek_record(bytes) {
            Ok(RecordPeek::Blank { total_size }) if at + total_size == seg_bytes as usize => {
                pos = segment.start + seg_bytes;
                first_record = false;
                continue;
            }
            Ok(RecordPeek::Message { total_size, .. }) if total_size <= bytes.len() => {
                match record::decode_record(&bytes[..total_size], true) {
                    Ok(view) if view.physical_offset == pos => Some(view),
                    _ => None,
                }
            }
            _ => None,
        };
        let Some(view) = valid else {
            if first_record && pos != segment.start {
                // The checkpoint should name a record boundary; if not,
                // start over from its segment's first record.
                tracing::warn!(
                    pos,
                    "no record at the checkpoint; scanning its whole segment"
                );
                pos = segment.start;
                first_record = false;
                continue;
            }
            return Ok(ScanStop::End(pos));
        };
        first_record = false;
        if floors.hides(view.topic, view.queue_id, pos) {
            // A deleted topic's record: its queue restarted after it.
            pos += view.total_size as i64;
            continue;
        }
        let key: QueueKey = (Arc::from(view.topic), view.queue_id);
        let queue = match queues.get(&key) {
            Some(queue) => queue,
            None => {
                let dir = match crate::names::queue_dir(
                    &config.consumequeue_dir(),
                    view.topic,
                    view.queue_id,
                ) {
                    Ok(dir) => dir,
                    Err(err) => {
                        // Written before names were checked on append:
                        // kept in the log, never given queue files.
                        tracing::warn!(pos, %err, "record with an illegal topic or queue id not indexed");
                        pos += view.total_size as i64;
                        continue;
                    }
                };
                let queue = ConsumeQueue::open(dir, config.cq_entries_per_file)?;
                queues.entry(key.clone()).or_insert(queue)
            }
        };
        let entry = CqEntry {
            physical_offset: pos,
            size: view.total_size as i32,
            tags_code: view.properties().tags().map(tags_code).unwrap_or(0),
        };
        let max = queue.max_offset();
        if view.queue_offset < max {
            match queue.entry(view.queue_offset) {
                Some(found) if found.physical_offset == pos => {}
                _ => {
                    tracing::warn!(
                        topic = view.topic,
                        queue_id = view.queue_id,
                        queue_offset = view.queue_offset,
                        "ConsumeQueue disagrees with CommitLog; rebuilding its tail"
                    );
                    queue.truncate(view.queue_offset)?;
                    queue.append(view.queue_offset, entry)?;
                }
            }
        } else if view.queue_offset == max {
            queue.append(view.queue_offset, entry)?;
        } else if full_scan {
            tracing::error!(
                topic = view.topic,
                queue_id = view.queue_id,
                queue_offset = view.queue_offset,
                max,
                "record past its ConsumeQueue's end; not indexed"
            );
        } else {
            return Ok(ScanStop::Gap);
        }
        pos += view.total_size as i64;
    }
}

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
            segments.pop();
            fs::remove_file(&path).map_err(|e| StoreError::io("remove segment", &path, e))?;
            tracing::warn!(path = %path.display(), "removed segment past the CommitLog's end");
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
            .map_err(|e| StoreError::io("open segment", &path, e))?;
        // Whatever lies past the end (a torn batch, never-acknowledged
        // writes) must not be mistaken for records later: zero it. Punching
        // a hole is cheap, so do it without looking.
        zero_range(&file, &path, from, seg_bytes as u64)?;
        file.sync_data()
            .map_err(|e| StoreError::io("fdatasync segment", &path, e))?;
    }
    crate::json_file::sync_dir(&clog_dir)?;
    Ok(segments)
}
