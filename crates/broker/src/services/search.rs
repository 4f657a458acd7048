//! Queue offsets by store time, on the queue's owner shard
//! (`ConsumeQueue.getOffsetInQueueByTime` with the LOWER boundary, and
//! `getEarliestMessageTime`). Messages in offloaded segments are read
//! through the tier (the fetch runs off the shard's executor); an object
//! store that fails makes the answer an error, never a wrong offset.

use ferrocket_protocol::codes::response_code;
use ferrocket_store::{ConsumeQueue, ShardStore};

use crate::error::Reject;
use crate::services::records::{try_read_record_through, view};

async fn store_time(
    store: &ShardStore,
    queue: &ConsumeQueue,
    offset: i64,
) -> Result<Option<i64>, Reject> {
    let Some(entry) = queue.entry(offset).filter(|e| !e.is_lost()) else {
        return Ok(None);
    };
    let record = try_read_record_through(store, entry.physical_offset).await?;
    Ok(record.and_then(|record| view(&record).ok().map(|v| v.store_timestamp_ms)))
}

/// The first queue offset whose message was stored at or after
/// `timestamp_ms`: the min offset when every message is newer, the max
/// offset (the next to be written) when every message is older, 0 for an
/// empty queue. Store times are taken as non-decreasing along the queue.
pub(crate) async fn search_offset_owned(
    store: &ShardStore,
    topic: &str,
    queue_id: i32,
    timestamp_ms: i64,
) -> Result<i64, Reject> {
    let queue = store.consume_queue(topic, queue_id)?;
    let (mut low, mut high) = (queue.min_offset(), queue.max_offset());
    // Invariant: every offset below `low` is older than the timestamp;
    // every offset at or past `high` is not.
    while low < high {
        let mid = low + (high - low) / 2;
        match store_time(store, &queue, mid).await? {
            Some(time) if time < timestamp_ms => low = mid + 1,
            Some(_) => high = mid,
            // Unreadable (e.g. deleted): treat as older.
            None => low = mid + 1,
        }
    }
    Ok(low)
}

/// The store time of the queue's first message.
pub(crate) async fn earliest_time_owned(
    store: &ShardStore,
    topic: &str,
    queue_id: i32,
) -> Result<i64, Reject> {
    let queue = store.consume_queue(topic, queue_id)?;
    let first = store_time(store, &queue, queue.min_offset()).await?;
    first.ok_or_else(|| {
        Reject::new(
            response_code::SYSTEM_ERROR,
            format!("no message in queue {queue_id} of topic {topic}"),
        )
    })
}
