//! Consumer administration (`AdminBrokerProcessor`):
//! GET_CONSUMER_CONNECTION_LIST (203), GET_ALL_CONSUMER_OFFSET (43) and
//! GET_CONSUME_STATS (208). Offsets and queue figures are gathered from
//! the owner shards; connection details from the shards holding them.

use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;

use ferrocket_protocol::body::{encode_json, DataVersion, SubscriptionData};
use ferrocket_protocol::codes::response_code;
use ferrocket_protocol::RemotingCommand;
use ferrocket_runtime::shard::ShardCall;
use serde::Serialize;

use crate::clock::now_ms;
use crate::error::Reject;
use crate::services::locks::MessageQueue;
use crate::services::offsets::{key_topic, merge, OffsetMap};
use crate::shard::clients::conn_infos;
use crate::shard::Shard;

fn ok(request: &RemotingCommand) -> RemotingCommand {
    RemotingCommand::response_to(request, response_code::SUCCESS, None)
}

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

/// One client connection (`Connection` in `ConsumerConnection`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, PartialOrd, Ord)]
#[serde(rename_all = "camelCase")]
struct ConnectionBody {
    client_id: String,
    client_addr: String,
    language: String,
    version: i32,
}

/// GET_CONSUMER_CONNECTION_LIST body (`ConsumerConnection`).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
struct ConsumerConnectionBody {
    connection_set: Vec<ConnectionBody>,
    subscription_table: BTreeMap<String, SubscriptionData>,
    consume_type: &'static str,
    message_model: &'static str,
    consume_from_where: &'static str,
}

/// GET_CONSUMER_CONNECTION_LIST (header consumerGroup): the group's clients
/// with their addresses, languages and versions, and its subscriptions.
pub(crate) async fn consumer_connections(
    shard: &Rc<Shard>,
    request: &RemotingCommand,
) -> Result<RemotingCommand, Reject> {
    let group = request.ext_fields.required("consumerGroup")?.to_string();
    let Some(info) = shard
        .clients()
        .with(|clients| clients.consumers.get(&group).cloned())
        .filter(|g| !g.clients.is_empty())
    else {
        return Err(Reject::new(
            response_code::CONSUMER_NOT_ONLINE,
            format!("the consumer group[{group}] not online"),
        ));
    };
    let conn_ids: Vec<u64> = info.clients.values().map(|c| c.conn_id).collect();
    let known = conn_infos(shard, &conn_ids).await?;
    let mut connection_set: Vec<ConnectionBody> = info
        .clients
        .iter()
        .map(|(client_id, channel)| {
            let conn = known.get(&channel.conn_id).cloned().unwrap_or_default();
            ConnectionBody {
                client_id: client_id.clone(),
                client_addr: conn.addr,
                language: if conn.language.is_empty() {
                    "OTHER".into()
                } else {
                    conn.language
                },
                version: conn.version,
            }
        })
        .collect();
    connection_set.sort();
    let body = ConsumerConnectionBody {
        connection_set,
        subscription_table: info.subscriptions.clone(),
        consume_type: info.consume_type.java_name(),
        message_model: info.message_model.java_name(),
        consume_from_where: info.consume_from_where.java_name(),
    };
    Ok(ok(request).with_body(encode_json(&body)))
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

/// GET_ALL_CONSUMER_OFFSET's body (`ConsumerOffsetSerializeWrapper`): the
/// consumerOffset.json table with a data version. A Java slave syncing
/// from this broker assigns the version to its own
/// (`SlaveSynchronize.syncConsumerOffset`) and fails without one.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct OffsetsWithVersion {
    offset_table: OffsetMap,
    data_version: DataVersion,
}

/// GET_ALL_CONSUMER_OFFSET: the consumerOffset.json view of every group's
/// committed offsets, current rather than as last persisted, versioned by
/// the time of the answer (offsets change with every commit).
pub(crate) async fn all_consumer_offsets(
    shard: &Rc<Shard>,
    request: &RemotingCommand,
) -> Result<RemotingCommand, Reject> {
    let answer = OffsetsWithVersion {
        offset_table: all_offsets(shard).await?,
        data_version: DataVersion {
            timestamp: now_ms(),
            ..DataVersion::default()
        },
    };
    Ok(ok(request).with_body(encode_json(&answer)))
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

/// GET_CONSUME_STATS (header consumerGroup, optional topic): per queue of
/// each topic the group consumes, the queue's max offset, the group's
/// committed offset and the store time of the last consumed message.
pub(crate) async fn consume_stats(
    shard: &Rc<Shard>,
    request: &RemotingCommand,
) -> Result<RemotingCommand, Reject> {
    let group = request.ext_fields.required("consumerGroup")?.to_string();
    let asked = request
        .ext_fields
        .get("topic")
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(str::to_string);
    let mut topics: BTreeSet<String> = match asked {
        Some(topic) => [topic].into(),
        None => {
            let suffix = format!("@{group}");
            all_offsets(shard)
                .await?
                .keys()
                .filter(|key| key.ends_with(&suffix))
                .map(|key| key_topic(key).to_string())
                .collect()
        }
    };
    // Java keeps only topics the online group subscribes to, if any.
    let subscribed: BTreeSet<String> = shard.clients().with(|clients| {
        clients
            .consumers
            .get(&group)
            .map(|g| g.subscriptions.keys().cloned().collect())
            .unwrap_or_default()
    });
    if !subscribed.is_empty() {
        topics.retain(|t| subscribed.contains(t));
    }
    let queues = topics.iter().filter_map(|topic| {
        let config = shard.topic(topic)?;
        Some((topic.clone(), config.read_queue_nums))
    });
    let stats = group_queue_stats(shard, &group, queues).await?;
    let tps = crate::shard::stats::group_get_tps(shard, &group, topics.iter()).await;
    let body = consume_stats_body(&shard.config().broker_name, &stats, tps);
    Ok(ok(request).with_body(body))
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
