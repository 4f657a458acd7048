//! Pop consumption's state on a queue's owner shard (RocketMQ 5's
//! `PopMessageProcessor` / `AckMessageProcessor` / `PopReviveService`, kept
//! as DESIGN asks: with the queue). For every pop of a queue a checkpoint
//! names the offsets it handed out, when, and for how long they are
//! invisible; acks set its bits; a checkpoint still holding un-acked
//! offsets when its invisible time ends is revived: those messages are put
//! again into the group's pop retry topic (or its DLQ) and popped anew.
//!
//! Where Java writes checkpoints and acks as messages into
//! `rmq_sys_REVIVE_LOG_{cluster}`, released through the timer wheel and
//! read back by a revive thread, Ferrocket keeps them in memory on the
//! owner shard, indexed by revive time, and makes them durable in an
//! append-only log per shard (`log`): one line per pop and per ack, no
//! CommitLog record, no timer-wheel slot and no revive-topic read per
//! message. A restart replays the log.

pub(crate) mod log;
pub(crate) mod order;

use std::collections::{BTreeSet, HashMap};

use serde::{Deserialize, Serialize};

/// Most messages one pop returns (`maxMsgNums` above it is refused).
pub const POP_MESSAGES_MAX: usize = 32;
/// Most checkpoints a shard keeps (`popInflightMessageThreshold`-like):
/// past it pops of this shard's queues answer POLLING_FULL.
pub const CHECKPOINTS_MAX: usize = 1_000_000;

/// A pop of one queue: who popped what, when, for how long.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub(crate) struct CkKey {
    #[serde(rename = "g")]
    pub group: String,
    /// The topic read (a pop retry topic for redeliveries).
    #[serde(rename = "t")]
    pub topic: String,
    #[serde(rename = "q")]
    pub queue_id: i32,
    /// Queue offset the pop started at (`ckQueueOffset` in the handle).
    #[serde(rename = "so")]
    pub start_offset: i64,
    #[serde(rename = "pt")]
    pub pop_time_ms: i64,
}

/// A checkpoint: the offsets handed out and which of them are acked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Checkpoint {
    #[serde(rename = "it")]
    pub invisible_time_ms: i64,
    /// The queue offsets handed out, ascending (at most 32).
    #[serde(rename = "o")]
    pub offsets: Vec<i64>,
    /// Bit i: `offsets[i]` is acked.
    #[serde(rename = "a", default)]
    pub acked: u64,
    /// Failed revives so far (Java's `rePutTimes`).
    #[serde(rename = "rp", default)]
    pub reput_times: u32,
}

/// Java's back-off for a checkpoint whose messages could not be put back
/// (`PopReviveService`), seconds by failed attempts so far.
pub const REVIVE_BACKOFF_S: [i64; 17] = [
    10, 20, 30, 60, 120, 180, 240, 300, 360, 420, 480, 540, 600, 1200, 1800, 3600, 7200,
];

impl Checkpoint {
    /// The checkpoint again after a failed revive: later by the next step
    /// of [`REVIVE_BACKOFF_S`].
    pub fn after_failed_revive(&self) -> Checkpoint {
        let step = (self.reput_times as usize).min(REVIVE_BACKOFF_S.len() - 1);
        Checkpoint {
            invisible_time_ms: self.invisible_time_ms + REVIVE_BACKOFF_S[step] * 1000,
            reput_times: self.reput_times + 1,
            ..self.clone()
        }
    }
}

impl Checkpoint {
    pub fn revive_at_ms(&self, key: &CkKey) -> i64 {
        key.pop_time_ms.saturating_add(self.invisible_time_ms)
    }

    pub fn all_acked(&self) -> bool {
        let all = if self.offsets.len() >= 64 {
            u64::MAX
        } else {
            (1u64 << self.offsets.len()) - 1
        };
        self.acked & all == all
    }

    /// Offsets not acked yet.
    pub fn pending(&self) -> Vec<i64> {
        self.offsets
            .iter()
            .enumerate()
            .filter(|(i, _)| self.acked & (1 << i) == 0)
            .map(|(_, o)| *o)
            .collect()
    }
}

/// What an ack found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AckOutcome {
    /// The bit was set (and the checkpoint is gone when it was the last).
    Acked,
    /// Already acked, revived, or never popped: nothing to do (Java answers
    /// these with SUCCESS too).
    Unknown,
}

