//! A consumer group's settings on a broker (`SubscriptionGroupConfig`): the
//! body of UPDATE_AND_CREATE_SUBSCRIPTIONGROUP and GET_SUBSCRIPTIONGROUP_CONFIG
//! and the values of `subscriptionGroup.json`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::lenient::{de_bool, de_i32, de_i64, de_string};

/// Default `retryMaxTimes`: consumption attempts before the DLQ.
pub const RETRY_MAX_TIMES_DEFAULT: i32 = 16;
/// Default `retryQueueNums`.
pub const RETRY_QUEUE_NUMS_DEFAULT: i32 = 1;
/// Default `consumeTimeoutMinute`.
pub const CONSUME_TIMEOUT_MINUTES_DEFAULT: i32 = 15;

/// One group's settings (`SubscriptionGroupConfig`). Fields not named here
/// (`groupRetryPolicy`, ...) are kept as they came, in `other`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SubscriptionGroupConfig {
    #[serde(deserialize_with = "de_string")]
    pub group_name: String,
    /// Pulls are refused with NO_PERMISSION when false.
    #[serde(deserialize_with = "de_bool")]
    pub consume_enable: bool,
    #[serde(deserialize_with = "de_bool")]
    pub consume_from_min_enable: bool,
    /// Broadcasting consumers are refused when false.
    #[serde(deserialize_with = "de_bool")]
    pub consume_broadcast_enable: bool,
    #[serde(deserialize_with = "de_bool")]
    pub consume_message_orderly: bool,
    /// Queues of the group's retry topic; 0 drops failed messages.
    #[serde(deserialize_with = "de_i32")]
    pub retry_queue_nums: i32,
    /// Failed consumptions before a message goes to the DLQ.
    #[serde(deserialize_with = "de_i32")]
    pub retry_max_times: i32,
    #[serde(deserialize_with = "de_i64")]
    pub broker_id: i64,
    #[serde(deserialize_with = "de_i64")]
    pub which_broker_when_consume_slowly: i64,
    #[serde(deserialize_with = "de_bool")]
    pub notify_consumer_ids_changed_enable: bool,
    #[serde(deserialize_with = "de_i32")]
    pub group_sys_flag: i32,
    #[serde(deserialize_with = "de_i32")]
    pub consume_timeout_minute: i32,
    pub attributes: BTreeMap<String, String>,
    #[serde(flatten)]
    pub other: BTreeMap<String, Value>,
}

impl Default for SubscriptionGroupConfig {
    fn default() -> Self {
        Self {
            group_name: String::new(),
            consume_enable: true,
            consume_from_min_enable: true,
            consume_broadcast_enable: true,
            consume_message_orderly: false,
            retry_queue_nums: RETRY_QUEUE_NUMS_DEFAULT,
            retry_max_times: RETRY_MAX_TIMES_DEFAULT,
            broker_id: 0,
            which_broker_when_consume_slowly: 1,
            notify_consumer_ids_changed_enable: true,
            group_sys_flag: 0,
            consume_timeout_minute: CONSUME_TIMEOUT_MINUTES_DEFAULT,
            attributes: BTreeMap::new(),
            other: BTreeMap::new(),
        }
    }
}

impl SubscriptionGroupConfig {
    /// A group with Java's default settings.
    pub fn new(group_name: &str) -> Self {
        Self {
            group_name: group_name.to_string(),
            ..Self::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn java_json_round_trips_with_unknown_fields_kept() {
        let json = r#"{"groupName":"G","consumeEnable":"false","retryMaxTimes":3,
            "groupRetryPolicy":{"type":"CUSTOMIZED"},"brokerId":0}"#;
        let config: SubscriptionGroupConfig = serde_json::from_str(json).unwrap();
        assert_eq!(config.group_name, "G");
        assert!(!config.consume_enable);
        assert_eq!(config.retry_max_times, 3);
        assert_eq!(
            config.retry_queue_nums, RETRY_QUEUE_NUMS_DEFAULT,
            "missing fields take Java's defaults"
        );
        assert!(config.consume_broadcast_enable);
        let out = serde_json::to_string(&config).unwrap();
        assert!(
            out.contains(r#""groupRetryPolicy":{"type":"CUSTOMIZED"}"#),
            "{out}"
        );
        let back: SubscriptionGroupConfig = serde_json::from_str(&out).unwrap();
        assert_eq!(back, config);
    }
}
