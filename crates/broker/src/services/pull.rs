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
use ferrocket_runtime::server::ClientGone;
use ferrocket_store::{ConsumeQueue, ShardStore};
use futures_lite::future;

use crate::services::compaction::{self, file::SharedFile};
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
    /// Set when the puller's connection closes: a held pull ends then.
    pub client_gone: Option<ClientGone>,
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
    /// CommitLog bytes from the first message pulled to the CommitLog's
    /// end (0 when none was): how far behind the consumer reads.
    pub behind_bytes: i64,
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
            behind_bytes: 0,
        }
    }
}

/// Runs a pull on the queue's owner shard; `compacted` gives the queue's
/// compacted file when it is a compaction topic's.
pub(crate) async fn execute(
    offsets: &RefCell<OffsetTable>,
    polls: &LongPolls,
    store: &ShardStore,
    query: PullQuery,
    compacted: impl Fn() -> Option<SharedFile>,
) -> PullAnswer {
    if let Some(offset) = query.commit_offset {
        offsets
            .borrow_mut()
            .commit(&query.group, &query.topic, query.queue_id, offset);
    }
    let first = read_through(store, &query, &compacted).await;
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
    );
    let gone = async {
        match &query.client_gone {
            Some(gone) => gone.wait().await,
            None => future::pending().await,
        }
        true
    };
    if future::or(timed_out, gone).await {
        polls.forget(&query.topic, query.queue_id, held.id);
    }
    if query.client_gone.as_ref().is_some_and(ClientGone::is_gone) {
        // Nobody to answer: skip the read.
        return first;
    }
    read_through(store, &query, &compacted).await
}

/// Most object-storage fetches one pull waits for.
const REMOTE_FETCHES_MAX: usize = 2;

/// [`read`], first bringing offloaded bytes back from object storage when
/// the pull starts in a segment only the tier holds (tiered storage). The
/// fetch runs on the tier's thread; this shard serves others meanwhile.
async fn read_through(
    store: &ShardStore,
    query: &PullQuery,
    compacted: &impl Fn() -> Option<SharedFile>,
) -> PullAnswer {
    for _ in 0..REMOTE_FETCHES_MAX {
        let (answer, remote) = read_queue(store, query, compacted);
        let Some((physical_offset, size)) = remote else {
            return answer;
        };
        if let Err(err) = store.fetch_offloaded(physical_offset, size).await {
            let (min, max) = (answer.min_offset, answer.max_offset);
            let mut failed =
                PullAnswer::status(response_code::SYSTEM_ERROR, query.queue_offset, min, max);
            failed.remark = Some(err.to_string());
            return failed;
        }
    }
    read_queue(store, query, compacted).0
}

/// [`read`], through the queue's compacted file for a compaction topic
/// (below its compacted end the file answers; past it, the queue).
fn read_queue(
    store: &ShardStore,
    query: &PullQuery,
    compacted: &impl Fn() -> Option<SharedFile>,
) -> (PullAnswer, Option<(i64, usize)>) {
    let Some(file) = compacted() else {
        return read(store, query);
    };
    let remote = std::cell::Cell::new(None);
    let answer = compaction::read::pull(store, query, &file, |q| {
        let (answer, fetch) = read(store, q);
        remote.set(fetch);
        answer
    });
    (answer, remote.get())
}

/// Tiered storage: when the records from queue `offset` on start in an
/// offloaded segment that is not cached, fetches them (a failure is
/// logged; the read that follows then finds nothing there).
pub(crate) async fn warm_offloaded(store: &ShardStore, queue: &ConsumeQueue, offset: i64) {
    for _ in 0..REMOTE_FETCHES_MAX {
        let found = gather_from(store, queue, offset, (1, usize::MAX), &TagFilter::All);
        let Some((physical_offset, size)) = found.remote else {
            return;
        };
        if let Err(err) = store.fetch_offloaded(physical_offset, size).await {
            tracing::warn!(offset, error = %err, "tiered storage: a pop could not read offloaded messages");
            return;
        }
    }
}

