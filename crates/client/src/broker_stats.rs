//! VIEW_BROKER_STATS_DATA (315), GET_BROKER_CONSUME_STATS (317) and
//! QUERY_TOPIC_CONSUME_BY_WHO (300): what mqadmin's `statsAll` and
//! `brokerConsumeStats` read.

use std::collections::BTreeMap;
use std::time::Duration;

use ferrocket_protocol::codes::request_code;
use ferrocket_protocol::RemotingCommand;
use serde::Deserialize;

use crate::consume_admin::{by_queue, decode_fastjson, RawConsumeStats};
use crate::{decode_body, expect_success, Admin, ClientError, ConsumeStats};

/// One window of a stats item (`BrokerStatsItem`).
#[derive(Debug, Clone, Copy, PartialEq, Default, Deserialize)]
#[serde(default)]
pub struct StatsItem {
    pub sum: i64,
    pub tps: f64,
    pub avgpt: f64,
}

/// VIEW_BROKER_STATS_DATA's body (`BrokerStatsData`).
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct BrokerStatsData {
    pub stats_minute: StatsItem,
    pub stats_hour: StatsItem,
    pub stats_day: StatsItem,
}

impl BrokerStatsData {
    /// The last day's sum, as mqadmin's `statsAll` takes it: the day's,
    /// else the hour's, else the minute's (a young item's longer windows
    /// are still empty).
    pub fn sum_24h(&self) -> i64 {
        [
            self.stats_day.sum,
            self.stats_hour.sum,
            self.stats_minute.sum,
        ]
        .into_iter()
        .find(|s| *s != 0)
        .unwrap_or(0)
    }
}

/// GET_BROKER_CONSUME_STATS's body (`ConsumeStatsList`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct BrokerConsumeStats {
    pub broker_addr: String,
    /// Each group's ConsumeStats, one per topic, in the broker's order.
    pub groups: Vec<(String, Vec<ConsumeStats>)>,
    pub total_diff: i64,
    pub total_inflight_diff: i64,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct RawList {
    broker_addr: String,
    consume_stats_list: Vec<BTreeMap<String, Vec<RawConsumeStats>>>,
    total_diff: i64,
    total_inflight_diff: i64,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct GroupList {
    group_list: Vec<String>,
}

impl BrokerConsumeStats {
    /// Parses the body as Java's fastjson writes it (object keys).
    pub fn decode(body: &[u8]) -> Result<Self, ClientError> {
        let raw: RawList = decode_fastjson(body)?;
        let mut groups = Vec::new();
        for map in raw.consume_stats_list {
            for (group, list) in map {
                let mut stats = Vec::with_capacity(list.len());
                for one in list {
                    stats.push(ConsumeStats {
                        offsets: by_queue(one.offset_table)?,
                        consume_tps: one.consume_tps,
                    });
                }
                groups.push((group, stats));
            }
        }
        Ok(Self {
            broker_addr: raw.broker_addr,
            groups,
            total_diff: raw.total_diff,
            total_inflight_diff: raw.total_inflight_diff,
        })
    }
}

impl Admin {
    /// VIEW_BROKER_STATS_DATA: the item `name` (TOPIC_PUT_NUMS, ...) of
    /// `key` (a topic, `topic@group`, the cluster); an item the broker has
    /// not counted is an error (SYSTEM_ERROR, "The stats <N> <K> not exist").
    pub async fn view_broker_stats(
        &self,
        broker_addr: &str,
        name: &str,
        key: &str,
    ) -> Result<BrokerStatsData, ClientError> {
        let request = RemotingCommand::request(request_code::VIEW_BROKER_STATS_DATA)
            .with_ext("statsName", name)
            .with_ext("statsKey", key);
        let response = expect_success(self.pool().invoke(broker_addr, request).await?)?;
        Ok(decode_body(&response.body)?)
    }

    /// GET_BROKER_CONSUME_STATS: every group's progress on the broker
    /// (`is_order`: ordered topics only).
    pub async fn broker_consume_stats(
        &self,
        broker_addr: &str,
        is_order: bool,
        timeout: Duration,
    ) -> Result<BrokerConsumeStats, ClientError> {
        let request = RemotingCommand::request(request_code::GET_BROKER_CONSUME_STATS)
            .with_ext("isOrder", if is_order { "true" } else { "false" });
        let response = self
            .pool()
            .invoke_timeout(broker_addr, request, timeout)
            .await?;
        BrokerConsumeStats::decode(&expect_success(response)?.body)
    }

    /// QUERY_TOPIC_CONSUME_BY_WHO: the groups consuming `topic` there.
    pub async fn topic_consumer_groups(
        &self,
        broker_addr: &str,
        topic: &str,
    ) -> Result<Vec<String>, ClientError> {
        let request = RemotingCommand::request(request_code::QUERY_TOPIC_CONSUME_BY_WHO)
            .with_ext("topic", topic);
        let response = expect_success(self.pool().invoke(broker_addr, request).await?)?;
        let list: GroupList = decode_body(&response.body)?;
        Ok(list.group_list)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_brokers_list_parses_with_object_keys() {
        let body = br#"{"brokerAddr":"127.0.0.1:10911","consumeStatsList":[{"G1":[{"consumeTps":1.5,"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:{"brokerOffset":10,"consumerOffset":8,"lastTimestamp":77,"pullOffset":8}}}]},{"G2":[]}],"totalDiff":2,"totalInflightDiff":0}"#;
        let stats = BrokerConsumeStats::decode(body).unwrap();
        assert_eq!(stats.broker_addr, "127.0.0.1:10911");
        assert_eq!(stats.groups.len(), 2);
        let (group, list) = &stats.groups[0];
        assert_eq!((group.as_str(), list[0].consume_tps), ("G1", 1.5));
        assert_eq!(list[0].total_lag(), 2);
        assert_eq!(stats.total_diff, 2);
        let data: BrokerStatsData = serde_json::from_str(
            r#"{"statsDay":{"avgpt":0.0,"sum":0,"tps":0.0},"statsHour":{"avgpt":1.0,"sum":5,"tps":0.1},"statsMinute":{"avgpt":1.0,"sum":3,"tps":0.05}}"#,
        )
        .unwrap();
        assert_eq!(data.sum_24h(), 5);
    }
}
