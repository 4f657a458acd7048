//! Pop consumption on a queue's owner shard: the calls a pop, an ack and a
//! change of invisible time make there (`services::pop` holds the state),
//! and the revive step that puts messages whose invisible time ran out
//! into the group's pop retry topic (or, past its `retryMaxTimes`, its
//! dead-letter topic).

use std::cell::RefCell;
use std::rc::Rc;

use bytes::Bytes;
use ferrocket_protocol::body::{perm, TopicConfig};
use ferrocket_protocol::codes::response_code;
use ferrocket_protocol::properties;
use ferrocket_protocol::record::{decode_record, QUEUE_OFFSET_POS};
use ferrocket_runtime::shard::ShardCall;
use ferrocket_store::ConsumeQueue;

use super::Shard;

mod calls;

use crate::clock::now_ms;
use crate::error::Reject;
use crate::services::append::{copy_of, tag_hash};
use crate::services::filter::TagFilter;
use crate::services::offsets::first_message_in_memory;
use crate::services::pop::log::{PopLog, LOG_COMPACT_BYTES};
use crate::services::pop::order::OrderPop;
use crate::services::pop::{AckOutcome, Checkpoint, CkKey, PopQueueKey, PopState, CHECKPOINTS_MAX};
use crate::services::records::try_read_record_through;
use crate::services::topics::{TopicChange, RETRY_TOPIC_PREFIX};
pub(crate) use calls::{AckPop, ChangeInvisible, HoldQueues, PeekQueue};

/// A shard's pop state and its log (opened when the shard starts).
#[derive(Default)]
pub(crate) struct PopStore {
    pub state: RefCell<PopState>,
    pub log: RefCell<Option<PopLog>>,
    /// Pops received here and waiting for messages, per (group, topic,
    /// queue id or -1): POLLING_INFO's answer.
    pub waiting: RefCell<std::collections::HashMap<PopQueueKey, i32>>,
}

/// Most pops waiting per (group, topic, queue) on a shard (`popPollingSize`).
pub const POP_POLLING_PER_KEY_MAX: i32 = 1024;
/// Most pops waiting on a shard (`maxPopPollingSize`).
pub const POP_POLLING_MAX: i32 = 100_000;

impl PopStore {
    /// Whether one more pop may not wait here (Java answers POLLING_FULL).
    pub fn polling_full(&self, key: &PopQueueKey) -> bool {
        let waiting = self.waiting.borrow();
        let total: i32 = waiting.values().sum();
        total >= POP_POLLING_MAX
            || waiting.get(key).copied().unwrap_or(0) >= POP_POLLING_PER_KEY_MAX
    }
}

/// Counts a waiting pop for as long as it lives.
pub(crate) struct Waiting<'a> {
    store: &'a PopStore,
    key: PopQueueKey,
}

impl<'a> Waiting<'a> {
    pub fn new(store: &'a PopStore, key: PopQueueKey) -> Self {
        *store.waiting.borrow_mut().entry(key.clone()).or_default() += 1;
        Waiting { store, key }
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        let mut waiting = self.store.waiting.borrow_mut();
        if let Some(count) = waiting.get_mut(&self.key) {
            *count -= 1;
            if *count <= 0 {
                waiting.remove(&self.key);
            }
        }
    }
}

/// POLLING_INFO on every shard: its waiting pops for a key.
#[derive(Debug, Clone)]
pub(crate) struct WaitingPops(pub PopQueueKey);

impl ShardCall<Shard> for WaitingPops {
    type Reply = i32;

    async fn run(self, shard: Rc<Shard>) -> i32 {
        shard
            .pop()
            .waiting
            .borrow()
            .get(&self.0)
            .copied()
            .unwrap_or(0)
    }
}

/// `%RETRY%{group}_{topic}`: where a pop's un-acked messages come back.
pub fn pop_retry_topic(group: &str, topic: &str) -> String {
    format!("{RETRY_TOPIC_PREFIX}{group}_{topic}")
}

