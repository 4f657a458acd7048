//! Consumer-group administration on one broker (Java `MQAdminExt`'s
//! `createAndUpdateSubscriptionGroupConfig`, `deleteSubscriptionGroup`,
//! `examineConsumerConnectionInfo`, `examineConsumeStats`, and the offset
//! calls `resetOffsetByTimestamp` falls back to when the group is offline),
//! plus the consumer-side calls ordered and retrying consumers make
//! (LOCK_BATCH_MQ, UNLOCK_BATCH_MQ, CONSUMER_SEND_MSG_BACK).

use std::collections::BTreeMap;

use ferrocket_protocol::body::{
    de_i32, de_i64, de_string, encode_json, DataVersion, SubscriptionData, SubscriptionGroupConfig,
};
use ferrocket_protocol::codes::{request_code, response_code};
use ferrocket_protocol::header::{
    OffsetResponseHeader, QueryConsumerOffsetRequestHeader, SearchOffsetRequestHeader,
    UpdateConsumerOffsetRequestHeader,
};
use ferrocket_protocol::RemotingCommand;
use serde::{Deserialize, Serialize};

use crate::admin::Admin;
use crate::error::expect_success;
use crate::json::decode_body;
use crate::object_keys::quote_object_keys;
use crate::route::MessageQueue;
use crate::ClientError;

/// A consumer group's settings on a broker (`SubscriptionGroupConfig`),
/// shared with the broker through the protocol crate.
pub type SubscriptionGroup = SubscriptionGroupConfig;

/// GET_ALL_SUBSCRIPTIONGROUP_CONFIG body (`SubscriptionGroupWrapper`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
pub struct SubscriptionGroupTable {
    pub subscription_group_table: BTreeMap<String, SubscriptionGroup>,
    pub data_version: DataVersion,
}

/// One client of a consumer group (`Connection`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
pub struct ClientConnection {
    #[serde(deserialize_with = "de_string")]
    pub client_id: String,
    #[serde(deserialize_with = "de_string")]
    pub client_addr: String,
    #[serde(deserialize_with = "de_string")]
    pub language: String,
    #[serde(deserialize_with = "de_i32")]
    pub version: i32,
}

/// GET_CONSUMER_CONNECTION_LIST body (`ConsumerConnection`). Enums are
/// kept as the names the broker sent.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
pub struct ConsumerConnection {
    pub connection_set: Vec<ClientConnection>,
    pub subscription_table: BTreeMap<String, SubscriptionData>,
    #[serde(deserialize_with = "de_string")]
    pub consume_type: String,
    #[serde(deserialize_with = "de_string")]
    pub message_model: String,
    #[serde(deserialize_with = "de_string")]
    pub consume_from_where: String,
}

/// One queue of GET_CONSUME_STATS (`OffsetWrapper`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
pub struct QueueOffsets {
    /// The queue's max offset (next to be written).
    #[serde(deserialize_with = "de_i64")]
    pub broker_offset: i64,
    /// The group's committed offset.
    #[serde(deserialize_with = "de_i64")]
    pub consumer_offset: i64,
    #[serde(deserialize_with = "de_i64")]
    pub pull_offset: i64,
    /// Store time of the last consumed message (0: none).
    #[serde(deserialize_with = "de_i64")]
    pub last_timestamp: i64,
}

impl QueueOffsets {
    /// Messages not yet consumed.
    pub fn lag(&self) -> i64 {
        (self.broker_offset - self.consumer_offset).max(0)
    }
}

/// GET_CONSUME_STATS body (`ConsumeStats`), queues sorted.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ConsumeStats {
    pub offsets: BTreeMap<MessageQueue, QueueOffsets>,
    pub consume_tps: f64,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct RawConsumeStats {
    pub(crate) offset_table: BTreeMap<String, QueueOffsets>,
    pub(crate) consume_tps: f64,
}

/// A `MessageQueue` as Java serializes it (lenient about number forms).
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct QueueKey {
    #[serde(deserialize_with = "de_string")]
    topic: String,
    #[serde(deserialize_with = "de_string")]
    broker_name: String,
    #[serde(deserialize_with = "de_i32")]
    queue_id: i32,
}

impl QueueKey {
    fn into_queue(self) -> MessageQueue {
        MessageQueue::new(self.topic, self.broker_name, self.queue_id)
    }
}

/// Decodes a fastjson body that may hold maps keyed by objects (see
/// [`quote_object_keys`]).
pub(crate) fn decode_fastjson<R: serde::de::DeserializeOwned>(
    body: &[u8],
) -> Result<R, ClientError> {
    let fixed = quote_object_keys(body);
    Ok(decode_body(fixed.as_deref().unwrap_or(body))?)
}

