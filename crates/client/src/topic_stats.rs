//! GET_TOPIC_STATS_INFO (mqadmin `topicStatus`): each queue's offsets and
//! the store time of its last message, from one broker.

use std::collections::BTreeMap;

use ferrocket_protocol::codes::request_code;
use ferrocket_protocol::RemotingCommand;
use serde::Deserialize;

use crate::admin::Admin;
use crate::consume_admin::{by_queue, decode_fastjson};
use crate::error::expect_success;
use crate::route::MessageQueue;
use crate::ClientError;

/// One queue's figures (`TopicOffset`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
pub struct TopicOffset {
    pub min_offset: i64,
    pub max_offset: i64,
    pub last_update_timestamp: i64,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawTopicStats {
    #[serde(default)]
    offset_table: BTreeMap<String, TopicOffset>,
}

/// Decodes the body as Java's fastjson writes it (queue objects as keys).
pub fn decode_topic_stats(body: &[u8]) -> Result<BTreeMap<MessageQueue, TopicOffset>, ClientError> {
    let raw: RawTopicStats = decode_fastjson(body)?;
    by_queue(raw.offset_table)
}

impl Admin {
    /// GET_TOPIC_STATS_INFO of `topic` on one broker.
    pub async fn topic_stats(
        &self,
        broker_addr: &str,
        topic: &str,
    ) -> Result<BTreeMap<MessageQueue, TopicOffset>, ClientError> {
        let request =
            RemotingCommand::request(request_code::GET_TOPIC_STATS_INFO).with_ext("topic", topic);
        let response = expect_success(self.pool().invoke(broker_addr, request).await?)?;
        decode_topic_stats(&response.body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn javas_body_decodes() {
        let body = br#"{"offsetTable":{{"brokerName":"b","queueId":1,"topic":"T"}:{"lastUpdateTimestamp":9,"maxOffset":5,"minOffset":1}}}"#;
        let stats = decode_topic_stats(body).unwrap();
        let (queue, offsets) = stats.into_iter().next().unwrap();
        assert_eq!(queue, MessageQueue::new("T", "b", 1));
        assert_eq!(
            (
                offsets.min_offset,
                offsets.max_offset,
                offsets.last_update_timestamp
            ),
            (1, 5, 9)
        );
    }
}