/// Where a pop of one queue starts when the group has no offset there
/// (`initMode`: 0 = MIN, 1 = MAX).
pub const INIT_MODE_MIN: i32 = 0;

/// One queue's part of a pop, run on its owner.
#[derive(Debug, Clone)]
pub(crate) struct PopQueue {
    pub group: String,
    pub topic: String,
    pub queue_id: i32,
    pub max_messages: usize,
    pub max_bytes: usize,
    pub invisible_time_ms: i64,
    pub pop_time_ms: i64,
    pub init_mode: i32,
    pub filter: TagFilter,
    /// An ordered pop (`order=true`), and its `attemptId`.
    pub order: bool,
    pub attempt_id: Option<String>,
}

/// What a queue gave a pop.
#[derive(Debug, Clone, Default)]
pub(crate) struct Popped {
    pub records: Vec<Bytes>,
    pub offsets: Vec<i64>,
    /// Where this pop started on the queue (the checkpoint's start).
    pub start: i64,
    /// Messages left in the queue after this pop.
    pub rest: i64,
    /// Ordered pops: times each message was handed out before.
    pub counts: Vec<u32>,
}

impl ShardCall<Shard> for PopQueue {
    type Reply = Result<Popped, Reject>;

    async fn run(self, shard: Rc<Shard>) -> Self::Reply {
        shard.assert_owns(&self.topic, self.queue_id);
        shard.warm_offloaded(&self).await;
        shard.pop_queue(&self)
    }
}

impl Shard {
    /// Where a group's next pop of a queue starts, once it has one: its
    /// committed offset or what this shard popped since, the later.
    pub(crate) fn popped_up_to(&self, group: &str, topic: &str, queue_id: i32) -> Option<i64> {
        let committed = self.offsets().borrow().query(group, topic, queue_id);
        let popped = self
            .pop()
            .state
            .borrow()
            .next_offset(group, topic, queue_id);
        committed.max(popped)
    }

    /// Where a group's first pop of a queue starts (`initMode`).
    fn initial_pop_offset(&self, pop: &PopQueue, queue: &ConsumeQueue) -> i64 {
        let (min, max) = (
            self.read_min(&pop.topic, pop.queue_id, queue),
            queue.max_offset(),
        );
        if pop.init_mode == INIT_MODE_MIN || pop.topic.starts_with(RETRY_TOPIC_PREFIX) {
            return min;
        }
        // MAX: Java starts at the last message, or at the first when the
        // queue is still in memory (`initPopOffsetByCheckMsgInMem`).
        let written = self.store.reader().written_offset();
        if first_message_in_memory(queue, written, self.env.in_memory_bytes) {
            min
        } else {
            (max - 1).max(min)
        }
    }

    /// Tiered storage: brings the offloaded bytes where this pop starts
    /// into the read-through cache first (the shard serves others meanwhile).
    async fn warm_offloaded(&self, pop: &PopQueue) {
        let Ok(queue) = self.store.consume_queue(&pop.topic, pop.queue_id) else {
            return;
        };
        let min = queue.min_offset();
        let start = self
            .popped_up_to(&pop.group, &pop.topic, pop.queue_id)
            .map_or(min, |offset| offset.max(min));
        crate::services::pull::warm_offloaded(&self.store, &queue, start).await;
    }