/// Turns a map keyed by quoted `MessageQueue` objects into one keyed by
/// [`MessageQueue`].
pub(crate) fn by_queue<V>(
    table: BTreeMap<String, V>,
) -> Result<BTreeMap<MessageQueue, V>, ClientError> {
    let mut queues = BTreeMap::new();
    for (key, value) in table {
        let queue: QueueKey = decode_body(key.as_bytes())?;
        queues.insert(queue.into_queue(), value);
    }
    Ok(queues)
}

impl ConsumeStats {
    /// Parses the body as Java's fastjson writes it (object keys).
    pub fn decode(body: &[u8]) -> Result<Self, ClientError> {
        let raw: RawConsumeStats = decode_fastjson(body)?;
        Ok(Self {
            offsets: by_queue(raw.offset_table)?,
            consume_tps: raw.consume_tps,
        })
    }

    /// Messages not yet consumed, over every queue.
    pub fn total_lag(&self) -> i64 {
        self.offsets.values().map(QueueOffsets::lag).sum()
    }
}

/// GET_ALL_DELAY_OFFSET body: per delay level, the next SCHEDULE_TOPIC_XXXX
/// offset to deliver.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
pub struct DelayOffsets {
    pub offset_table: BTreeMap<i32, i64>,
}

/// GET_ALL_CONSUMER_OFFSET body: `topic@group` -> queue id -> offset.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
pub struct AllConsumerOffsets {
    pub offset_table: BTreeMap<String, BTreeMap<i32, i64>>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct LockBody<'a> {
    consumer_group: &'a str,
    client_id: &'a str,
    mq_set: Vec<QueueJson<'a>>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct QueueJson<'a> {
    topic: &'a str,
    broker_name: &'a str,
    queue_id: i32,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct LockAnswer {
    #[serde(rename = "lockOKMQSet")]
    lock_ok_mq_set: Vec<QueueKey>,
}

fn lock_body<'a>(group: &'a str, client_id: &'a str, queues: &'a [MessageQueue]) -> Vec<u8> {
    encode_json(&LockBody {
        consumer_group: group,
        client_id,
        mq_set: queues
            .iter()
            .map(|q| QueueJson {
                topic: &q.topic,
                broker_name: &q.broker_name,
                queue_id: q.queue_id,
            })
            .collect(),
    })
}

impl Admin {
    async fn call(
        &self,
        broker_addr: &str,
        request: RemotingCommand,
    ) -> Result<RemotingCommand, ClientError> {
        expect_success(self.pool().invoke(broker_addr, request).await?)
    }

    /// UPDATE_AND_CREATE_SUBSCRIPTIONGROUP on one broker.
    pub async fn update_subscription_group(
        &self,
        broker_addr: &str,
        group: &SubscriptionGroup,
    ) -> Result<(), ClientError> {
        let request = RemotingCommand::request(request_code::UPDATE_AND_CREATE_SUBSCRIPTIONGROUP)
            .with_body(encode_json(group));
        self.call(broker_addr, request).await.map(|_| ())
    }

    /// GET_ALL_SUBSCRIPTIONGROUP_CONFIG.
    pub async fn subscription_groups(
        &self,
        broker_addr: &str,
    ) -> Result<SubscriptionGroupTable, ClientError> {
        let request = RemotingCommand::request(request_code::GET_ALL_SUBSCRIPTIONGROUP_CONFIG);
        let response = self.call(broker_addr, request).await?;
        Ok(decode_body(&response.body)?)
    }

    /// DELETE_SUBSCRIPTIONGROUP; with `clean_offset` the group's committed
    /// offsets go too.
    pub async fn delete_subscription_group(
        &self,
        broker_addr: &str,
        group: &str,
        clean_offset: bool,
    ) -> Result<(), ClientError> {
        let request = RemotingCommand::request(request_code::DELETE_SUBSCRIPTIONGROUP)
            .with_ext("groupName", group)
            .with_ext("cleanOffset", clean_offset);
        self.call(broker_addr, request).await.map(|_| ())
    }

    /// SET_MESSAGE_REQUEST_MODE: `group` consumes `topic` by `mode` ("PULL"
    /// or "POP") on this broker.
    pub async fn set_message_request_mode(
        &self,
        broker_addr: &str,
        topic: &str,
        group: &str,
        mode: &str,
        pop_share_queue_num: i32,
    ) -> Result<(), ClientError> {
        let body = serde_json::json!({
            "topic": topic,
            "consumerGroup": group,
            "mode": mode,
            "popShareQueueNum": pop_share_queue_num,
        });
        let request = RemotingCommand::request(request_code::SET_MESSAGE_REQUEST_MODE)
            .with_body(body.to_string().into_bytes());
        self.call(broker_addr, request).await.map(|_| ())
    }