/// (group, topic, queue id).
pub(crate) type PopQueueKey = (String, String, i32);

/// What a log rewrite keeps: the open checkpoints and the next offsets.
pub(crate) struct PopSnapshot {
    pub checkpoints: Vec<(CkKey, Checkpoint)>,
    pub next: Vec<(PopQueueKey, i64)>,
    pub orders: Vec<(PopQueueKey, order::OrderPop)>,
}

/// One shard's pop state.
#[derive(Debug, Default)]
pub(crate) struct PopState {
    checkpoints: HashMap<CkKey, Checkpoint>,
    /// (revive time, key) of every checkpoint.
    due: BTreeSet<(i64, CkKey)>,
    /// Per (group, topic, queue): the offset the next pop starts at.
    next: HashMap<PopQueueKey, i64>,
    /// Per (group, topic, queue) popped in order: its last pop.
    orders: HashMap<PopQueueKey, order::OrderPop>,
}

impl PopState {
    pub fn len(&self) -> usize {
        self.checkpoints.len()
    }

    /// Where the next pop of a queue starts, if this shard popped it since
    /// its start (or the log says so).
    pub fn next_offset(&self, group: &str, topic: &str, queue_id: i32) -> Option<i64> {
        self.next
            .get(&(group.to_string(), topic.to_string(), queue_id))
            .copied()
    }

    pub fn set_next(&mut self, group: &str, topic: &str, queue_id: i32, next: i64) {
        let slot = self
            .next
            .entry((group.to_string(), topic.to_string(), queue_id))
            .or_insert(next);
        *slot = (*slot).max(next);
    }

    /// The first offset of a queue popped but not acked by `group` (from
    /// its checkpoints or its ordered pop), for consume stats.
    pub fn first_pending(&self, group: &str, topic: &str, queue_id: i32) -> Option<i64> {
        let from_checkpoints = self
            .checkpoints
            .iter()
            .filter(|(k, _)| k.group == group && k.topic == topic && k.queue_id == queue_id)
            .filter_map(|(_, ck)| ck.pending().first().copied())
            .min();
        let key = (group.to_string(), topic.to_string(), queue_id);
        let from_order = self.orders.get(&key).and_then(|pop| {
            (0..pop.offsets.len())
                .find(|i| pop.acked & (1 << i) == 0)
                .map(|i| pop.offsets[i])
        });
        from_checkpoints.into_iter().chain(from_order).min()
    }

    /// [`Self::first_pending`] of every queue with one, in one pass (for
    /// the metrics' in-flight counts).
    pub fn first_pending_all(&self) -> HashMap<PopQueueKey, i64> {
        let mut first: HashMap<PopQueueKey, i64> = HashMap::new();
        let mut note = |key: PopQueueKey, offset: i64| {
            let slot = first.entry(key).or_insert(offset);
            *slot = (*slot).min(offset);
        };
        for (key, ck) in &self.checkpoints {
            if let Some(offset) = ck.pending().first() {
                note(
                    (key.group.clone(), key.topic.clone(), key.queue_id),
                    *offset,
                );
            }
        }
        for (key, pop) in &self.orders {
            let unacked = (0..pop.offsets.len()).find(|i| pop.acked & (1 << i) == 0);
            if let Some(i) = unacked {
                note(key.clone(), pop.offsets[i]);
            }
        }
        first
    }

    /// A queue's last ordered pop.
    pub fn order(&self, key: &PopQueueKey) -> Option<&order::OrderPop> {
        self.orders.get(key)
    }

    /// Replaces (or with `None` ends) a queue's ordered pop.
    pub fn set_order(&mut self, key: PopQueueKey, pop: Option<order::OrderPop>) {
        match pop {
            Some(pop) => self.orders.insert(key, pop),
            None => self.orders.remove(&key),
        };
    }

    /// Acks `offset` of a queue's ordered pop at `pop_time_ms`: the offset
    /// to commit, when the ack was that pop's.
    pub fn ack_order(&mut self, key: &PopQueueKey, offset: i64, pop_time_ms: i64) -> Option<i64> {
        let pop = self.orders.get_mut(key)?;
        let commit = pop.ack(offset, pop_time_ms)?;
        if pop.all_acked() {
            self.orders.remove(key);
        }
        Some(commit)
    }

