//! The calls acks, changes of invisible time, peeks and POLLING_INFO make
//! on a queue's owner (or every) shard.

use std::future::Future;
use std::rc::Rc;

use ferrocket_runtime::shard::ShardCall;

use super::{queue_offset_of, Popped};
use crate::error::Reject;
use crate::services::filter::TagFilter;
use crate::services::pop::{Checkpoint, CkKey};
use crate::shard::Shard;

/// PEEK_MESSAGE / NOTIFICATION on a queue's owner: what the group's next
/// pop of the queue would start with, changing nothing.
#[derive(Debug, Clone)]
pub(crate) struct PeekQueue {
    pub group: String,
    pub topic: String,
    pub queue_id: i32,
    pub max_messages: usize,
    pub max_bytes: usize,
}

impl ShardCall<Shard> for PeekQueue {
    type Reply = Result<Popped, Reject>;

    async fn run(self, shard: Rc<Shard>) -> Self::Reply {
        shard.assert_owns(&self.topic, self.queue_id);
        let queue = shard.store.consume_queue(&self.topic, self.queue_id)?;
        let min = shard.read_min(&self.topic, self.queue_id, &queue);
        let max = queue.max_offset();
        let start = shard
            .popped_up_to(&self.group, &self.topic, self.queue_id)
            .unwrap_or(min)
            .max(min);
        let limits = (self.max_messages, self.max_bytes);
        let read = (self.topic.as_str(), self.queue_id);
        let found = shard.gather_queue(&queue, read, start, limits, &TagFilter::All);
        Ok(Popped {
            offsets: found.records.iter().map(|r| queue_offset_of(r)).collect(),
            records: found.records,
            start,
            rest: max - start,
            counts: Vec::new(),
        })
    }
}

/// ACK_MESSAGE (one offset) or one entry of BATCH_ACK_MESSAGE, on the
/// owner of the queue read.
#[derive(Debug, Clone)]
pub(crate) struct AckPop {
    pub key: CkKey,
    pub offsets: Vec<i64>,
    /// The handle's reviveQid said an ordered pop.
    pub order: bool,
}

impl ShardCall<Shard> for AckPop {
    type Reply = Result<(), Reject>;

    async fn run(self, shard: Rc<Shard>) -> Self::Reply {
        shard.assert_owns(&self.key.topic, self.key.queue_id);
        if let [offset] = self.offsets[..] {
            shard.check_pop_offset(&self.key.topic, self.key.queue_id, offset)?;
        }
        if !self.order {
            shard.ack_pop(&self.key, &self.offsets);
            return Ok(());
        }
        for offset in self.offsets {
            shard.ack_in_order(&self.key, offset);
        }
        Ok(())
    }
}

/// CHANGE_MESSAGE_INVISIBLETIME: a new one-message checkpoint from now,
/// then the old one acked (Java's order: the message is never unguarded).
#[derive(Debug, Clone)]
pub(crate) struct ChangeInvisible {
    pub key: CkKey,
    pub offset: i64,
    pub invisible_time_ms: i64,
    pub now_ms: i64,
    /// The handle's reviveQid said an ordered pop.
    pub order: bool,
}

impl ShardCall<Shard> for ChangeInvisible {
    type Reply = Result<(), Reject>;

    async fn run(self, shard: Rc<Shard>) -> Self::Reply {
        shard.assert_owns(&self.key.topic, self.key.queue_id);
        shard.check_pop_offset(&self.key.topic, self.key.queue_id, self.offset)?;
        if self.order {
            // The queue stays held until the new time (Java's
            // updateNextVisibleTime).
            let queue_key = (
                self.key.group.clone(),
                self.key.topic.clone(),
                self.key.queue_id,
            );
            let visible_at = self.now_ms + self.invisible_time_ms;
            let mut state = shard.pop().state.borrow_mut();
            if state.extend_order(&queue_key, self.key.pop_time_ms, visible_at) {
                if let Some(log) = shard.pop().log.borrow_mut().as_mut() {
                    log.order(&queue_key, state.order(&queue_key));
                }
            }
            return Ok(());
        }
        let key = CkKey {
            start_offset: self.offset,
            pop_time_ms: self.now_ms,
            ..self.key.clone()
        };
        let ck = Checkpoint {
            invisible_time_ms: self.invisible_time_ms,
            offsets: vec![self.offset],
            acked: 0,

            reput_times: 0,
        };
        if let Some(log) = shard.pop().log.borrow_mut().as_mut() {
            log.checkpoint(&key, &ck);
        }
        shard.pop().state.borrow_mut().add(key, ck);
        shard.ack_pop(&self.key, &[self.offset]);
        Ok(())
    }
}

/// A pop that found nothing waits on the owner of the queues it looked at
/// for a dispatch to any of them (as a held pull does), at most `wait_ms`:
/// a pop of one queue on that queue, a pop of any queue on each owner's
/// queues of the topic at once.
#[derive(Debug, Clone)]
pub(crate) struct HoldQueues {
    pub group: String,
    pub topic: String,
    pub queue_ids: Vec<i32>,
    pub filter: TagFilter,
    pub wait_ms: u64,
}

impl ShardCall<Shard> for HoldQueues {
    type Reply = ();

    async fn run(self, shard: Rc<Shard>) {
        let wait = std::time::Duration::from_millis(self.wait_ms);
        // Forgets the holds however this ends, dropped mid-wait included
        // (a call to the caller's own shard runs inline and is dropped when
        // another owner wakes first).
        let mut held = Holds {
            shard: &shard,
            topic: &self.topic,
            holds: Vec::with_capacity(self.queue_ids.len()),
        };
        for &queue_id in &self.queue_ids {
            shard.assert_owns(&self.topic, queue_id);
            let Ok(queue) = shard.store.consume_queue(&self.topic, queue_id) else {
                continue;
            };
            let start = shard
                .popped_up_to(&self.group, &self.topic, queue_id)
                .unwrap_or(queue.min_offset());
            // Arrived since the look (no await between the checks and the
            // holds).
            if start < queue.max_offset() {
                return;
            }
            if let Some(hold) = shard
                .polls()
                .hold(&self.topic, queue_id, self.filter.clone())
            {
                held.holds.push((queue_id, hold));
            }
        }
        if held.holds.is_empty() {
            glommio::timer::sleep(wait).await;
            return;
        }
        // Woken by the first dispatch to any of the queues.
        let any_woken = futures_lite::future::poll_fn(|cx| {
            let ready = held
                .holds
                .iter_mut()
                .any(|(_, hold)| std::pin::Pin::new(&mut hold.woken).poll(cx).is_ready());
            if ready {
                std::task::Poll::Ready(())
            } else {
                std::task::Poll::Pending
            }
        });
        futures_lite::future::or(any_woken, async {
            glommio::timer::sleep(wait).await;
        })
        .await;
    }
}

/// A pop's holds on one shard, taken back when dropped (forgetting a woken
/// one is a no-op).
struct Holds<'a> {
    shard: &'a Shard,
    topic: &'a str,
    holds: Vec<(i32, crate::services::long_poll::Held)>,
}

impl Drop for Holds<'_> {
    fn drop(&mut self) {
        for (queue_id, hold) in self.holds.drain(..) {
            self.shard.polls().forget(self.topic, queue_id, hold.id);
        }
    }
}