    fn pop_queue(&self, pop: &PopQueue) -> Result<Popped, Reject> {
        let queue = self.store.consume_queue(&pop.topic, pop.queue_id)?;
        if pop.order {
            return self.pop_queue_in_order(pop, &queue);
        }
        let (min, max) = (
            self.read_min(&pop.topic, pop.queue_id, &queue),
            queue.max_offset(),
        );
        let start = match self.popped_up_to(&pop.group, &pop.topic, pop.queue_id) {
            Some(offset) => offset.max(min),
            None => self.initial_pop_offset(pop, &queue),
        };
        if start >= max {
            return Ok(Popped {
                start,
                ..Popped::default()
            });
        }
        if self.pop().state.borrow().len() >= CHECKPOINTS_MAX {
            return Err(Reject::new(
                response_code::POLLING_FULL,
                "too many messages in flight on this broker",
            ));
        }
        let limits = (pop.max_messages, pop.max_bytes);
        let found = self.gather_queue(
            &queue,
            (&pop.topic, pop.queue_id),
            start,
            limits,
            &pop.filter,
        );
        let offsets: Vec<i64> = found.records.iter().map(|r| queue_offset_of(r)).collect();
        if !offsets.is_empty() {
            let key = CkKey {
                group: pop.group.clone(),
                topic: pop.topic.clone(),
                queue_id: pop.queue_id,
                start_offset: start,
                pop_time_ms: pop.pop_time_ms,
            };
            let ck = Checkpoint {
                invisible_time_ms: pop.invisible_time_ms,
                offsets: offsets.clone(),
                acked: 0,

                reput_times: 0,
            };
            if let Some(log) = self.pop().log.borrow_mut().as_mut() {
                log.checkpoint(&key, &ck);
            }
            self.pop().state.borrow_mut().add(key, ck);
        }
        // The committed offset of a popped queue means "popped up to".
        self.pop()
            .state
            .borrow_mut()
            .set_next(&pop.group, &pop.topic, pop.queue_id, found.next);
        self.offsets()
            .borrow_mut()
            .commit(&pop.group, &pop.topic, pop.queue_id, found.next);
        Ok(Popped {
            rest: max - found.next,
            records: found.records,
            offsets,
            start,
            counts: Vec::new(),
        })
    }

    /// An ordered pop: nothing while the queue's last ordered pop still
    /// holds it; else from the committed offset, the messages in order.
    fn pop_queue_in_order(&self, pop: &PopQueue, queue: &ConsumeQueue) -> Result<Popped, Reject> {
        let (min, max) = (
            self.read_min(&pop.topic, pop.queue_id, queue),
            queue.max_offset(),
        );
        let key = (pop.group.clone(), pop.topic.clone(), pop.queue_id);
        let previous = self.pop().state.borrow().order(&key).cloned();
        let committed = self
            .offsets()
            .borrow()
            .query(&pop.group, &pop.topic, pop.queue_id);
        let start = committed.map_or_else(|| self.initial_pop_offset(pop, queue), |o| o.max(min));
        let held = previous
            .as_ref()
            .is_some_and(|p| p.blocks(pop.pop_time_ms, pop.attempt_id.as_deref()));
        if held || start >= max {
            return Ok(Popped {
                start,
                rest: max - start,
                ..Popped::default()
            });
        }
        let limits = (pop.max_messages, pop.max_bytes);
        let found = self.gather_queue(
            queue,
            (&pop.topic, pop.queue_id),
            start,
            limits,
            &pop.filter,
        );
        let offsets: Vec<i64> = found.records.iter().map(|r| queue_offset_of(r)).collect();
        if offsets.is_empty() {
            // Only filtered-out messages: nothing to hold the queue for.
            self.offsets()
                .borrow_mut()
                .commit(&pop.group, &pop.topic, pop.queue_id, found.next);
            return Ok(Popped {
                start,
                rest: max - found.next,
                ..Popped::default()
            });
        }
        let counts: Vec<u32> = offsets
            .iter()
            .map(|o| {
                previous
                    .as_ref()
                    .and_then(|p| p.count_of(*o))
                    .map_or(0, |c| c + 1)
            })
            .collect();
        let order = OrderPop {
            pop_time_ms: pop.pop_time_ms,
            invisible_time_ms: pop.invisible_time_ms,
            offsets: offsets.clone(),
            acked: 0,
            counts: counts.clone(),
            attempt_id: pop.attempt_id.clone(),
        };
        if let Some(log) = self.pop().log.borrow_mut().as_mut() {
            log.order(&key, Some(&order));
        }
        self.pop().state.borrow_mut().set_order(key, Some(order));
        if committed.is_none() {
            self.offsets()
                .borrow_mut()
                .commit(&pop.group, &pop.topic, pop.queue_id, start);
        }
        Ok(Popped {
            rest: max - found.next,
            records: found.records,
            offsets,
            start,
            counts,
        })
    }

