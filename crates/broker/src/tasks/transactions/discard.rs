//! Half messages given up on (`DefaultTransactionalMessageCheckListener.
//! resolveDiscardMsg`): one checked `transactionCheckMax` times without an
//! answer is copied to `TRANS_CHECK_MAX_TIME_TOPIC` (created on demand,
//! one queue, read and write, as Java does) before it is rolled back, so
//! an operator can still find it (pull the topic, or query it by key or
//! message id).
//!
//! The copy is the half message as stored: body, flag, born time and host,
//! reconsume times, sysFlag (half messages are stored without a
//! transaction type, so the copy is in the topic's ConsumeQueue) and every
//! property (REAL_TOPIC and REAL_QID name where it was going, PGROUP its
//! producer group, UNIQ_KEY its message id).

use ferrocket_protocol::body::{perm, TopicConfig};

use crate::error::Reject;
use crate::services::records::{try_read_record_through, view, Target};
use crate::services::topics::TopicChange;
use crate::services::transaction::Half;
use crate::shard::Shard;

pub use crate::services::topics::CHECK_MAX_TIME_TOPIC;
/// Its queue count (`TCMT_QUEUE_NUMS`); every copy goes to queue 0.
pub const CHECK_MAX_TIME_QUEUE_NUMS: i32 = 1;

/// The topic, created by shard 0 when missing.
async fn ensure_topic(shard: &Shard) -> Result<TopicConfig, Reject> {
    if let Some(found) = shard.topic(CHECK_MAX_TIME_TOPIC) {
        return Ok(found);
    }
    let config = TopicConfig {
        perm: perm::READ_WRITE,
        topic_sys_flag: 0,
        ..TopicConfig::new(CHECK_MAX_TIME_TOPIC, CHECK_MAX_TIME_QUEUE_NUMS)
    };
    shard
        .change_topic(TopicChange::Upsert(config))
        .await?
        .ok_or_else(|| Reject::system(format!("topic[{CHECK_MAX_TIME_TOPIC}] not created")))
}

/// Stores the copy of a discarded half message; answers its queue offset
/// in `TRANS_CHECK_MAX_TIME_TOPIC`.
pub(super) async fn keep_discarded(shard: &Shard, half: &Half) -> Result<i64, Reject> {
    ensure_topic(shard).await?;
    let record = try_read_record_through(shard.store(), half.physical_offset)
        .await?
        .ok_or_else(|| Reject::system("half message unreadable"))?;
    let held = view(&record)?;
    let props = held.properties();
    let target = Target {
        topic: CHECK_MAX_TIME_TOPIC,
        queue_id: 0,
        sys_flag: held.sys_flag,
        prepared_transaction_offset: held.prepared_transaction_offset,
        properties: &props,
    };
    Ok(shard.append_copy(&held, &target).await?.queue_offset)
}
