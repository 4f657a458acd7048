//! Ordered pop (`order=true`, Java's `ConsumerOrderInfoManager`): no
//! checkpoint and no retry topic. A queue popped in order is blocked for
//! the group until every message of its last pop is acked or their
//! invisible time ran out; then the next pop starts again at the committed
//! offset, so un-acked messages come back in queue order. An ack commits
//! the consumer offset up to the first message not acked yet.

use serde::{Deserialize, Serialize};

/// The `reviveQid` that marks an ordered pop's handle
/// (`KeyBuilder.POP_ORDER_REVIVE_QUEUE`).
pub const ORDER_REVIVE_QID: i32 = 999;

/// A queue's last ordered pop.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct OrderPop {
    #[serde(rename = "pt")]
    pub pop_time_ms: i64,
    #[serde(rename = "it")]
    pub invisible_time_ms: i64,
    /// The offsets handed out, ascending.
    #[serde(rename = "o")]
    pub offsets: Vec<i64>,
    /// Bit i: `offsets[i]` acked.
    #[serde(rename = "a", default)]
    pub acked: u64,
    /// How many times each offset was handed out before (parallel to
    /// `offsets`): the answer's orderCountInfo.
    #[serde(rename = "c", default)]
    pub counts: Vec<u32>,
    #[serde(rename = "at", default)]
    pub attempt_id: Option<String>,
}

impl OrderPop {
    pub fn visible_again_at_ms(&self) -> i64 {
        self.pop_time_ms.saturating_add(self.invisible_time_ms)
    }

    pub fn all_acked(&self) -> bool {
        (0..self.offsets.len()).all(|i| self.acked & (1 << i) != 0)
    }

    /// Whether the queue is still held by this pop at `now_ms` for a pop
    /// with `attempt_id` (a retry of the same attempt is not blocked).
    pub fn blocks(&self, now_ms: i64, attempt_id: Option<&str>) -> bool {
        let same_attempt = attempt_id.is_some() && self.attempt_id.as_deref() == attempt_id;
        !self.all_acked() && now_ms < self.visible_again_at_ms() && !same_attempt
    }

    /// Times `offset` was handed out by this pop and the ones before it.
    pub fn count_of(&self, offset: i64) -> Option<u32> {
        self.offsets
            .iter()
            .position(|o| *o == offset)
            .map(|i| self.counts.get(i).copied().unwrap_or(0))
    }

    /// Acks `offset` (of the pop at `pop_time_ms`); answers the offset the
    /// group's committed offset moves to, or `None` when the ack is not
    /// this pop's (Java's -2: another pop time).
    pub fn ack(&mut self, offset: i64, pop_time_ms: i64) -> Option<i64> {
        if pop_time_ms != self.pop_time_ms {
            return None;
        }
        let index = self.offsets.iter().position(|o| *o == offset)?;
        self.acked |= 1 << index;
        let first_open = (0..self.offsets.len()).find(|i| self.acked & (1 << i) == 0);
        Some(match first_open {
            Some(i) => self.offsets[i],
            None => self.offsets.last().map_or(offset + 1, |last| last + 1),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_queue_stays_blocked_until_acked_or_visible_and_acks_commit_in_order() {
        let mut pop = OrderPop {
            pop_time_ms: 1_000,
            invisible_time_ms: 500,
            offsets: vec![5, 6, 7],
            acked: 0,
            counts: vec![1, 0, 0],
            attempt_id: Some("a1".into()),
        };
        assert!(pop.blocks(1_200, None));
        assert!(!pop.blocks(1_200, Some("a1")), "the same attempt retries");
        assert!(!pop.blocks(1_500, None), "visible again");
        assert_eq!(pop.ack(6, 999), None, "another pop's ack");
        assert_eq!(pop.ack(6, 1_000), Some(5), "5 is still open");
        assert_eq!(pop.ack(5, 1_000), Some(7));
        assert_eq!(pop.ack(7, 1_000), Some(8));
        assert!(pop.all_acked() && !pop.blocks(1_200, None));
        assert_eq!(pop.count_of(5), Some(1));
    }
}
