//! Copying a parked message (delay level, timer, half message) to its
//! REAL_TOPIC / REAL_QID from any shard: the target is checked (and made
//! by the auto-create rules when missing) before anything is stored.

use std::rc::Rc;
use std::sync::Arc;

use ferrocket_protocol::record::RecordView;
use ferrocket_runtime::shard::ShardCall;
use ferrocket_store::{AppendRequest, AppendResult};

use super::Shard;
use crate::clock::now_ms;
use crate::services::delay_levels::DelayOffsets;
use crate::services::delivery::{check_real_name, real_topic_copy, DeliverError, Parked};
use crate::services::topics::{self, TBW102};

impl Shard {
    /// Checks where the broker is about to copy a stored message (the
    /// REAL_TOPIC / REAL_QID of a timer, delay-level or half message): a legal
    /// topic name, not an internal topic, an existing topic (or one the normal
    /// auto-create rules make), and a queue below its queue count. Stored
    /// records are input too: one that fails is skipped by the caller, never
    /// written outside its topic's files or back into a system topic.
    pub async fn check_real_target(&self, topic: &str, queue_id: i32) -> Result<(), DeliverError> {
        let invalid = |why: String| {
            Err(DeliverError::Invalid(format!(
                "real topic {topic:?} queue {queue_id}: {why}"
            )))
        };
        if let Err(why) = check_real_name(topic) {
            return invalid(why);
        }
        let create =
            topics::creation_for_send(topic, TBW102, self.config().default_topic_queue_nums);
        let Some(found) = self
            .ensure_topic(topic, create)
            .await
            .map_err(DeliverError::Store)?
        else {
            return invalid("no such topic, and the auto-create rules do not make it".into());
        };
        let queues = found.read_queue_nums.max(found.write_queue_nums);
        if queue_id < 0 || queue_id >= queues {
            return invalid(format!("the topic has {queues} queues"));
        }
        Ok(())
    }

    /// Delivers a due scheduled message to its real topic: builds
    /// [`real_topic_copy`], checks its target ([`check_real_target`]) and
    /// appends it (from any shard). Reusable by any service that parks
    /// messages under REAL_TOPIC / REAL_QID (the timer). An undeliverable
    /// message is counted in the shard's stats.
    pub async fn deliver_to_real_topic(
        &self,
        source: &RecordView<'_>,
        parked: Parked,
    ) -> Result<AppendResult, DeliverError> {
        let result = self.deliver_checked(source, parked).await;
        if matches!(result, Err(DeliverError::Invalid(_))) {
            self.count_skipped_redelivery();
        }
        result
    }

    async fn deliver_checked(
        &self,
        source: &RecordView<'_>,
        parked: Parked,
    ) -> Result<AppendResult, DeliverError> {
        let copy = real_topic_copy(source, now_ms(), parked)?;
        self.check_real_target(&copy.topic, copy.queue_id).await?;
        let append = AppendRequest::new(
            Arc::from(copy.topic.as_str()),
            copy.queue_id,
            copy.record,
            copy.tags_code,
        );
        let body_bytes = source.body.len() as u64;
        self.append(append, 1, body_bytes)
            .await
            .map_err(DeliverError::Store)
    }

    /// Every shard's progress merged; None when a shard did not answer.
    pub async fn delay_progress(&self, take_changed: bool) -> Option<(DelayOffsets, bool)> {
        let mut all = DelayOffsets::new();
        let mut changed = false;
        for answer in self.call_all(DelayProgress { take_changed }).await {
            let (offsets, c) = answer.ok()?;
            all.extend(offsets);
            changed |= c;
        }
        Some((all, changed))
    }
}

/// On every shard: the progress of the levels it owns and whether it
/// moved (clearing the flag when `take_changed`).
#[derive(Clone)]
struct DelayProgress {
    take_changed: bool,
}

impl ShardCall<Shard> for DelayProgress {
    type Reply = (DelayOffsets, bool);

    async fn run(self, shard: Rc<Shard>) -> Self::Reply {
        shard.schedule().progress(self.take_changed)
    }
}