    /// Pushes out when a queue's ordered pop lets go of it
    /// (CHANGE_MESSAGE_INVISIBLETIME on an ordered message).
    pub fn extend_order(
        &mut self,
        key: &PopQueueKey,
        pop_time_ms: i64,
        visible_at_ms: i64,
    ) -> bool {
        match self.orders.get_mut(key) {
            Some(pop) if pop.pop_time_ms == pop_time_ms => {
                pop.invisible_time_ms = visible_at_ms - pop.pop_time_ms;
                true
            }
            _ => false,
        }
    }

    /// Adds a pop's checkpoint.
    pub fn add(&mut self, key: CkKey, ck: Checkpoint) {
        assert!(
            !ck.offsets.is_empty() && ck.offsets.len() <= 64,
            "a checkpoint names 1..=64 offsets"
        );
        if let Some(last) = ck.offsets.last() {
            self.set_next(&key.group, &key.topic, key.queue_id, last + 1);
        }
        self.due.insert((ck.revive_at_ms(&key), key.clone()));
        if let Some(old) = self.checkpoints.insert(key.clone(), ck) {
            self.due.remove(&(old.revive_at_ms(&key), key));
        }
    }

    /// Acks `offset` of the checkpoint `key`.
    pub fn ack(&mut self, key: &CkKey, offset: i64) -> AckOutcome {
        let Some(ck) = self.checkpoints.get_mut(key) else {
            return AckOutcome::Unknown;
        };
        let Some(index) = ck.offsets.iter().position(|o| *o == offset) else {
            return AckOutcome::Unknown;
        };
        if ck.acked & (1 << index) != 0 {
            return AckOutcome::Unknown;
        }
        ck.acked |= 1 << index;
        if ck.all_acked() {
            self.remove(key);
        }
        AckOutcome::Acked
    }

    pub fn remove(&mut self, key: &CkKey) -> Option<Checkpoint> {
        let ck = self.checkpoints.remove(key)?;
        self.due.remove(&(ck.revive_at_ms(key), key.clone()));
        Some(ck)
    }

    /// Takes every checkpoint whose invisible time ended by `now_ms`.
    pub fn take_due(&mut self, now_ms: i64) -> Vec<(CkKey, Checkpoint)> {
        let mut out = Vec::new();
        while let Some((at, _)) = self.due.first() {
            if *at > now_ms {
                break;
            }
            if let Some((_, key)) = self.due.pop_first() {
                if let Some(ck) = self.checkpoints.remove(&key) {
                    out.push((key, ck));
                }
            }
        }
        out
    }

    /// Every checkpoint and every next offset, for compacting the log.
    pub fn snapshot(&self) -> PopSnapshot {
        PopSnapshot {
            checkpoints: self
                .checkpoints
                .iter()
                .map(|(k, c)| (k.clone(), c.clone()))
                .collect(),
            next: self.next.iter().map(|(k, v)| (k.clone(), *v)).collect(),
            orders: self
                .orders
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(start: i64, pop_time: i64) -> CkKey {
        CkKey {
            group: "G".into(),
            topic: "T".into(),
            queue_id: 0,
            start_offset: start,
            pop_time_ms: pop_time,
        }
    }

    #[test]
    fn acks_clear_checkpoints_and_the_rest_come_due() {
        let mut state = PopState::default();
        state.add(
            key(0, 1000),
            Checkpoint {
                invisible_time_ms: 500,
                offsets: vec![0, 1, 2],
                acked: 0,

                reput_times: 0,
            },
        );
        state.add(
            key(3, 1200),
            Checkpoint {
                invisible_time_ms: 500,
                offsets: vec![3],
                acked: 0,

                reput_times: 0,
            },
        );
        assert_eq!(state.next_offset("G", "T", 0), Some(4));
        assert_eq!(state.ack(&key(0, 1000), 1), AckOutcome::Acked);
        assert_eq!(state.ack(&key(0, 1000), 1), AckOutcome::Unknown);
        assert_eq!(state.ack(&key(3, 1200), 3), AckOutcome::Acked);
        assert_eq!(state.len(), 1);
        assert!(state.take_due(1499).is_empty());
        let due = state.take_due(1500);
        assert_eq!(due.len(), 1);
        assert_eq!(due[0].1.pending(), vec![0, 2]);
        assert_eq!(state.len(), 0);
    }
}
