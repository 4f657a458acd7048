//! GET_CONSUME_STATS's figures, gathered from the queues' owner shards:
//! every shard's committed offsets, each queue's max and committed offset
//! and last consumed store time, and the body as Java's fastjson writes
//! it. The consumer-admin and stats handlers share them.

use std::collections::BTreeMap;
use std::rc::Rc;

use ferrocket_protocol::body::encode_json;
use ferrocket_runtime::shard::ShardCall;
use serde::Serialize;

use super::Shard;
use crate::error::Reject;
use crate::services::locks::MessageQueue;
use crate::services::offsets::{merge, OffsetMap};

/// One queue's figures for GET_CONSUME_STATS (`OffsetWrapper`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueStat {
    pub topic: String,
    pub queue_id: i32,
    pub broker_offset: i64,
    pub consumer_offset: i64,
    /// Where the group read up to: above `consumer_offset` for messages
    /// popped and not acked yet (Java shows the gap as in flight).
    pub pull_offset: i64,
    pub last_timestamp_ms: i64,
}

/// Every shard's committed offsets, merged.
pub(crate) async fn all_offsets(shard: &Shard) -> Result<OffsetMap, Reject> {
    let mut parts = Vec::with_capacity(shard.count());
    for answer in shard.call_all(PeekOffsets).await {
        parts.push(answer?);
    }
    Ok(merge(parts))
}

/// On every shard: a copy of its committed offsets.
#[derive(Clone)]
struct PeekOffsets;

impl ShardCall<Shard> for PeekOffsets {
    type Reply = OffsetMap;

    async fn run(self, shard: Rc<Shard>) -> OffsetMap {
        shard.offsets().borrow().entries().clone()
    }
}

/// On the owner shard: each queue's max offset, the group's committed
/// offset (0 when none) and the store time of the last consumed message.
/// On the queues' owner: their figures for the group.
struct QueueStats {
    group: String,
    queues: Vec<(String, i32)>,
}

impl ShardCall<Shard> for QueueStats {
    type Reply = Vec<QueueStat>;

    async fn run(self, shard: Rc<Shard>) -> Vec<QueueStat> {
        for (topic, queue_id) in &self.queues {
            shard.assert_owns(topic, *queue_id);
        }
        queue_stats_owned(&shard, &self.group, &self.queues)
    }
}

fn queue_stats_owned(shard: &Shard, group: &str, queues: &[(String, i32)]) -> Vec<QueueStat> {
    queues
        .iter()
        .map(|(topic, queue_id)| {
            let broker_offset = shard
                .store()
                .consume_queue(topic, *queue_id)
                .map_or(0, |q| q.max_offset().max(0));
            let consumer_offset = shard
                .offsets()
                .borrow()
                .query(group, topic, *queue_id)
                .unwrap_or(0)
                .max(0);
            let last_timestamp_ms = if consumer_offset > 0 {
                shard
                    .store_timestamp_at(topic, *queue_id, consumer_offset - 1)
                    .unwrap_or(0)
            } else {
                0
            };
            // A popped queue's committed offset says "popped up to".
            let pending = shard
                .pop()
                .state
                .borrow()
                .first_pending(group, topic, *queue_id);
            QueueStat {
                topic: topic.clone(),
                queue_id: *queue_id,
                broker_offset,
                consumer_offset: pending.map_or(consumer_offset, |p| p.min(consumer_offset)),
                pull_offset: consumer_offset,
                last_timestamp_ms,
            }
        })
        .collect()
}

/// The value of a ConsumeStats entry (`OffsetWrapper`), sorted fields.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct OffsetWrapperJson {
    broker_offset: i64,
    consumer_offset: i64,
    last_timestamp: i64,
    pull_offset: i64,
}

/// The GET_CONSUME_STATS body exactly as the Java broker's fastjson writes
/// `ConsumeStats`: its `offsetTable` is a map keyed by `MessageQueue`
/// objects, which fastjson writes as JSON objects in key position
/// (`{{"brokerName":..}:{..}}`, not valid JSON, but what Java clients
/// parse).
pub(crate) fn consume_stats_body(
    broker_name: &str,
    stats: &[QueueStat],
    consume_tps: f64,
) -> Vec<u8> {
    let mut out = String::from("{\"consumeTps\":");
    out.push_str(&format!("{consume_tps:?}"));
    out.push_str(",\"offsetTable\":{");
    for (i, stat) in stats.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let value = OffsetWrapperJson {
            broker_offset: stat.broker_offset,
            consumer_offset: stat.consumer_offset,
            last_timestamp: stat.last_timestamp_ms,
            pull_offset: stat.pull_offset,
        };
        out.push_str(&MessageQueue::json_key(
            broker_name,
            stat.queue_id,
            &stat.topic,
        ));
        out.push(':');
        out.push_str(&String::from_utf8_lossy(&encode_json(&value)));
    }
    out.push_str("}}");
    out.into_bytes()
}

/// The figures of queues `0..n` of each `(topic, n)` for `group`, gathered
/// from the queues' owner shards, sorted by topic and queue.
pub(crate) async fn group_queue_stats(
    shard: &Rc<Shard>,
    group: &str,
    topics: impl Iterator<Item = (String, i32)>,
) -> Result<Vec<QueueStat>, Reject> {
    let mut by_owner: BTreeMap<usize, Vec<(String, i32)>> = BTreeMap::new();
    for (topic, queue_nums) in topics {
        for queue_id in 0..queue_nums.max(0) {
            by_owner
                .entry(shard.owner_of(&topic, queue_id))
                .or_default()
                .push((topic.clone(), queue_id));
        }
    }
    let mut stats = Vec::new();
    for (owner, queues) in by_owner {
        let ask = QueueStats {
            group: group.to_string(),
            queues,
        };
        stats.extend(shard.call(owner, ask).await?);
    }
    stats.sort_by(|a, b| (&a.topic, a.queue_id).cmp(&(&b.topic, b.queue_id)));
    Ok(stats)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn consume_stats_uses_fastjson_object_keys() {
        let stats = [QueueStat {
            topic: "T".into(),
            queue_id: 1,
            broker_offset: 10,
            consumer_offset: 4,
            pull_offset: 6,
            last_timestamp_ms: 77,
        }];
        let body = String::from_utf8(consume_stats_body("b", &stats, 0.0)).unwrap();
        assert_eq!(
            body,
            r#"{"consumeTps":0.0,"offsetTable":{{"brokerName":"b","queueId":1,"topic":"T"}:{"brokerOffset":10,"consumerOffset":4,"lastTimestamp":77,"pullOffset":6}}}"#
        );
        let empty = String::from_utf8(consume_stats_body("b", &[], 0.0)).unwrap();
        assert_eq!(empty, r#"{"consumeTps":0.0,"offsetTable":{}}"#);
    }
}
