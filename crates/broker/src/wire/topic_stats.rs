//! What mqadmin's `topicStatus` and `consumerProgress` ask
//! (`AdminBrokerProcessor`): GET_TOPIC_STATS_INFO (202), each queue's
//! offsets and last store time; QUERY_TOPIC_CONSUME_BY_WHO (300), the
//! groups consuming a topic; QUERY_TOPICS_BY_CONSUMER (343), the topics a
//! group has offsets on.

use std::collections::BTreeSet;
use std::rc::Rc;

use ferrocket_protocol::body::encode_json;
use ferrocket_protocol::codes::response_code;
use ferrocket_protocol::RemotingCommand;
use ferrocket_runtime::shard::ShardCall;
use serde::Serialize;

use crate::error::Reject;
use crate::services::locks::MessageQueue;
use crate::shard::consume_stats::all_offsets;
use crate::shard::Shard;

fn ok(request: &RemotingCommand) -> RemotingCommand {
    RemotingCommand::response_to(request, response_code::SUCCESS, None)
}

/// One queue's `TopicOffset`, fields in fastjson's (sorted) order.
#[derive(Debug, Clone, Copy, Serialize)]
#[serde(rename_all = "camelCase")]
struct TopicOffset {
    last_update_timestamp: i64,
    max_offset: i64,
    min_offset: i64,
}

/// On a queue's owner: its offsets and the store time of its last message.
struct QueueOffsets {
    topic: String,
    queue_id: i32,
}

impl ShardCall<Shard> for QueueOffsets {
    type Reply = TopicOffset;

    async fn run(self, shard: Rc<Shard>) -> TopicOffset {
        shard.assert_owns(&self.topic, self.queue_id);
        let queue = shard.store().consume_queue(&self.topic, self.queue_id).ok();
        let (min, max) = queue.map_or((0, 0), |q| (q.min_offset().max(0), q.max_offset().max(0)));
        let last = if max > 0 {
            shard.store_timestamp_at(&self.topic, self.queue_id, max - 1)
        } else {
            None
        };
        TopicOffset {
            last_update_timestamp: last.unwrap_or(0),
            max_offset: max,
            min_offset: min,
        }
    }
}

/// GET_TOPIC_STATS_INFO (header topic): every write queue's figures, as
/// Java's `TopicStatsTable` (its map keyed by `MessageQueue` objects,
/// written as fastjson writes them).
pub(crate) async fn topic_stats(
    shard: &Rc<Shard>,
    request: &RemotingCommand,
) -> Result<RemotingCommand, Reject> {
    let topic = request.ext_fields.required("topic")?.to_string();
    let Some(config) = shard.topic(&topic) else {
        return Err(Reject::new(
            response_code::TOPIC_NOT_EXIST,
            format!("topic[{topic}] not exist"),
        ));
    };
    let broker_name = shard.config().broker_name.clone();
    let mut body = String::from("{\"offsetTable\":{");
    for queue_id in 0..config.write_queue_nums.max(0) {
        let ask = QueueOffsets {
            topic: topic.clone(),
            queue_id,
        };
        let offsets = shard.call(shard.owner_of(&topic, queue_id), ask).await?;
        if queue_id > 0 {
            body.push(',');
        }
        body.push_str(&MessageQueue::json_key(&broker_name, queue_id, &topic));
        body.push(':');
        body.push_str(&String::from_utf8_lossy(&encode_json(&offsets)));
    }
    body.push_str("}}");
    Ok(ok(request).with_body(body.into_bytes()))
}

/// `GroupList`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct GroupList {
    group_list: BTreeSet<String>,
}

/// QUERY_TOPIC_CONSUME_BY_WHO (header topic): the online groups that
/// subscribe to it and the groups with offsets on it.
pub(crate) async fn topic_consumed_by(
    shard: &Rc<Shard>,
    request: &RemotingCommand,
) -> Result<RemotingCommand, Reject> {
    let topic = request.ext_fields.required("topic")?.to_string();
    let mut groups: BTreeSet<String> = shard.clients().with(|clients| {
        let subscribing = clients.consumers.iter();
        subscribing
            .filter(|(_, g)| g.subscriptions.contains_key(&topic))
            .map(|(name, _)| name.clone())
            .collect()
    });
    for key in all_offsets(shard).await?.keys() {
        if let Some((_, group)) = key.split_once('@').filter(|(of, _)| *of == topic) {
            groups.insert(group.to_string());
        }
    }
    Ok(ok(request).with_body(encode_json(&GroupList { group_list: groups })))
}

/// `TopicList` with the broker's address.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct TopicListBody {
    topic_list: BTreeSet<String>,
    broker_addr: String,
}

/// QUERY_TOPICS_BY_CONSUMER (header consumerGroup): the topics the group
/// has committed offsets on.
pub(crate) async fn topics_consumed(
    shard: &Rc<Shard>,
    request: &RemotingCommand,
) -> Result<RemotingCommand, Reject> {
    let group = request.ext_fields.required("consumerGroup")?.to_string();
    let suffix = format!("@{group}");
    let topics = all_offsets(shard)
        .await?
        .keys()
        .filter(|key| key.ends_with(&suffix) && key.len() > suffix.len())
        .map(|key| key[..key.len() - suffix.len()].to_string())
        .collect();
    let body = TopicListBody {
        topic_list: topics,
        broker_addr: shard.env().broker_addr.clone(),
    };
    Ok(ok(request).with_body(encode_json(&body)))
}
