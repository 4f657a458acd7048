//! Where a lite topic's consumption starts: the `offsetOption` of a
//! PARTIAL_ADD lite subscription (Java's `OffsetOption`, applied by its
//! `LiteSubscriptionRegistryImpl.resetOffset`). POLICY MAX moves the lite
//! topic's group to the end of each parent queue, so it gets only what is
//! sent after the subscription; without an option, and for POLICY LAST or
//! MIN, a lite topic starts where its group is (a new one at the oldest
//! message). A lite topic here has no queue of its own (its messages are
//! in the parent's queues), so OFFSET and TAIL_N, offsets in Java's
//! per-lite-topic queue, have nothing to name; they and TIMESTAMP (which
//! Java's 5.5.0 broker ignores too) leave the lite topic where it is.

use std::rc::Rc;

use ferrocket_protocol::lite::lite_group;
use serde::Deserialize;

use crate::error::Reject;
use crate::shard::Shard;
use crate::wire::reset::{ResetOffsets, TIMESTAMP_LATEST};

/// `OffsetOption.POLICY_MAX_VALUE`.
const POLICY_MAX: i64 = 2;

/// Java's `OffsetOption`: `type` (POLICY, OFFSET, TAIL_N, TIMESTAMP) and
/// its value.
#[derive(Debug, Clone, Deserialize)]
pub(super) struct OffsetOption {
    #[serde(rename = "type", default)]
    kind: String,
    #[serde(default)]
    value: i64,
}

impl OffsetOption {
    /// Whether the lite topics start at the end of the parent's queues.
    pub(super) fn starts_at_newest(&self) -> bool {
        self.kind == "POLICY" && self.value == POLICY_MAX
    }
}

/// Moves the group of each of `lite_topics` (of `group` on parent `topic`)
/// to the end of every queue of the parent, on each queue's owner.
pub(super) async fn start_at_newest(
    shard: &Rc<Shard>,
    group: &str,
    topic: &str,
    lite_topics: &[String],
) -> Result<(), Reject> {
    let queues = shard
        .with_topic(topic, |t| t.read_queue_nums.max(t.write_queue_nums))
        .unwrap_or(0);
    for lite in lite_topics {
        let lite_group = lite_group(group, topic, lite);
        for queue_id in 0..queues {
            let reset = ResetOffsets {
                group: lite_group.clone(),
                topic: topic.to_string(),
                queues: vec![queue_id],
                timestamp_ms: TIMESTAMP_LATEST,
                force: true,
            };
            shard.call(shard.owner_of(topic, queue_id), reset).await??;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_policy_max_moves_to_the_newest() {
        let parse = |json: &str| serde_json::from_str::<OffsetOption>(json).unwrap();
        assert!(parse(r#"{"type":"POLICY","value":2}"#).starts_at_newest());
        assert!(!parse(r#"{"type":"POLICY","value":1}"#).starts_at_newest());
        assert!(!parse(r#"{"type":"POLICY","value":0}"#).starts_at_newest());
        assert!(!parse(r#"{"type":"TAIL_N","value":2}"#).starts_at_newest());
    }
}
