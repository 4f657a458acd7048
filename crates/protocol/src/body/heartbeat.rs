//! HEART_BEAT body (`HeartbeatData`). Java clients send enum names; the
//! Apache C++ client sends ordinals and numbers as strings. Both are read.

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

use super::lenient::{de_bool, de_i64, de_string};

macro_rules! lenient_enum {
    ($(#[$meta:meta])* $name:ident { $($variant:ident = $ordinal:literal, $java:literal $(| $alias:literal)*;)* } default $default:ident) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
        pub enum $name {
            #[default]
            $default,
            $($variant,)*
        }

        impl $name {
            pub fn from_ordinal(ordinal: i64) -> Option<Self> {
                match ordinal {
                    $($ordinal => Some(Self::$variant),)*
                    _ => None,
                }
            }

            pub fn from_name(name: &str) -> Option<Self> {
                let name = name.trim();
                $(if name.eq_ignore_ascii_case($java) $(|| name.eq_ignore_ascii_case($alias))* {
                    return Some(Self::$variant);
                })*
                name.parse::<i64>().ok().and_then(Self::from_ordinal)
            }

            /// The Java enum constant name.
            pub fn java_name(self) -> &'static str {
                match self {
                    $(Self::$variant => $java,)*
                    Self::$default => Self::$default.fallback_name(),
                }
            }
        }

        impl Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.java_name())
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let value = Value::deserialize(deserializer)?;
                Ok(match value {
                    Value::Number(n) => n.as_i64().and_then(Self::from_ordinal).unwrap_or_default(),
                    Value::String(s) => Self::from_name(&s).unwrap_or_default(),
                    _ => Self::default(),
                })
            }
        }
    };
}

lenient_enum! {
    /// How a consumer receives messages (`ConsumeType`).
    ConsumeType {
        Pull = 0, "CONSUME_ACTIVELY" | "PULL";
        Pop = 2, "CONSUME_POP" | "POP";
    } default Push
}

impl ConsumeType {
    fn fallback_name(self) -> &'static str {
        "CONSUME_PASSIVELY"
    }
}

lenient_enum! {
    /// Clustering shares queues in a group; broadcasting gives every
    /// consumer every message (`MessageModel`).
    MessageModel {
        Broadcasting = 0, "BROADCASTING";
    } default Clustering
}

impl MessageModel {
    fn fallback_name(self) -> &'static str {
        "CLUSTERING"
    }
}

lenient_enum! {
    /// Where a new group starts (`ConsumeFromWhere`).
    ConsumeFromWhere {
        LastOffsetAndMinWhenBootFirst = 1, "CONSUME_FROM_LAST_OFFSET_AND_FROM_MIN_WHEN_BOOT_FIRST";
        MinOffset = 2, "CONSUME_FROM_MIN_OFFSET";
        MaxOffset = 3, "CONSUME_FROM_MAX_OFFSET";
        FirstOffset = 4, "CONSUME_FROM_FIRST_OFFSET";
        Timestamp = 5, "CONSUME_FROM_TIMESTAMP";
    } default LastOffset
}

impl ConsumeFromWhere {
    fn fallback_name(self) -> &'static str {
        "CONSUME_FROM_LAST_OFFSET"
    }
}

// The default variants sit outside the macro's list; give their ordinals.
impl ConsumeType {
    pub fn ordinal(self) -> i64 {
        match self {
            ConsumeType::Pull => 0,
            ConsumeType::Push => 1,
            ConsumeType::Pop => 2,
        }
    }
}

/// One subscription of a consumer (`SubscriptionData`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
pub struct SubscriptionData {
    #[serde(deserialize_with = "de_string")]
    pub topic: String,
    #[serde(deserialize_with = "de_string")]
    pub sub_string: String,
    #[serde(deserialize_with = "de_i64")]
    pub sub_version: i64,
    #[serde(deserialize_with = "de_bool")]
    pub class_filter_mode: bool,
    pub tags_set: Vec<String>,
    pub code_set: Vec<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expression_type: Option<String>,
}

