//! The ceiling's queues: offsets for sends and, once a consumer has shown
//! up, the newest messages of each queue in memory so pulls (and long
//! polls) can be answered. Nothing is written anywhere; a queue keeps at
//! most [`QUEUE_MESSAGES_MAX`] messages and [`QUEUE_BYTES_MAX`] bytes and
//! drops the oldest.
//!
//! Until the first PULL_MESSAGE or GET_MAX_OFFSET no message is kept, so a
//! produce run costs the ceiling what it cost before pulls were served:
//! one offset per send.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use ferrocket_protocol::codes::response_code;
use ferrocket_protocol::header::{
    OffsetResponseHeader, PullMessageRequestHeader, PullMessageResponseHeader, QueueRequestHeader,
    SendMessageRequestHeader,
};
use ferrocket_protocol::record::NewRecord;
use ferrocket_protocol::RemotingCommand;
use tokio::sync::Notify;

/// Messages kept per queue for pulls.
pub const QUEUE_MESSAGES_MAX: usize = 16_384;
/// Bytes of records kept per queue for pulls.
pub const QUEUE_BYTES_MAX: usize = 64 * 1024 * 1024;
/// Most messages one pull answer carries.
const PULL_MESSAGES_MAX: usize = 1_024;
/// Most record bytes one pull answer carries (always at least one record),
/// well under the client's frame limit.
const PULL_BYTES_MAX: usize = 4 * 1024 * 1024;
/// Longest a pull is held waiting for a message.
const SUSPEND_MS_MAX: u64 = 30_000;

/// Every queue the route lists.
pub(super) struct Queues {
    queues: Vec<Queue>,
    /// A consumer asked for something: sends keep their messages from now.
    consumed: AtomicBool,
    /// The store host written into kept records.
    store_host: SocketAddr,
}

struct Queue {
    kept: Mutex<Kept>,
    arrived: Notify,
}

/// One queue's next offset and its newest messages, the last at
/// `next_offset - 1`.
#[derive(Default)]
struct Kept {
    next_offset: i64,
    records: VecDeque<Bytes>,
    /// Bytes of `records`.
    bytes: usize,
}

impl Kept {
    fn min_offset(&self) -> i64 {
        self.next_offset - self.records.len() as i64
    }

    fn push(&mut self, record: Bytes) {
        self.bytes += record.len();
        self.records.push_back(record);
        while self.records.len() > QUEUE_MESSAGES_MAX || self.bytes > QUEUE_BYTES_MAX {
            match self.records.pop_front() {
                Some(old) => self.bytes -= old.len(),
                None => break,
            }
        }
    }

    fn clear(&mut self) {
        self.records.clear();
        self.bytes = 0;
    }
}

/// What a pull gets now.
pub(super) enum Pulled {
    Answer(RemotingCommand),
    /// Nothing new yet and the consumer asked to wait: hold it this long.
    Hold(Duration),
}

impl Queues {
    pub(super) fn new(count: i32, store_host: SocketAddr) -> Self {
        assert!(count >= 1, "the ceiling serves at least one queue");
        let queues = (0..count)
            .map(|_| Queue {
                kept: Mutex::new(Kept::default()),
                arrived: Notify::new(),
            })
            .collect();
        Self {
            queues,
            consumed: AtomicBool::new(false),
            store_host,
        }
    }

    fn queue(&self, queue_id: i32) -> Option<&Queue> {
        usize::try_from(queue_id)
            .ok()
            .and_then(|index| self.queues.get(index))
    }