    /// GET_CONSUMER_CONNECTION_LIST; `None` when the group has no client
    /// online on this broker (CONSUMER_NOT_ONLINE).
    pub async fn consumer_connection(
        &self,
        broker_addr: &str,
        group: &str,
    ) -> Result<Option<ConsumerConnection>, ClientError> {
        let request = RemotingCommand::request(request_code::GET_CONSUMER_CONNECTION_LIST)
            .with_ext("consumerGroup", group);
        let response = self.pool().invoke(broker_addr, request).await?;
        if response.code == response_code::CONSUMER_NOT_ONLINE {
            return Ok(None);
        }
        let response = expect_success(response)?;
        Ok(Some(decode_body(&response.body)?))
    }

    /// GET_CONSUMER_RUNNING_INFO: the broker asks client `client_id` of
    /// `group` (connected to it) and passes the answer on. The body is the
    /// client's `ConsumerRunningInfo`, as JSON when it parses (Java's
    /// object-keyed maps quoted); `Err(raw body)` when it does not.
    pub async fn consumer_running_info(
        &self,
        broker_addr: &str,
        group: &str,
        client_id: &str,
        jstack: bool,
    ) -> Result<Result<serde_json::Value, String>, ClientError> {
        let request = RemotingCommand::request(request_code::GET_CONSUMER_RUNNING_INFO)
            .with_ext("consumerGroup", group)
            .with_ext("clientId", client_id)
            .with_ext("jstackEnable", jstack);
        let response = expect_success(self.pool().invoke(broker_addr, request).await?)?;
        let body = &response.body;
        let quoted = quote_object_keys(body);
        let text = quoted.as_deref().unwrap_or(body);
        Ok(serde_json::from_slice(text).map_err(|_| String::from_utf8_lossy(body).into_owned()))
    }

    /// GET_CONSUME_STATS of `group`, for one topic or every topic it has
    /// offsets of.
    pub async fn consume_stats(
        &self,
        broker_addr: &str,
        group: &str,
        topic: Option<&str>,
    ) -> Result<ConsumeStats, ClientError> {
        let mut request = RemotingCommand::request(request_code::GET_CONSUME_STATS)
            .with_ext("consumerGroup", group);
        if let Some(topic) = topic {
            request = request.with_ext("topic", topic);
        }
        let response = self.call(broker_addr, request).await?;
        ConsumeStats::decode(&response.body)
    }

    /// GET_ALL_CONSUMER_OFFSET.
    pub async fn all_consumer_offsets(
        &self,
        broker_addr: &str,
    ) -> Result<AllConsumerOffsets, ClientError> {
        let request = RemotingCommand::request(request_code::GET_ALL_CONSUMER_OFFSET);
        let response = self.call(broker_addr, request).await?;
        Ok(decode_body(&response.body)?)
    }

    /// GET_ALL_DELAY_OFFSET.
    pub async fn delay_offsets(&self, broker_addr: &str) -> Result<DelayOffsets, ClientError> {
        let request = RemotingCommand::request(request_code::GET_ALL_DELAY_OFFSET);
        let response = self.call(broker_addr, request).await?;
        Ok(decode_body(&response.body)?)
    }

    /// SEARCH_OFFSET_BY_TIMESTAMP: the first offset of the queue stored at
    /// or after `timestamp_ms` (the queue's max offset when none is).
    pub async fn search_offset(
        &self,
        broker_addr: &str,
        topic: &str,
        queue_id: i32,
        timestamp_ms: i64,
    ) -> Result<i64, ClientError> {
        let header = SearchOffsetRequestHeader {
            topic: topic.to_string(),
            queue_id,
            timestamp: timestamp_ms,
        };
        let mut request = RemotingCommand::request(request_code::SEARCH_OFFSET_BY_TIMESTAMP);
        request.ext_fields = header.to_ext();
        let response = self.call(broker_addr, request).await?;
        Ok(OffsetResponseHeader::from_ext(&response.ext_fields)?.offset)
    }

    /// QUERY_CONSUMER_OFFSET without the "start at 0" rule; `None` when the
    /// group has none for the queue.
    pub async fn committed_offset(
        &self,
        broker_addr: &str,
        group: &str,
        topic: &str,
        queue_id: i32,
    ) -> Result<Option<i64>, ClientError> {
        let header = QueryConsumerOffsetRequestHeader {
            consumer_group: group.to_string(),
            topic: topic.to_string(),
            queue_id,
            set_zero_if_not_found: Some("false".into()),
        };
        let mut request = RemotingCommand::request(request_code::QUERY_CONSUMER_OFFSET);
        request.ext_fields = header.to_ext();
        let response = self.pool().invoke(broker_addr, request).await?;
        if response.code == response_code::QUERY_NOT_FOUND {
            return Ok(None);
        }
        let response = expect_success(response)?;
        Ok(Some(
            OffsetResponseHeader::from_ext(&response.ext_fields)?.offset,
        ))
    }

