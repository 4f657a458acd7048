//! Topic configuration bodies, broker registration, and small lists.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::lenient::{de_bool, de_i32, de_i64, de_string};

/// Topic permission bits (`PermName`).
pub mod perm {
    pub const INHERIT: i32 = 1;
    pub const WRITE: i32 = 2;
    pub const READ: i32 = 4;
    pub const READ_WRITE: i32 = READ | WRITE;

    pub fn is_readable(perm: i32) -> bool {
        perm & READ != 0
    }

    pub fn is_writeable(perm: i32) -> bool {
        perm & WRITE != 0
    }
}

/// One topic's configuration on a broker (`TopicConfig`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct TopicConfig {
    #[serde(deserialize_with = "de_string")]
    pub topic_name: String,
    #[serde(deserialize_with = "de_i32")]
    pub read_queue_nums: i32,
    #[serde(deserialize_with = "de_i32")]
    pub write_queue_nums: i32,
    #[serde(deserialize_with = "de_i32")]
    pub perm: i32,
    #[serde(deserialize_with = "de_string")]
    pub topic_filter_type: String,
    #[serde(deserialize_with = "de_i32")]
    pub topic_sys_flag: i32,
    #[serde(deserialize_with = "de_bool")]
    pub order: bool,
    pub attributes: BTreeMap<String, String>,
}

impl Default for TopicConfig {
    fn default() -> Self {
        Self {
            topic_name: String::new(),
            read_queue_nums: 16,
            write_queue_nums: 16,
            perm: perm::READ_WRITE,
            topic_filter_type: "SINGLE_TAG".into(),
            topic_sys_flag: 0,
            order: false,
            attributes: BTreeMap::new(),
        }
    }
}

impl TopicConfig {
    pub fn new(topic_name: &str, queue_nums: i32) -> Self {
        Self {
            topic_name: topic_name.to_string(),
            read_queue_nums: queue_nums,
            write_queue_nums: queue_nums,
            ..Self::default()
        }
    }
}

/// A config table's version: a timestamp and a change counter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
pub struct DataVersion {
    #[serde(deserialize_with = "de_i64")]
    pub state_version: i64,
    #[serde(deserialize_with = "de_i64")]
    pub timestamp: i64,
    #[serde(deserialize_with = "de_i64")]
    pub counter: i64,
}

impl DataVersion {
    /// Records one change at `now_ms`.
    pub fn next(&mut self, now_ms: i64) {
        self.timestamp = now_ms;
        self.counter += 1;
    }
}

/// Topic table plus version (`TopicConfigSerializeWrapper`), as in
/// topics.json and in a broker registration.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
pub struct TopicConfigSerializeWrapper {
    pub topic_config_table: BTreeMap<String, TopicConfig>,
    pub data_version: DataVersion,
}

/// REGISTER_BROKER body (uncompressed form, `RegisterBrokerBody`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
pub struct RegisterBrokerBody {
    pub topic_config_serialize_wrapper: TopicConfigSerializeWrapper,
    pub filter_server_list: Vec<String>,
}

/// Key/value table (`KVTable`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct KvTable {
    pub table: BTreeMap<String, String>,
}

/// A set of topic names (`TopicList`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
pub struct TopicList {
    pub topic_list: BTreeSet<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub broker_addr: Option<String>,
}

/// GET_CONSUMER_LIST_BY_GROUP body (`GetConsumerListByGroupResponseBody`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
pub struct ConsumerIdList {
    pub consumer_id_list: Vec<String>,
}
