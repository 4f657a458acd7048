//! A pull on its queue's owner shard (Java's `getMessage` and
//! `PullRequestHoldService`): commits the consumer's offset, reads
//! ConsumeQueue entries, filters them by tag hash, gathers the raw
//! CommitLog records, and — when nothing new is there and the client
//! allows it — holds the pull until a dispatch for the queue arrives or
//! the suspend timeout passes.

use std::cell::RefCell;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use ferrocket_protocol::codes::response_code;
use ferrocket_store::ShardStore;
use futures_lite::future;

use crate::services::filter::TagFilter;
use crate::services::long_poll::LongPolls;
use crate::services::offsets::OffsetTable;

/// Most ConsumeQueue entries one pull looks at (`maxFilterMessageSize`
/// 16,000 bytes / 20 bytes per entry), unless it asks for more messages.
pub const PULL_SCAN_ENTRIES_MAX: usize = 800;
/// Suspend timeout when the client gives none (the Java client's default).
pub const SUSPEND_TIMEOUT_MS_DEFAULT: i64 = 15_000;

/// A pull as the owner shard executes it. `Send`: it crosses shards.
#[derive(Debug, Clone)]
pub(crate) struct PullQuery {
    pub group: String,
    pub topic: String,
    pub queue_id: i32,
    pub queue_offset: i64,
    pub max_messages: usize,
    pub max_bytes: usize,
    pub filter: TagFilter,
    /// Offset to store for the group first (commit-offset flag).
    pub commit_offset: Option<i64>,
    /// How long to hold the pull when nothing is there; 0: answer at once.
    pub suspend_ms: u64,
}

/// The owner's answer.
#[derive(Debug, Clone)]
pub(crate) struct PullAnswer {
    pub code: i32,
    pub remark: Option<String>,
    pub next_begin_offset: i64,
    pub min_offset: i64,
    pub max_offset: i64,
    pub body: Bytes,
    pub message_count: u32,
}

impl PullAnswer {
    pub(crate) fn status(code: i32, next: i64, min: i64, max: i64) -> Self {
        Self {
            code,
            remark: None,
            next_begin_offset: next,
            min_offset: min,
            max_offset: max,
            body: Bytes::new(),
            message_count: 0,
        }
    }
}

/// Runs a pull on the queue's owner shard.
pub(crate) async fn execute(
    offsets: &RefCell<OffsetTable>,
    polls: &LongPolls,
    store: &ShardStore,
    query: PullQuery,
) -> PullAnswer {
    if let Some(offset) = query.commit_offset {
        offsets
            .borrow_mut()
            .commit(&query.group, &query.topic, query.queue_id, offset);
    }
    let first = read(store, &query);
    if first.code != response_code::PULL_NOT_FOUND || query.suspend_ms == 0 {
        return first;
    }
    // Nothing new: hold the pull. Nothing can land between `read` and
    // `hold` (no await between them on this single-threaded shard).
    let Some(held) = polls.hold(&query.topic, query.queue_id, query.filter.clone()) else {
        return first;
    };
    let timed_out = future::or(
        async {
            held.woken.await;
            false
        },
        async {
            glommio::timer::sleep(Duration::from_millis(query.suspend_ms)).await;
            true
        },
    )
    .await;
    if timed_out {
        polls.forget(&query.topic, query.queue_id, held.id);
    }
    read(store, &query)
}

/// One look at the queue (`getMessage`), never waiting.
fn read(store: &ShardStore, query: &PullQuery) -> PullAnswer {
    let queue = match store.consume_queue(&query.topic, query.queue_id) {
        Ok(queue) => queue,
        Err(err) => {
            let mut answer =
                PullAnswer::status(response_code::SYSTEM_ERROR, query.queue_offset, 0, 0);
            answer.remark = Some(err.to_string());
            return answer;
        }
    };
    let (min, max) = (queue.min_offset(), queue.max_offset());
    let offset = query.queue_offset;
    let status = |code, next| PullAnswer::status(code, next, min, max);
    if max == 0 {
        let code = if offset != 0 {
            response_code::PULL_OFFSET_MOVED
        } else {
            response_code::PULL_NOT_FOUND
        };
        return status(code, 0);
    }
    if offset < min {
        return status(response_code::PULL_OFFSET_MOVED, min);
    }
    if offset == max {
        return status(response_code::PULL_NOT_FOUND, offset);
    }
    if offset > max {
        return status(response_code::PULL_OFFSET_MOVED, max);
    }
    let entries = queue.get(offset, PULL_SCAN_ENTRIES_MAX.max(query.max_messages));
    let mut records: Vec<Bytes> = Vec::new();
    let mut bytes = 0usize;
    let mut next = offset;
    for (index, entry) in entries.iter().enumerate() {
        let size = usize::try_from(entry.size).unwrap_or(0);
        if records.len() >= query.max_messages
            || (!records.is_empty() && bytes + size > query.max_bytes)
        {
            break;
        }
        let queue_offset = offset + index as i64;
        // Lost in a damaged CommitLog range (recovery): skipped, as a
        // message retention removed.
        if entry.is_lost() || !query.filter.matches(entry.tags_code) {
            next = queue_offset + 1;
            continue;
        }
        match store.read_records(entry.physical_offset, size) {
            Some(record) if !query.filter.matches_record(&record) => {
                next = queue_offset + 1;
            }
            Some(record) => {
                bytes += record.len();
                records.push(record);
                next = queue_offset + 1;
            }
            None if entry.physical_offset < store.reader().min_offset() => {
                // Its segment was just deleted by retention and the queue's
                // min offset is not moved yet (Java's MESSAGE_WAS_REMOVING):
                // skip it, so the answer is PULL_RETRY_IMMEDIATELY past it.
                next = queue_offset + 1;
            }
            None => {
                tracing::error!(
                    topic = %query.topic,
                    queue_id = query.queue_id,
                    queue_offset,
                    physical_offset = entry.physical_offset,
                    "ConsumeQueue entry points at unreadable CommitLog bytes"
                );
                break;
            }
        }
    }
    if records.is_empty() {
        let code = if next > offset {
            response_code::PULL_RETRY_IMMEDIATELY
        } else {
            response_code::PULL_NOT_FOUND
        };
        return status(code, next);
    }
    let count = records.len() as u32;
    let body = if records.len() == 1 {
        records.pop().unwrap_or_default()
    } else {
        let mut joined = BytesMut::with_capacity(bytes);
        for record in &records {
            joined.extend_from_slice(record);
        }
        joined.freeze()
    };
    PullAnswer {
        code: response_code::SUCCESS,
        remark: None,
        next_begin_offset: next,
        min_offset: min,
        max_offset: max,
        body,
        message_count: count,
    }
}
