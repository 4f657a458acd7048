//! Views of the store that Java's tools and slaves ask a master for:
//! GET_TIMER_CHECK_POINT (60: a Java slave's `SlaveSynchronize`, every 3 s)
//! and QUERY_CONSUME_QUEUE (321: mqadmin's `queryCq`), answered with Java's
//! bodies (`AdminBrokerProcessor`).

use std::rc::Rc;

use ferrocket_protocol::body::encode_json;
use ferrocket_protocol::body::SubscriptionData;
use ferrocket_protocol::codes::response_code;
use ferrocket_protocol::RemotingCommand;
use ferrocket_runtime::shard::ShardCall;
use serde::Serialize;

use crate::clock::now_ms;
use crate::error::Reject;
use crate::services::topics::timer_shard;
use crate::shard::Shard;

/// Request codes this module answers (RocketMQ `RequestCode`).
pub(crate) const GET_TIMER_CHECK_POINT: i32 = 60;
pub(crate) const QUERY_CONSUME_QUEUE: i32 = 321;

/// Entries one QUERY_CONSUME_QUEUE answers at most (mqadmin asks 10 by
/// default; Java sets no bound).
const CQ_ENTRIES_MAX: usize = 1_000;

/// Where the timer stands, as Java's `TimerCheckpoint`.
struct TimerPosition {
    /// Every timer due before this is delivered (`lastReadTimeMs`).
    delivered_floor_ms: i64,
    /// Next `rmq_sys_wheel_timer` queue offset to take in
    /// (`lastTimerQueueOffset`).
    next_queue_offset: i64,
}

/// On the timer shard: where its timer stands.
struct PeekTimer;

impl ShardCall<Shard> for PeekTimer {
    type Reply = Result<TimerPosition, Reject>;

    async fn run(self, shard: Rc<Shard>) -> Self::Reply {
        let timer = shard
            .services()
            .timer
            .get()
            .cloned()
            .ok_or_else(|| Reject::system("The checkpoint is null"))?;
        let delivered_floor_ms = timer.delivered_floor_ms().await.map_err(Reject::system)?;
        Ok(TimerPosition {
            delivered_floor_ms,
            next_queue_offset: timer.next_queue_offset(),
        })
    }
}

/// `TimerCheckpoint.encode`: seven big-endian longs.
fn encode_checkpoint(position: &TimerPosition, now_ms: i64) -> Vec<u8> {
    let longs = [
        position.delivered_floor_ms,
        // lastTimerLogFlushPos: a place in Java's own timer log, which
        // Ferrocket does not have (its timer log is its own format); a
        // Java slave does not read it from its master.
        0,
        position.next_queue_offset,
        // masterTimerQueueOffset: a master is its own master.
        position.next_queue_offset,
        // DataVersion: stateVersion, timestamp, counter; the counter moves
        // with the timer queue offset.
        0,
        now_ms,
        position.next_queue_offset,
    ];
    longs.iter().flat_map(|v| v.to_be_bytes()).collect()
}

/// GET_TIMER_CHECK_POINT: the timer's checkpoint. A Java slave takes
/// `lastReadTimeMs` and this `lastTimerQueueOffset` as its master's: it
/// takes timer messages into its own timer log only up to that offset.
pub(crate) async fn timer_check_point(
    shard: &Rc<Shard>,
    request: &RemotingCommand,
) -> Result<RemotingCommand, Reject> {
    let position = shard.call(timer_shard(shard.count()), PeekTimer).await??;
    Ok(
        RemotingCommand::response_to(request, response_code::SUCCESS, None)
            .with_body(encode_checkpoint(&position, now_ms())),
    )
}

/// One entry of `QueryConsumeQueueResponseBody.queueData`
/// (`ConsumeQueueData`; Ferrocket has no ConsumeQueue extension, so no
/// `extendDataJson`, `bitMap` or `msg`, as Java without one).
#[derive(Debug, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
struct ConsumeQueueData {
    physic_offset: i64,
    physic_size: i32,
    tags_code: i64,
    eval: bool,
}

/// QUERY_CONSUME_QUEUE body (`QueryConsumeQueueResponseBody`).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct QueryConsumeQueueBody {
    #[serde(skip_serializing_if = "Option::is_none")]
    subscription_data: Option<SubscriptionData>,
    #[serde(skip_serializing_if = "Option::is_none")]
    filter_data: Option<String>,
    queue_data: Vec<ConsumeQueueData>,
    max_queue_index: i64,
    min_queue_index: i64,
}

/// On the queue's owner: its bounds and up to `count` entries from `index`.
struct ReadQueue {
    topic: String,
    queue_id: i32,
    index: i64,
    count: usize,
}