    /// UPDATE_CONSUMER_OFFSET: sets the group's committed offset.
    pub async fn commit_offset(
        &self,
        broker_addr: &str,
        group: &str,
        topic: &str,
        queue_id: i32,
        offset: i64,
    ) -> Result<(), ClientError> {
        let header = UpdateConsumerOffsetRequestHeader {
            consumer_group: group.to_string(),
            topic: topic.to_string(),
            queue_id,
            commit_offset: offset,
        };
        let mut request = RemotingCommand::request(request_code::UPDATE_CONSUMER_OFFSET);
        request.ext_fields = header.to_ext();
        self.call(broker_addr, request).await.map(|_| ())
    }

    /// LOCK_BATCH_MQ: the queues now locked by `client_id` for `group`.
    pub async fn lock_queues(
        &self,
        broker_addr: &str,
        group: &str,
        client_id: &str,
        queues: &[MessageQueue],
    ) -> Result<Vec<MessageQueue>, ClientError> {
        let request = RemotingCommand::request(request_code::LOCK_BATCH_MQ)
            .with_body(lock_body(group, client_id, queues));
        let response = self.call(broker_addr, request).await?;
        let answer: LockAnswer = decode_body(&response.body)?;
        Ok(answer
            .lock_ok_mq_set
            .into_iter()
            .map(QueueKey::into_queue)
            .collect())
    }

    /// UNLOCK_BATCH_MQ.
    pub async fn unlock_queues(
        &self,
        broker_addr: &str,
        group: &str,
        client_id: &str,
        queues: &[MessageQueue],
    ) -> Result<(), ClientError> {
        let request = RemotingCommand::request(request_code::UNLOCK_BATCH_MQ)
            .with_body(lock_body(group, client_id, queues));
        self.call(broker_addr, request).await.map(|_| ())
    }

    /// CONSUMER_SEND_MSG_BACK: hands a message that failed consumption back
    /// (by its CommitLog offset) for a retry at `delay_level` (0: the
    /// broker's choice; negative: straight to the DLQ).
    pub async fn send_message_back(
        &self,
        broker_addr: &str,
        group: &str,
        commit_log_offset: i64,
        delay_level: i32,
        max_reconsume_times: Option<i32>,
    ) -> Result<(), ClientError> {
        let mut request = RemotingCommand::request(request_code::CONSUMER_SEND_MSG_BACK)
            .with_ext("group", group)
            .with_ext("offset", commit_log_offset)
            .with_ext("delayLevel", delay_level)
            .with_ext("unitMode", false);
        if let Some(times) = max_reconsume_times {
            request = request.with_ext("maxReconsumeTimes", times);
        }
        self.call(broker_addr, request).await.map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn consume_stats_from_fastjson() {
        let body = br#"{"consumeTps":1.5,"offsetTable":{{"brokerName":"b","queueId":1,"topic":"T"}:{"brokerOffset":10,"consumerOffset":4,"lastTimestamp":77,"pullOffset":4},{"brokerName":"b","queueId":0,"topic":"T"}:{"brokerOffset":2,"consumerOffset":2,"lastTimestamp":0,"pullOffset":2}}}"#;
        let stats = ConsumeStats::decode(body).unwrap();
        assert_eq!(stats.consume_tps, 1.5);
        let q1 = &stats.offsets[&MessageQueue::new("T", "b", 1)];
        assert_eq!((q1.broker_offset, q1.consumer_offset, q1.lag()), (10, 4, 6));
        assert_eq!(stats.total_lag(), 6);
        assert_eq!(stats.offsets.keys().next().unwrap().queue_id, 0);
        let empty = ConsumeStats::decode(br#"{"consumeTps":0.0,"offsetTable":{}}"#).unwrap();
        assert!(empty.offsets.is_empty());
    }

    #[test]
    fn group_config_keeps_unknown_fields() {
        let group: SubscriptionGroup = decode_body(
            br#"{"groupName":"G","retryMaxTimes":"3","groupRetryPolicy":{"type":"X"}}"#,
        )
        .unwrap();
        assert_eq!(group.retry_max_times, 3);
        assert!(group.consume_enable);
        let json = String::from_utf8(encode_json(&group)).unwrap();
        assert!(
            json.contains(r#""groupRetryPolicy":{"type":"X"}"#),
            "{json}"
        );
    }
}