/// One consumer group on a client (`ConsumerData`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
pub struct ConsumerData {
    #[serde(deserialize_with = "de_string")]
    pub group_name: String,
    pub consume_type: ConsumeType,
    pub message_model: MessageModel,
    pub consume_from_where: ConsumeFromWhere,
    pub subscription_data_set: Vec<SubscriptionData>,
    #[serde(deserialize_with = "de_bool")]
    pub unit_mode: bool,
}

/// One producer group on a client (`ProducerData`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
pub struct ProducerData {
    #[serde(deserialize_with = "de_string")]
    pub group_name: String,
}

/// HEART_BEAT body (`HeartbeatData`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
pub struct HeartbeatData {
    #[serde(rename = "clientID", deserialize_with = "de_string")]
    pub client_id: String,
    pub producer_data_set: Vec<ProducerData>,
    pub consumer_data_set: Vec<ConsumerData>,
}

/// CHECK_CLIENT_CONFIG body (`CheckClientRequestBody`): the subscription a
/// consumer is about to use, sent before its first heartbeat.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
pub struct CheckClientRequestBody {
    #[serde(deserialize_with = "de_string")]
    pub client_id: String,
    #[serde(deserialize_with = "de_string")]
    pub group: String,
    pub subscription_data: Option<SubscriptionData>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn java_check_client_body() {
        let body = r#"{"clientId":"127.0.0.1@1#2","group":"G","subscriptionData":{
            "classFilterMode":false,"codeSet":[],"expressionType":"SQL92",
            "subString":"a > 1","subVersion":1700000000000,"tagsSet":[],"topic":"T"}}"#;
        let data: CheckClientRequestBody = serde_json::from_str(body).unwrap();
        assert_eq!(data.group, "G");
        let sub = data.subscription_data.unwrap();
        assert_eq!(sub.expression_type.as_deref(), Some("SQL92"));
        assert_eq!(sub.sub_string, "a > 1");
        let empty: CheckClientRequestBody = serde_json::from_str("{}").unwrap();
        assert!(empty.subscription_data.is_none());
    }

    #[test]
    fn cpp_client_heartbeat_with_ordinals() {
        let body = r#"{"clientID":"127.0.0.1@1","consumerDataSet":[{"consumeFromWhere":0,
            "consumeType":1,"groupName":"G","messageModel":1,"subscriptionDataSet":[
            {"subString":"*","subVersion":"1795957793800","topic":"T"}]}]}"#;
        let data: HeartbeatData = serde_json::from_str(body).unwrap();
        let consumer = &data.consumer_data_set[0];
        assert_eq!(consumer.consume_type, ConsumeType::Push);
        assert_eq!(consumer.message_model, MessageModel::Clustering);
        assert_eq!(consumer.consume_from_where, ConsumeFromWhere::LastOffset);
        assert_eq!(consumer.subscription_data_set[0].sub_version, 1795957793800);
        assert!(data.producer_data_set.is_empty());
    }

    #[test]
    fn java_client_heartbeat_with_names() {
        let body = r#"{"clientID":"c","producerDataSet":[{"groupName":"P"}],"consumerDataSet":[
            {"groupName":"G","consumeType":"CONSUME_ACTIVELY","messageModel":"BROADCASTING",
             "consumeFromWhere":"CONSUME_FROM_FIRST_OFFSET","subscriptionDataSet":[],"unitMode":false}]}"#;
        let data: HeartbeatData = serde_json::from_str(body).unwrap();
        let consumer = &data.consumer_data_set[0];
        assert_eq!(consumer.consume_type, ConsumeType::Pull);
        assert_eq!(consumer.message_model, MessageModel::Broadcasting);
        assert_eq!(consumer.consume_from_where, ConsumeFromWhere::FirstOffset);
        let json = serde_json::to_string(&data).unwrap();
        assert!(json.contains("\"CONSUME_ACTIVELY\""), "{json}");
    }
}