type QueueView = (i64, i64, Vec<ConsumeQueueData>);

impl ShardCall<Shard> for ReadQueue {
    type Reply = Result<QueueView, Reject>;

    async fn run(self, shard: Rc<Shard>) -> Self::Reply {
        shard.assert_owns(&self.topic, self.queue_id);
        let queue = shard.store().consume_queue(&self.topic, self.queue_id)?;
        let entries = queue
            .get(self.index, self.count)
            .into_iter()
            .map(|entry| ConsumeQueueData {
                physic_offset: entry.physical_offset,
                physic_size: entry.size,
                tags_code: entry.tags_code,
                eval: false,
            })
            .collect();
        Ok((queue.min_offset(), queue.max_offset(), entries))
    }
}

/// QUERY_CONSUME_QUEUE (topic, queueId, index, count, consumerGroup): a
/// queue's raw entries from `index`, with the group's subscription when
/// one is given.
pub(crate) async fn query_consume_queue(
    shard: &Rc<Shard>,
    request: &RemotingCommand,
) -> Result<RemotingCommand, Reject> {
    let fields = &request.ext_fields;
    let topic = fields.required("topic")?.to_string();
    let queue_id = fields.required_i32("queueId")?;
    let index = fields.required_i64("index")?;
    let count = fields.required_i32("count")?;
    let group = fields.get("consumerGroup").map(str::to_string);
    let exists = shard.topic(&topic).is_some_and(|config| {
        (0..config.read_queue_nums.max(config.write_queue_nums)).contains(&queue_id)
    });
    if !exists {
        return Err(Reject::system(format!("{queue_id}@{topic} is not exist!")));
    }
    let ask = ReadQueue {
        topic: topic.clone(),
        queue_id,
        index,
        count: usize::try_from(count).unwrap_or(0).min(CQ_ENTRIES_MAX),
    };
    let owner = shard.owner_of(&topic, queue_id);
    let (min, max, queue_data) = shard.call(owner, ask).await??;
    let ok = |remark| RemotingCommand::response_to(request, response_code::SUCCESS, remark);
    if index < min || index >= max {
        // Java's `iterateFrom` finds nothing: SUCCESS, no body.
        return Ok(ok(Some(format!(
            "Index {index} of {queue_id}@{topic} is not exist!"
        ))));
    }
    let (subscription_data, filter_data) = match group {
        Some(group) => subscription(shard, &group, &topic),
        None => (None, None),
    };
    let body = QueryConsumeQueueBody {
        subscription_data,
        filter_data,
        queue_data,
        max_queue_index: max,
        min_queue_index: min,
    };
    Ok(ok(None).with_body(encode_json(&body)))
}

/// The group's subscription to `topic` from its clients' heartbeats, and
/// Java's `filterData`: "G@T is not online!" without one, else the filter
/// data Java keeps for SQL92 (none for tags, which Java prints `null`).
fn subscription(
    shard: &Shard,
    group: &str,
    topic: &str,
) -> (Option<SubscriptionData>, Option<String>) {
    let found = shard
        .clients()
        .with(|clients| clients.subscription(group, topic).ok().cloned());
    let Some(sub) = found else {
        return (None, Some(format!("{group}@{topic} is not online!")));
    };
    let filter = match sub.expression_type.as_deref() {
        Some("SQL92") => serde_json::json!({
            "consumerGroup": group,
            "topic": topic,
            "expression": sub.sub_string,
            "expressionType": "SQL92",
            "clientVersion": sub.sub_version,
        })
        .to_string(),
        _ => "null".to_string(),
    };
    (Some(sub), Some(filter))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_checkpoint_is_java_s_seven_longs() {
        let position = TimerPosition {
            delivered_floor_ms: 1_700_000_000_000,
            next_queue_offset: 42,
        };
        let body = encode_checkpoint(&position, 5);
        assert_eq!(body.len(), 56);
        let long = |i: usize| {
            let mut bytes = [0u8; 8];
            bytes.copy_from_slice(&body[i * 8..i * 8 + 8]);
            i64::from_be_bytes(bytes)
        };
        assert_eq!(
            (0..7).map(long).collect::<Vec<_>>(),
            [1_700_000_000_000, 0, 42, 42, 0, 5, 42]
        );
    }

    #[test]
    fn queue_data_has_java_s_names() {
        let entry = ConsumeQueueData {
            physic_offset: 7,
            physic_size: 90,
            tags_code: -3,
            eval: false,
        };
        assert_eq!(
            serde_json::to_string(&entry).unwrap(),
            r#"{"physicOffset":7,"physicSize":90,"tagsCode":-3,"eval":false}"#
        );
    }
}
