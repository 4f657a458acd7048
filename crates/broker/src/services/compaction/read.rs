//! Reads of a compaction topic's queue (Java's `CompactionLog.getMessage`):
//! below the compacted file's `upto` only its records, with their
//! original queue offsets; a requested offset that was compacted away
//! reads from the next record kept (`iterateFromOrNext`), so an offset
//! below the minimum is not "moved". From `upto` on, the ConsumeQueue as
//! for any topic. The minimum offset answered is the first record kept.

use bytes::Bytes;
use ferrocket_protocol::codes::response_code;
use ferrocket_protocol::properties::{tags_code, Properties};
use ferrocket_protocol::record::decode_record;
use ferrocket_store::ShardStore;

use super::file::CompactedFile;
use crate::services::filter::TagFilter;
use crate::services::pull::{Gathered, PullAnswer, PullQuery};

/// The queue's offsets as a compaction topic's reads see them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Bounds {
    /// The first offset readable: the first record kept, else `tail`.
    pub min: i64,
    /// Where the ConsumeQueue's own entries are read from.
    pub tail: i64,
}

pub(crate) fn bounds(file: &CompactedFile, queue_min: i64) -> Bounds {
    let tail = file.upto().max(queue_min);
    let min = file
        .slots()
        .first()
        .map_or(tail, |slot| slot.queue_offset.min(tail));
    Bounds { min, tail }
}

/// The compacted records matching `filter` from `offset` on, within
/// `(messages, bytes)`; `None` when `offset` is past them (read the
/// ConsumeQueue from `tail` then).
pub(crate) fn gather(
    file: &CompactedFile,
    tail: i64,
    offset: i64,
    (max_messages, max_bytes): (usize, usize),
    filter: &TagFilter,
) -> Option<Gathered> {
    let slots = file.slots();
    let first = file.first_at_or_after(offset);
    if first >= slots.len() || offset >= tail {
        return None;
    }
    // The compacted file is local: nothing to fetch from object storage.
    let mut found = Gathered {
        records: Vec::new(),
        bytes: 0,
        next: offset,
        remote: None,
    };
    let mut index = first;
    while let Some(slot) = slots.get(index) {
        if found.records.len() >= max_messages.max(1)
            || (!found.records.is_empty() && found.bytes + slot.size > max_bytes)
        {
            break;
        }
        found.next = slot.queue_offset + 1;
        index += 1;
        let record = file.record(slot);
        if filter.matches(record_tags_code(record)) && filter.matches_record(record) {
            found.bytes += record.len();
            found.records.push(Bytes::copy_from_slice(record));
        }
    }
    if index == slots.len() {
        // Everything between the last record kept and `upto` was compacted away.
        found.next = found.next.max(tail);
    }
    Some(found)
}

/// The tags code the ConsumeQueue would hold for `record`.
fn record_tags_code(record: &[u8]) -> i64 {
    let Ok(view) = decode_record(record, false) else {
        return 0;
    };
    let props: Properties = view.properties();
    props.tags().filter(|t| !t.is_empty()).map_or(0, tags_code)
}

/// A pull of a compaction topic's queue; `normal` reads the ConsumeQueue
/// (the pull path of every topic) for the query it is given.
pub(crate) fn pull(
    store: &ShardStore,
    query: &PullQuery,
    file: &CompactedFile,
    normal: impl Fn(&PullQuery) -> PullAnswer,
) -> PullAnswer {
    let Ok(queue) = store.consume_queue(&query.topic, query.queue_id) else {
        return normal(query);
    };
    let bounds = bounds(file, queue.min_offset());
    let max = queue.max_offset();
    let limits = (query.max_messages, query.max_bytes);
    let Some(found) = gather(file, bounds.tail, query.queue_offset, limits, &query.filter) else {
        let mut tail_query = query.clone();
        tail_query.queue_offset = query.queue_offset.max(bounds.tail);
        let mut answer = normal(&tail_query);
        answer.min_offset = bounds.min;
        return answer;
    };
    let mut answer = PullAnswer::status(
        response_code::PULL_RETRY_IMMEDIATELY,
        found.next,
        bounds.min,
        max,
    );
    if !found.records.is_empty() {
        answer.code = response_code::SUCCESS;
        answer.message_count = found.records.len() as u32;
        answer.body = found.into_body();
    }
    answer
}