/// One look at the queue (`getMessage`), never waiting; with the CommitLog
/// offset to fetch from object storage when nothing could be read before
/// offloaded bytes that are not cached.
fn read(store: &ShardStore, query: &PullQuery) -> (PullAnswer, Option<(i64, usize)>) {
    let queue = match store.consume_queue(&query.topic, query.queue_id) {
        Ok(queue) => queue,
        Err(err) => {
            let mut answer =
                PullAnswer::status(response_code::SYSTEM_ERROR, query.queue_offset, 0, 0);
            answer.remark = Some(err.to_string());
            return (answer, None);
        }
    };
    let (min, max) = (queue.min_offset(), queue.max_offset());
    let offset = query.queue_offset;
    let status = |code, next| PullAnswer::status(code, next, min, max);
    if let Some((code, next)) = outside(offset, min, max) {
        return (status(code, next), None);
    }
    let found = gather(store, query, &queue);
    assert!(found.next >= offset, "a pull never moves the consumer back");
    assert!(found.records.len() <= query.max_messages.max(1));
    if found.records.is_empty() {
        if found.remote.is_some() {
            // Not yet fetched (or evicted again): never held as "nothing new".
            let code = response_code::PULL_RETRY_IMMEDIATELY;
            return (status(code, offset), found.remote);
        }
        let code = if found.next > offset {
            response_code::PULL_RETRY_IMMEDIATELY
        } else {
            response_code::PULL_NOT_FOUND
        };
        return (status(code, found.next), None);
    }
    let behind_bytes = queue
        .entry(offset)
        .map_or(0, |e| store.reader().written_offset() - e.physical_offset);
    let answer = PullAnswer {
        code: response_code::SUCCESS,
        remark: None,
        next_begin_offset: found.next,
        min_offset: min,
        max_offset: max,
        message_count: found.records.len() as u32,
        body: found.into_body(),
        behind_bytes,
    };
    (answer, None)
}

/// The answer when `offset` is not inside the queue's `min..max`: its code
/// and the offset to pull next.
fn outside(offset: i64, min: i64, max: i64) -> Option<(i32, i64)> {
    if max == 0 {
        let code = if offset != 0 {
            response_code::PULL_OFFSET_MOVED
        } else {
            response_code::PULL_NOT_FOUND
        };
        return Some((code, 0));
    }
    if offset < min {
        return Some((response_code::PULL_OFFSET_MOVED, min));
    }
    if offset == max {
        return Some((response_code::PULL_NOT_FOUND, offset));
    }
    if offset > max {
        return Some((response_code::PULL_OFFSET_MOVED, max));
    }
    None
}

/// The records one pull takes, and the queue offset after the last entry
/// it looked at.
pub(crate) struct Gathered {
    pub records: Vec<Bytes>,
    pub bytes: usize,
    pub next: i64,
    /// Where reading stopped at offloaded bytes not cached yet (tiered
    /// storage): fetch them, then read again.
    pub remote: Option<(i64, usize)>,
}

impl Gathered {
    /// The pull answer's body: the raw records back to back.
    pub fn into_body(mut self) -> Bytes {
        if self.records.len() == 1 {
            return self.records.pop().unwrap_or_default();
        }
        let mut joined = BytesMut::with_capacity(self.bytes);
        for record in &self.records {
            joined.extend_from_slice(record);
        }
        joined.freeze()
    }
}

/// Reads the matching records from `query.queue_offset` on, within the
/// pull's message and byte limits.
fn gather(store: &ShardStore, query: &PullQuery, queue: &ConsumeQueue) -> Gathered {
    let limits = (query.max_messages, query.max_bytes);
    gather_from(store, queue, query.queue_offset, limits, &query.filter)
}

/// Reads the records matching `filter` from `offset` on, at most
/// `(messages, bytes)` of them (a pull's or a pop's read).
pub(crate) fn gather_from(
    store: &ShardStore,
    queue: &ConsumeQueue,
    offset: i64,
    (max_messages, max_bytes): (usize, usize),
    filter: &TagFilter,
) -> Gathered {
    let entries = queue.get(offset, PULL_SCAN_ENTRIES_MAX.max(max_messages));
    let mut found = Gathered {
        records: Vec::new(),
        bytes: 0,
        next: offset,
        remote: None,
    };
    for (index, entry) in entries.iter().enumerate() {
        let size = usize::try_from(entry.size).unwrap_or(0);
        if found.records.len() >= max_messages
            || (!found.records.is_empty() && found.bytes + size > max_bytes)
        {
            break;
        }
        let queue_offset = offset + index as i64;
        // Lost in a damaged CommitLog range (recovery): skipped, as a
        // message retention removed.
        if entry.is_lost() || !filter.matches(entry.tags_code) {
            found.next = queue_offset + 1;
            continue;
        }
        match store.read_records(entry.physical_offset, size) {
            Some(record) if !filter.matches_record(&record) => {}
            Some(record) => {
                found.bytes += record.len();
                found.records.push(record);
            }
            // Its segment was just deleted by retention and the queue's min
            // offset is not moved yet (Java's MESSAGE_WAS_REMOVING): skip
            // it, so the answer is PULL_RETRY_IMMEDIATELY past it.
            None if store.reader().is_offloaded(entry.physical_offset) => {
                found.remote = Some((entry.physical_offset, size));
                break;
            }
            None if entry.physical_offset < store.reader().logical_min_offset() => {}
            None => {
                tracing::error!(
                    queue_offset,
                    physical_offset = entry.physical_offset,
                    "ConsumeQueue entry points at unreadable CommitLog bytes"
                );
                break;
            }
        }
        found.next = queue_offset + 1;
    }
    found
}
