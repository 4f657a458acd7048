//! INVOKE_BROKER_TO_RESET_OFFSET (Java `MQAdminExt.resetOffsetByTimestamp`):
//! the broker resets an online group's offsets of a topic to a time and
//! tells the group's consumers. For an offline group the broker answers
//! CONSUMER_NOT_ONLINE and the caller resets with SEARCH_OFFSET_BY_TIMESTAMP
//! and UPDATE_CONSUMER_OFFSET instead (`consume_admin`).

use std::collections::BTreeMap;

use ferrocket_protocol::codes::{request_code, response_code};
use ferrocket_protocol::header::ResetOffsetRequestHeader;
use ferrocket_protocol::RemotingCommand;
use serde::Deserialize;

use crate::admin::Admin;
use crate::consume_admin::{by_queue, decode_fastjson};
use crate::error::expect_success;
use crate::route::MessageQueue;
use crate::ClientError;

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct RawResetBody {
    offset_table: BTreeMap<String, i64>,
}

/// Parses a `ResetOffsetBody` as fastjson writes it (a map keyed by
/// `MessageQueue` objects): the new offset of each queue.
pub fn decode_reset_body(body: &[u8]) -> Result<BTreeMap<MessageQueue, i64>, ClientError> {
    let raw: RawResetBody = decode_fastjson(body)?;
    by_queue(raw.offset_table)
}

impl Admin {
    /// INVOKE_BROKER_TO_RESET_OFFSET on one broker: the new offset of each
    /// of its queues of `topic`, or `None` when the group has no consumer
    /// online there (CONSUMER_NOT_ONLINE). `timestamp_ms` -1 means the
    /// queues' max offsets; without `force` offsets only move back.
    pub async fn reset_offset_online(
        &self,
        broker_addr: &str,
        group: &str,
        topic: &str,
        timestamp_ms: i64,
        force: bool,
    ) -> Result<Option<BTreeMap<MessageQueue, i64>>, ClientError> {
        let header = ResetOffsetRequestHeader {
            topic: topic.to_string(),
            group: group.to_string(),
            timestamp: timestamp_ms,
            is_force: force,
        };
        let mut request = RemotingCommand::request(request_code::INVOKE_BROKER_TO_RESET_OFFSET);
        request.ext_fields = header.to_ext();
        let response = self.pool().invoke(broker_addr, request).await?;
        if response.code == response_code::CONSUMER_NOT_ONLINE {
            return Ok(None);
        }
        let response = expect_success(response)?;
        decode_reset_body(&response.body).map(Some)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reset_body_from_fastjson() {
        let body = br#"{"offsetTable":{{"brokerName":"b","queueId":1,"topic":"T"}:7,{"brokerName":"b","queueId":0,"topic":"T"}:0}}"#;
        let table = decode_reset_body(body).unwrap();
        assert_eq!(table.len(), 2);
        assert_eq!(table[&MessageQueue::new("T", "b", 1)], 7);
        assert_eq!(table[&MessageQueue::new("T", "b", 0)], 0);
        assert!(decode_reset_body(br#"{"offsetTable":{}}"#)
            .unwrap()
            .is_empty());
        assert!(decode_reset_body(b"{oops").is_err());
    }
}
