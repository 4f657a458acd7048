//! Route and cluster bodies served by the name server.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::lenient::{de_i32, de_string};

/// One broker's queues of a topic (`QueueData`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
pub struct QueueData {
    #[serde(deserialize_with = "de_string")]
    pub broker_name: String,
    #[serde(deserialize_with = "de_i32")]
    pub read_queue_nums: i32,
    #[serde(deserialize_with = "de_i32")]
    pub write_queue_nums: i32,
    #[serde(deserialize_with = "de_i32")]
    pub perm: i32,
    #[serde(deserialize_with = "de_i32")]
    pub topic_sys_flag: i32,
}

/// One broker set: a master (id 0) and its slaves (`BrokerData`).
/// `brokerAddrs` keys are broker ids written as JSON strings.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
pub struct BrokerData {
    #[serde(deserialize_with = "de_string")]
    pub cluster: String,
    #[serde(deserialize_with = "de_string")]
    pub broker_name: String,
    pub broker_addrs: BTreeMap<i64, String>,
    /// The set's brokers run with `enableSlaveActingMaster` (as the last
    /// registration said).
    pub enable_acting_master: bool,
}

/// Written as Java writes it, `enableActingMaster` included: strict
/// clients (`rocketmq-client-rust`) refuse a `BrokerData` without it.
impl Serialize for BrokerData {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut out = serializer.serialize_struct("BrokerData", 4)?;
        out.serialize_field("cluster", &self.cluster)?;
        out.serialize_field("brokerName", &self.broker_name)?;
        out.serialize_field("brokerAddrs", &self.broker_addrs)?;
        out.serialize_field("enableActingMaster", &self.enable_acting_master)?;
        out.end()
    }
}

impl BrokerData {
    /// The master's address (broker id 0), if it is registered.
    pub fn master_addr(&self) -> Option<&str> {
        self.broker_addrs.get(&0).map(String::as_str)
    }
}

/// GET_BROKER_MEMBER_GROUP body (`GetBrokerMemberGroupResponseBody`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
pub struct BrokerMemberGroupBody {
    pub broker_member_group: super::BrokerMemberGroup,
}

/// GET_ROUTEINFO_BY_TOPIC body (`TopicRouteData`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
pub struct TopicRouteData {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub order_topic_conf: Option<String>,
    pub queue_datas: Vec<QueueData>,
    pub broker_datas: Vec<BrokerData>,
    pub filter_server_table: BTreeMap<String, Vec<String>>,
}

/// GET_BROKER_CLUSTER_INFO body (`ClusterInfo`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
pub struct ClusterInfo {
    pub broker_addr_table: BTreeMap<String, BrokerData>,
    pub cluster_addr_table: BTreeMap<String, BTreeSet<String>>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn route_round_trip_and_string_keys() {
        let mut addrs = BTreeMap::new();
        addrs.insert(0, "127.0.0.1:10911".to_string());
        let route = TopicRouteData {
            order_topic_conf: None,
            queue_datas: vec![QueueData {
                broker_name: "b".into(),
                read_queue_nums: 4,
                write_queue_nums: 4,
                perm: 6,
                topic_sys_flag: 0,
            }],
            broker_datas: vec![BrokerData {
                cluster: "c".into(),
                broker_name: "b".into(),
                broker_addrs: addrs,
                enable_acting_master: false,
            }],
            filter_server_table: BTreeMap::new(),
        };
        let json = String::from_utf8(super::super::encode_json(&route)).unwrap();
        assert!(
            json.contains(r#""brokerAddrs":{"0":"127.0.0.1:10911"}"#),
            "{json}"
        );
        let back: TopicRouteData = super::super::decode_json(json.as_bytes()).unwrap();
        assert_eq!(back, route);
        let loose: QueueData =
            serde_json::from_str(r#"{"brokerName":"b","readQueueNums":"8","perm":6}"#).unwrap();
        assert_eq!(loose.read_queue_nums, 8);
        assert_eq!(loose.write_queue_nums, 0);
    }
}