    /// An ordered ack: commits the group's offset up to the first message
    /// of the queue's ordered pop not acked yet.
    fn ack_in_order(&self, key: &CkKey, offset: i64) {
        let queue_key = (key.group.clone(), key.topic.clone(), key.queue_id);
        let commit = self
            .pop()
            .state
            .borrow_mut()
            .ack_order(&queue_key, offset, key.pop_time_ms);
        let Some(commit) = commit else {
            return;
        };
        self.offsets()
            .borrow_mut()
            .commit(&key.group, &key.topic, key.queue_id, commit);
        let state = self.pop().state.borrow();
        if let Some(log) = self.pop().log.borrow_mut().as_mut() {
            log.order(&queue_key, state.order(&queue_key));
        }
    }

    /// Refuses an ack or change for an offset the queue does not hold
    /// (Java: NO_MESSAGE).
    fn check_pop_offset(&self, topic: &str, queue_id: i32, offset: i64) -> Result<(), Reject> {
        let queue = self.store.consume_queue(topic, queue_id)?;
        if offset < queue.min_offset() || offset >= queue.max_offset() {
            return Err(Reject::new(
                response_code::NO_MESSAGE,
                format!(
                    "offset {offset} is not in queue {topic}#{queue_id} [{}, {})",
                    queue.min_offset(),
                    queue.max_offset()
                ),
            ));
        }
        Ok(())
    }

    /// Acks `offsets` of checkpoint `key`; the ones that were open go to
    /// the log as one line.
    fn ack_pop(&self, key: &CkKey, offsets: &[i64]) {
        let acked: Vec<i64> = {
            let mut state = self.pop().state.borrow_mut();
            offsets
                .iter()
                .copied()
                .filter(|offset| state.ack(key, *offset) == AckOutcome::Acked)
                .collect()
        };
        if let Some(log) = self.pop().log.borrow_mut().as_mut() {
            log.acks(key, &acked);
        }
    }

    /// One revive pass: every checkpoint whose invisible time ended gives
    /// its un-acked messages back; returns how many messages.
    pub async fn revive_due(&self) -> usize {
        let due = self.pop().state.borrow_mut().take_due(now_ms());
        let mut revived = 0;
        for (key, ck) in due {
            let pending = ck.pending();
            match self.revive(&key, &pending).await {
                Ok(()) => {
                    revived += pending.len();
                    if let Some(log) = self.pop().log.borrow_mut().as_mut() {
                        log.done(&key);
                    }
                }
                Err(reject) => {
                    tracing::warn!(group = %key.group, topic = %key.topic, remark = %reject.remark,
                        "pop revive failed; trying again later");
                    let again = ck.after_failed_revive();
                    if let Some(log) = self.pop().log.borrow_mut().as_mut() {
                        log.checkpoint(&key, &again);
                    }
                    self.pop().state.borrow_mut().add(key, again);
                }
            }
        }
        revived
    }