    fn lock(queue: &Queue) -> std::sync::MutexGuard<'_, Kept> {
        // A panic while holding the lock cannot leave Kept half-changed in a
        // way that matters to a benchmark: carry on with it.
        queue
            .kept
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The queue offset of a send on `queue_id` (queues outside the route
    /// share the first one's offsets and are not kept), keeping the message
    /// when `keep` and a consumer has shown up.
    pub(super) fn append(&self, queue_id: i32, request: &RemotingCommand, keep: bool) -> i64 {
        let (queue, routed) = match self.queue(queue_id) {
            Some(queue) => (queue, true),
            None => (&self.queues[0], false),
        };
        let mut kept = Self::lock(queue);
        // Read under the lock: GET_MAX_OFFSET sets the flag before it takes
        // the lock to read the next offset, so every message at or after
        // that offset is kept.
        let consumed = self.consumed.load(Ordering::SeqCst);
        let offset = kept.next_offset;
        kept.next_offset += 1;
        let record = (keep && routed && consumed)
            .then(|| self.record_of(queue_id, offset, request))
            .flatten();
        match record {
            Some(record) => kept.push(record),
            // The kept messages must end at the next offset: a message not
            // kept ends them.
            None => kept.clear(),
        }
        drop(kept);
        if consumed {
            // Held pulls look again (a message not kept moves them on).
            queue.arrived.notify_waiters();
        }
        offset
    }

    /// The stored form of one send, as a broker would keep it (a send whose
    /// header does not read is answered but not kept).
    fn record_of(&self, queue_id: i32, offset: i64, request: &RemotingCommand) -> Option<Bytes> {
        let header = SendMessageRequestHeader::from_ext(&request.ext_fields).ok()?;
        let properties = header.properties.as_deref().unwrap_or("");
        let record = NewRecord {
            topic: &header.topic,
            queue_id,
            flag: header.flag.unwrap_or(0),
            sys_flag: 0,
            born_timestamp_ms: header.born_timestamp.unwrap_or(0),
            born_host: self.store_host,
            store_timestamp_ms: header.born_timestamp.unwrap_or(0),
            store_host: self.store_host,
            reconsume_times: 0,
            prepared_transaction_offset: 0,
            body: &request.body,
            properties: properties.as_bytes(),
        };
        let mut out = BytesMut::with_capacity(record.encoded_len());
        record.encode(offset, 0, &mut out).ok()?;
        Some(out.freeze())
    }

    /// GET_MAX_OFFSET: the queue's next offset.
    pub(super) fn max_offset(&self, request: &RemotingCommand) -> RemotingCommand {
        self.consumed.store(true, Ordering::SeqCst);
        let Ok(header) = QueueRequestHeader::from_ext(&request.ext_fields) else {
            return bad_request(request);
        };
        let Some(queue) = self.queue(header.queue_id) else {
            return bad_request(request);
        };
        let offset = Self::lock(queue).next_offset;
        let mut answer = RemotingCommand::response_to(request, response_code::SUCCESS, None);
        answer.ext_fields = OffsetResponseHeader { offset }.to_ext();
        answer
    }

    /// PULL_MESSAGE, answered from the kept messages; `hold_done` when the
    /// pull was already held once (it is answered now whatever it finds).
    pub(super) fn pull(&self, request: &RemotingCommand, hold_done: bool) -> Pulled {
        self.consumed.store(true, Ordering::SeqCst);
        let Ok(header) = PullMessageRequestHeader::from_ext(&request.ext_fields) else {
            return Pulled::Answer(bad_request(request));
        };
        let Some(queue) = self.queue(header.queue_id) else {
            return Pulled::Answer(bad_request(request));
        };
        let kept = Self::lock(queue);
        let (min, max) = (kept.min_offset(), kept.next_offset);
        let offset = header.queue_offset;
        let (code, next, body) = if offset < min || offset > max {
            (
                response_code::PULL_OFFSET_MOVED,
                offset.clamp(min, max),
                None,
            )
        } else if offset == max {
            let suspend = header.sys_flag & ferrocket_protocol::header::pull_sys_flag::SUSPEND != 0;
            let suspend_ms = header.suspend_timeout_millis.unwrap_or(0).max(0) as u64;
            if suspend && suspend_ms > 0 && !hold_done {
                return Pulled::Hold(Duration::from_millis(suspend_ms.min(SUSPEND_MS_MAX)));
            }
            (response_code::PULL_NOT_FOUND, offset, None)
        } else {
            let wanted = usize::try_from(header.max_msg_nums.max(1))
                .unwrap_or(1)
                .min(PULL_MESSAGES_MAX);
            let from = (offset - min) as usize;
            let records = kept.records.range(from..).take(wanted);
            let mut body = BytesMut::new();
            let mut count = 0;
            for record in records {
                if count > 0 && body.len() + record.len() > PULL_BYTES_MAX {
                    break;
                }
                body.extend_from_slice(record);
                count += 1;
            }
            (response_code::SUCCESS, offset + count, Some(body.freeze()))
        };
        drop(kept);
        let mut answer = RemotingCommand::response_to(request, code, None);
        answer.ext_fields = PullMessageResponseHeader {
            suggest_which_broker_id: 0,
            next_begin_offset: next,
            min_offset: min,
            max_offset: max,
        }
        .to_ext();
        if let Some(body) = body {
            answer.body = body;
        }
        Pulled::Answer(answer)
    }

    /// Waits until a message arrives on `request`'s queue or `wait` passes.
    pub(super) async fn wait_for_message(&self, request: &RemotingCommand, wait: Duration) {
        let Ok(header) = PullMessageRequestHeader::from_ext(&request.ext_fields) else {
            return;
        };
        let Some(queue) = self.queue(header.queue_id) else {
            return;
        };
        let arrived = queue.arrived.notified();
        tokio::pin!(arrived);
        // Registered before looking, so a message appended in between wakes it.
        arrived.as_mut().enable();
        if Self::lock(queue).next_offset > header.queue_offset {
            return;
        }
        let _ = tokio::time::timeout(wait, arrived).await;
    }
}

fn bad_request(request: &RemotingCommand) -> RemotingCommand {
    RemotingCommand::response_to(
        request,
        response_code::SYSTEM_ERROR,
        Some("the ceiling could not read this request's header or queue".into()),
    )
}

#[cfg(test)]
impl Queues {
    /// Sends answered so far, over all queues.
    pub(super) fn appended(&self) -> i64 {
        self.queues.iter().map(|q| Self::lock(q).next_offset).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferrocket_protocol::codes::request_code;
    use ferrocket_protocol::header::pull_sys_flag;
    use ferrocket_protocol::record::records;

    fn send(body: &[u8]) -> RemotingCommand {
        let header = SendMessageRequestHeader {
            producer_group: "G".into(),
            topic: "T".into(),
            queue_id: Some(1),
            born_timestamp: Some(5),
            properties: Some("KEYS\u{1}k\u{2}".into()),
            ..SendMessageRequestHeader::default()
        };
        let mut request = RemotingCommand::request(request_code::SEND_MESSAGE_V2);
        request.ext_fields = header.to_ext();
        request.body = Bytes::copy_from_slice(body);
        request
    }

    fn pull(offset: i64, max: i32, suspend_ms: i64) -> RemotingCommand {
        let header = PullMessageRequestHeader {
            consumer_group: "C".into(),
            topic: "T".into(),
            queue_id: 1,
            queue_offset: offset,
            max_msg_nums: max,
            sys_flag: if suspend_ms > 0 {
                pull_sys_flag::SUSPEND
            } else {
                0
            },
            suspend_timeout_millis: Some(suspend_ms),
            ..PullMessageRequestHeader::default()
        };
        let mut request = RemotingCommand::request(request_code::PULL_MESSAGE);
        request.ext_fields = header.to_ext();
        request
    }

    fn answer(pulled: Pulled) -> RemotingCommand {
        match pulled {
            Pulled::Answer(answer) => answer,
            Pulled::Hold(wait) => panic!("held for {wait:?}"),
        }
    }

    fn next_begin(answer: &RemotingCommand) -> i64 {
        answer
            .ext_fields
            .get_i64("nextBeginOffset")
            .unwrap()
            .unwrap()
    }

    #[test]
    fn messages_are_kept_once_a_consumer_shows_up_and_pulled_in_order() {
        let queues = Queues::new(2, "127.0.0.1:9".parse().unwrap());
        assert_eq!(queues.append(1, &send(b"before"), true), 0);
        let mut max = RemotingCommand::request(request_code::GET_MAX_OFFSET);
        max.ext_fields = QueueRequestHeader {
            topic: "T".into(),
            queue_id: 1,
        }
        .to_ext();
        let offset = queues.max_offset(&max).ext_fields.get_i64("offset");
        assert_eq!(offset.unwrap(), Some(1));
        // Before the consumer: not kept, so the offset has moved on.
        let moved = answer(queues.pull(&pull(0, 32, 0), false));
        assert_eq!(moved.code, response_code::PULL_OFFSET_MOVED);
        assert_eq!(next_begin(&moved), 1);
        for body in [&b"one"[..], b"two", b"three"] {
            queues.append(1, &send(body), true);
        }
        let found = answer(queues.pull(&pull(1, 2, 0), false));
        assert_eq!(found.code, response_code::SUCCESS);
        assert_eq!(next_begin(&found), 3);
        let bodies: Vec<_> = records(&found.body, true)
            .map(|record| record.unwrap().body.to_vec())
            .collect();
        assert_eq!(bodies, [b"one".to_vec(), b"two".to_vec()]);
        let view = records(&found.body, true).next().unwrap().unwrap();
        assert_eq!((view.topic, view.queue_id, view.queue_offset), ("T", 1, 1));
        // At the end: held when the consumer asked to wait, else not found.
        assert!(matches!(
            queues.pull(&pull(4, 32, 1_000), false),
            Pulled::Hold(_)
        ));
        let empty = answer(queues.pull(&pull(4, 32, 1_000), true));
        assert_eq!(empty.code, response_code::PULL_NOT_FOUND);
        assert_eq!(next_begin(&empty), 4);
        let beyond = answer(queues.pull(&pull(9, 32, 0), false));
        assert_eq!(beyond.code, response_code::PULL_OFFSET_MOVED);
        assert_eq!(next_begin(&beyond), 4);
    }

    #[test]
    fn a_queue_keeps_only_its_newest_messages_and_batches_are_not_kept() {
        let queues = Queues::new(2, "127.0.0.1:9".parse().unwrap());
        answer(queues.pull(&pull(0, 1, 0), false));
        for _ in 0..QUEUE_MESSAGES_MAX + 3 {
            queues.append(1, &send(b"m"), true);
        }
        let old = answer(queues.pull(&pull(0, 1, 0), false));
        assert_eq!(old.code, response_code::PULL_OFFSET_MOVED);
        assert_eq!(next_begin(&old), 3);
        let oldest_kept = answer(queues.pull(&pull(3, 1, 0), false));
        assert_eq!(oldest_kept.code, response_code::SUCCESS);
        // A batch is answered but not kept, and what was kept before it
        // can no longer be pulled at its offsets.
        queues.append(1, &send(b"batch"), false);
        let end = QUEUE_MESSAGES_MAX as i64 + 4;
        assert_eq!(queues.appended(), end);
        let after = answer(queues.pull(&pull(3, 1, 0), false));
        assert_eq!(after.code, response_code::PULL_OFFSET_MOVED);
        assert_eq!(next_begin(&after), end);
    }

    #[test]
    fn answers_and_queues_are_capped_in_bytes() {
        let queues = Queues::new(2, "127.0.0.1:9".parse().unwrap());
        answer(queues.pull(&pull(0, 1, 0), false));
        let big = vec![b'x'; 3 * 1024 * 1024];
        for _ in 0..30 {
            queues.append(1, &send(&big), true);
        }
        // 30 records of 3 MiB: the queue keeps what fits in its 64 MiB.
        let moved = answer(queues.pull(&pull(0, 32, 0), false));
        assert_eq!(moved.code, response_code::PULL_OFFSET_MOVED);
        let first = next_begin(&moved);
        assert!((9..=10).contains(&first), "{first}");
        // One 3 MiB record per answer: a second would pass 4 MiB.
        let found = answer(queues.pull(&pull(first, 32, 0), false));
        assert_eq!(next_begin(&found), first + 1);
        // A send to a queue outside the route is answered, never kept.
        // (It takes the first queue's next offset.)
        queues.append(7, &send(b"stray"), true);
        let mut first_queue = pull(0, 1, 0);
        first_queue.ext_fields.insert("queueId", "0");
        let stray = answer(queues.pull(&first_queue, false));
        assert_eq!(stray.code, response_code::PULL_OFFSET_MOVED);
        assert_eq!(next_begin(&stray), 1);
    }

    #[tokio::test]
    async fn a_held_pull_wakes_when_a_message_arrives() {
        let queues = std::sync::Arc::new(Queues::new(2, "127.0.0.1:9".parse().unwrap()));
        answer(queues.pull(&pull(0, 1, 0), false));
        let waiting = {
            let queues = std::sync::Arc::clone(&queues);
            tokio::spawn(async move {
                let started = std::time::Instant::now();
                queues
                    .wait_for_message(&pull(0, 1, 10_000), Duration::from_secs(10))
                    .await;
                started.elapsed()
            })
        };
        tokio::time::sleep(Duration::from_millis(50)).await;
        queues.append(1, &send(b"wake"), true);
        let waited = waiting.await.unwrap();
        assert!(waited < Duration::from_secs(5), "{waited:?}");
        let found = answer(queues.pull(&pull(0, 1, 10_000), true));
        assert_eq!(found.code, response_code::SUCCESS);
    }
}