    /// Puts the messages at `offsets` of the checkpoint's queue into the
    /// group's pop retry topic, or its DLQ past `retryMaxTimes`.
    async fn revive(&self, key: &CkKey, offsets: &[i64]) -> Result<(), Reject> {
        let group = self.find_or_create_group(&key.group).await?;
        let queue = self.store.consume_queue(&key.topic, key.queue_id)?;
        // Every message read first, through tiered storage (its segment
        // may have left the local disk while it was invisible): a store
        // error fails the revive before anything is copied, to retry.
        let mut held = Vec::with_capacity(offsets.len());
        for offset in offsets {
            // Gone by retention: nothing to give back.
            let Some(entry) = queue.entry(*offset).filter(|e| !e.is_lost()) else {
                continue;
            };
            if let Some(bytes) = try_read_record_through(&self.store, entry.physical_offset).await?
            {
                held.push(bytes);
            }
        }
        for bytes in held {
            let source = decode_record(&bytes, false).map_err(|e| Reject::system(e.to_string()))?;
            let mut props = source.properties();
            let original = props
                .get(properties::RETRY_TOPIC)
                .map(str::to_owned)
                .unwrap_or_else(|| key.topic.clone());
            if props.get(properties::RETRY_TOPIC).is_none() {
                props.insert(properties::RETRY_TOPIC, &key.topic);
            }
            let to_dlq = source.reconsume_times >= group.retry_max_times;
            let target = if to_dlq {
                crate::services::topics::dlq_topic(&key.group)
            } else if key.topic.starts_with(RETRY_TOPIC_PREFIX) {
                key.topic.clone()
            } else {
                pop_retry_topic(&key.group, &original)
            };
            self.ensure_pop_topic(&target).await?;
            let props_bytes = props.to_bytes();
            let record = ferrocket_protocol::record::NewRecord {
                reconsume_times: source.reconsume_times.saturating_add(1),
                prepared_transaction_offset: 0,
                ..copy_of(
                    &source,
                    &target,
                    0,
                    &props_bytes,
                    (now_ms(), self.env.store_host),
                )
            };
            self.store_record(&record, tag_hash(&props)).await?;
            if to_dlq {
                self.metrics().count_dlq(&key.group, &original);
            }
        }
        Ok(())
    }

    /// A pop retry or dead-letter topic: one queue, read and write.
    async fn ensure_pop_topic(&self, name: &str) -> Result<(), Reject> {
        let config = TopicConfig {
            perm: perm::READ_WRITE,
            ..TopicConfig::new(name, 1)
        };
        self.ensure_topic(name, TopicChange::Upsert(config))
            .await?
            .map(|_| ())
            .ok_or_else(|| Reject::system(format!("topic[{name}] not exist")))
    }

    /// Opens this shard's pop log and replays it (at start).
    pub fn open_pop_log(&self) -> Result<(), String> {
        let (log, state) = PopLog::open(&self.config().store_path_root_dir, self.index)?;
        if state.len() > 0 {
            tracing::info!(
                shard = self.index,
                checkpoints = state.len(),
                "pop state recovered"
            );
        }
        *self.pop().state.borrow_mut() = state;
        *self.pop().log.borrow_mut() = Some(log);
        Ok(())
    }

    /// fdatasyncs the pop log off the executor (and rewrites it when it
    /// grew past its limit).
    pub async fn sync_pop_log(&self) {
        let file = self
            .pop()
            .log
            .borrow_mut()
            .as_mut()
            .and_then(PopLog::take_sync);
        if let Some(file) = file {
            let synced = glommio::executor()
                .spawn_blocking(move || file.sync_data())
                .await;
            if let Err(e) = synced {
                tracing::error!(error = %e, "pop log fdatasync failed");
            }
        }
        let big = self
            .pop()
            .log
            .borrow()
            .as_ref()
            .is_some_and(|l| l.written() > LOG_COMPACT_BYTES);
        if big {
            let state = self.pop().state.borrow();
            if let Some(log) = self.pop().log.borrow_mut().as_mut() {
                if let Err(e) = log.compact(&state) {
                    tracing::error!(error = %e, "pop log rewrite failed");
                }
            }
        }
    }
}

/// QUEUEOFFSET of a stored record.
fn queue_offset_of(record: &[u8]) -> i64 {
    let mut bytes = [0u8; 8];
    bytes.copy_from_slice(&record[QUEUE_OFFSET_POS..QUEUE_OFFSET_POS + 8]);
    i64::from_be_bytes(bytes)
}
