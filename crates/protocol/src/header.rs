//! Typed request and response headers. Every field travels as a string in
//! `extFields`; [`HeaderField`] reads each form real clients send and writes
//! what the Java client writes.

use crate::{ExtFields, ProtocolError};

mod field;
pub use field::HeaderField;

/// Declares a header struct with its Java field names (and alternative
/// names, such as V2's short ones, after `|`).
macro_rules! header {
    ($(#[$meta:meta])* pub struct $name:ident $(<$lt:lifetime>)? {
        $( $(#[$fmeta:meta])* $field:ident : $ty:ty = $java:literal $(| $alt:literal)* ),* $(,)?
    }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, Eq, Default)]
        pub struct $name $(<$lt>)? {
            $( $(#[$fmeta])* pub $field: $ty, )*
        }

        impl $(<$lt>)? $name $(<$lt>)? {
            /// Reads the header from a command's `extFields` in one pass:
            /// each key is matched against every field's names at once (a
            /// `match` on the literals), where looking each field up by
            /// scanning cost a scan per name. The Java name wins over an
            /// alternative one when both are present.
            pub fn from_ext<'f>(fields: &'f ExtFields) -> Result<Self, ProtocolError>
            where
                $( $ty: HeaderField<'f>, )*
            {
                #[derive(Default)]
                struct Found<'x> {
                    $( $field: Option<(&'static str, &'x str)>, )*
                }
                let mut found = Found::default();
                for (key, value) in fields.iter() {
                    match key {
                        $(
                            $java => found.$field = Some(($java, value)),
                            $( $alt if found.$field.is_none() => {
                                found.$field = Some(($alt, value))
                            } )*
                        )*
                        _ => {}
                    }
                }
                Ok(Self {
                    $( $field: <$ty as HeaderField<'f>>::from_found(found.$field, $java)?, )*
                })
            }

            /// Writes the header with its Java (long) field names.
            pub fn to_ext(&self) -> ExtFields {
                let mut out = ExtFields::new();
                $( HeaderField::write(&self.$field, $java, &mut out); )*
                out
            }
        }
    };
}

pub mod controller;
mod lite;
pub use lite::*;
mod pop;
pub use pop::*;
mod send;
pub use send::*;

header! {
    /// PULL_MESSAGE request (`PullMessageRequestHeader`).
    pub struct PullMessageRequestHeader {
        consumer_group: String = "consumerGroup",
        topic: String = "topic",
        queue_id: i32 = "queueId",
        queue_offset: i64 = "queueOffset",
        max_msg_nums: i32 = "maxMsgNums",
        sys_flag: i32 = "sysFlag",
        commit_offset: i64 = "commitOffset",
        suspend_timeout_millis: Option<i64> = "suspendTimeoutMillis",
        subscription: Option<String> = "subscription",
        sub_version: Option<i64> = "subVersion",
        expression_type: Option<String> = "expressionType",
        max_msg_bytes: Option<i32> = "maxMsgBytes",
    }
}

/// Pull request sysFlag bits (`PullSysFlag`).
pub mod pull_sys_flag {
    pub const COMMIT_OFFSET: i32 = 0x1;
    pub const SUSPEND: i32 = 0x2;
    pub const SUBSCRIPTION: i32 = 0x4;
    pub const CLASS_FILTER: i32 = 0x8;
    pub const LITE_PULL: i32 = 0x10;
}

header! {
    /// Response to a pull (`PullMessageResponseHeader`).
    pub struct PullMessageResponseHeader {
        suggest_which_broker_id: i64 = "suggestWhichBrokerId",
        next_begin_offset: i64 = "nextBeginOffset",
        min_offset: i64 = "minOffset",
        max_offset: i64 = "maxOffset",
    }
}

header! {
    /// QUERY_CONSUMER_OFFSET request.
    pub struct QueryConsumerOffsetRequestHeader {
        consumer_group: String = "consumerGroup",
        topic: String = "topic",
        queue_id: i32 = "queueId",
        set_zero_if_not_found: Option<String> = "setZeroIfNotFound",
    }
}

header! {
    /// UPDATE_CONSUMER_OFFSET request.
    pub struct UpdateConsumerOffsetRequestHeader {
        consumer_group: String = "consumerGroup",
        topic: String = "topic",
        queue_id: i32 = "queueId",
        commit_offset: i64 = "commitOffset",
    }
}

header! {
    /// GET_MAX_OFFSET / GET_MIN_OFFSET / GET_EARLIEST_MSG_STORETIME request.
    pub struct QueueRequestHeader {
        topic: String = "topic",
        queue_id: i32 = "queueId",
    }
}

header! {
    /// Responses that carry one offset (`GetMaxOffsetResponseHeader`,
    /// `GetMinOffsetResponseHeader`, `QueryConsumerOffsetResponseHeader`,
    /// `SearchOffsetResponseHeader`).
    pub struct OffsetResponseHeader {
        offset: i64 = "offset",
    }
}

header! {
    /// SEARCH_OFFSET_BY_TIMESTAMP request.
    pub struct SearchOffsetRequestHeader {
        topic: String = "topic",
        queue_id: i32 = "queueId",
        timestamp: i64 = "timestamp",
    }
}

header! {
    /// INVOKE_BROKER_TO_RESET_OFFSET request and the
    /// RESET_CONSUMER_CLIENT_OFFSET push (`ResetOffsetRequestHeader`).
    /// `timestamp` -1 means each queue's max offset; without `isForce`
    /// offsets only move back.
    pub struct ResetOffsetRequestHeader {
        topic: String = "topic",
        group: String = "group",
        timestamp: i64 = "timestamp",
        is_force: bool = "isForce",
    }
}

header! {
    /// GET_CONSUMER_LIST_BY_GROUP request.
    pub struct ConsumerGroupRequestHeader {
        consumer_group: String = "consumerGroup",
    }
}

header! {
    /// UNREGISTER_CLIENT request.
    pub struct UnregisterClientRequestHeader {
        client_id: String = "clientID",
        producer_group: Option<String> = "producerGroup",
        consumer_group: Option<String> = "consumerGroup",
    }
}

header! {
    /// UPDATE_AND_CREATE_TOPIC request (`CreateTopicRequestHeader`).
    pub struct CreateTopicRequestHeader {
        topic: String = "topic",
        default_topic: Option<String> = "defaultTopic",
        read_queue_nums: i32 = "readQueueNums",
        write_queue_nums: i32 = "writeQueueNums",
        perm: i32 = "perm",
        topic_filter_type: Option<String> = "topicFilterType",
        topic_sys_flag: Option<i32> = "topicSysFlag",
        order: bool = "order",
        attributes: Option<String> = "attributes",
    }
}

header! {
    /// Requests naming one topic: GET_ROUTEINFO_BY_TOPIC, GET_TOPIC_CONFIG,
    /// DELETE_TOPIC_IN_BROKER, DELETE_TOPIC_IN_NAMESRV, GET_TOPIC_STATS_INFO.
    pub struct TopicRequestHeader {
        topic: String = "topic",
        cluster_name: Option<String> = "clusterName",
    }
}

header! {
    /// REGISTER_BROKER request (`RegisterBrokerRequestHeader`).
    pub struct RegisterBrokerRequestHeader {
        broker_name: String = "brokerName",
        broker_addr: String = "brokerAddr",
        cluster_name: String = "clusterName",
        ha_server_addr: Option<String> = "haServerAddr",
        broker_id: i64 = "brokerId",
        heartbeat_timeout_millis: Option<i64> = "heartbeatTimeoutMillis",
        /// Absent from brokers older than 5.0 (RocketMQ's "old version
        /// broker", never a prime slave).
        enable_acting_master: Option<bool> = "enableActingMaster",
        compressed: bool = "compressed",
        body_crc32: Option<i32> = "bodyCrc32",
    }
}

header! {
    /// REGISTER_BROKER response (`RegisterBrokerResponseHeader`).
    pub struct RegisterBrokerResponseHeader {
        ha_server_addr: Option<String> = "haServerAddr",
        master_addr: Option<String> = "masterAddr",
    }
}

header! {
    /// UNREGISTER_BROKER request, and QUERY_DATA_VERSION / BROKER_HEARTBEAT
    /// (which carry the same broker identity).
    pub struct BrokerIdentityHeader {
        broker_name: String = "brokerName",
        broker_addr: String = "brokerAddr",
        cluster_name: String = "clusterName",
        broker_id: Option<i64> = "brokerId",
    }
}

header! {
    /// GET_BROKER_MEMBER_GROUP request (`GetBrokerMemberGroupRequestHeader`).
    pub struct BrokerMemberGroupRequestHeader {
        cluster_name: String = "clusterName",
        broker_name: String = "brokerName",
    }
}

header! {
    /// NOTIFY_MIN_BROKER_ID_CHANGE, name server to broker, one-way
    /// (`NotifyMinBrokerIdChangeRequestHeader`; every field nullable).
    pub struct NotifyMinBrokerIdChangeRequestHeader {
        min_broker_id: Option<i64> = "minBrokerId",
        broker_name: Option<String> = "brokerName",
        min_broker_addr: Option<String> = "minBrokerAddr",
        offline_broker_addr: Option<String> = "offlineBrokerAddr",
        ha_broker_addr: Option<String> = "haBrokerAddr",
    }
}

header! {
    /// PUT_KV_CONFIG / GET_KV_CONFIG / DELETE_KV_CONFIG request.
    pub struct KvConfigRequestHeader {
        namespace: String = "namespace",
        key: String = "key",
        value: Option<String> = "value",
    }
}

header! {
    /// GET_KV_CONFIG response.
    pub struct KvConfigResponseHeader {
        value: Option<String> = "value",
    }
}

header! {
    /// GET_TOPICS_BY_CLUSTER request.
    pub struct ClusterRequestHeader {
        cluster: String = "cluster",
    }
}

header! {
    /// QUERY_DATA_VERSION response.
    pub struct QueryDataVersionResponseHeader {
        changed: bool = "changed",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn send_header_v1_numbers_and_v2_short_names() {
        // What the C++ client sends: numbers normalised to strings by the
        // frame decoder, booleans as "0"/"1".
        let v1: ExtFields = [
            ("producerGroup", "PG"),
            ("topic", "T"),
            ("defaultTopic", "TBW102"),
            ("defaultTopicQueueNums", "4"),
            ("queueId", "0"),
            ("sysFlag", "0"),
            ("bornTimestamp", "1700000000000"),
            ("flag", "0"),
            ("properties", "TAGS\u{1}a\u{2}"),
            ("batch", "0"),
            ("unitMode", "0"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let header = SendMessageRequestHeader::from_ext(&v1).unwrap();
        assert_eq!(header.topic, "T");
        assert_eq!(header.queue_id, Some(0));
        assert_eq!(header.default_topic_queue_nums, Some(4));
        assert!(!header.batch);
        let v2: ExtFields = [("a", "PG"), ("b", "T"), ("e", "3"), ("m", "true")]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let header = SendMessageRequestHeader::from_ext(&v2).unwrap();
        assert_eq!(header.producer_group, "PG");
        assert_eq!(header.queue_id, Some(3));
        assert!(header.batch);
        assert_eq!(
            SendMessageRequestHeader::from_ext(&header.to_ext()).unwrap(),
            header
        );
    }

    #[test]
    fn the_java_name_wins_over_the_short_name_in_either_order() {
        for pairs in [
            [("topic", "Long"), ("b", "Short")],
            [("b", "Short"), ("topic", "Long")],
        ] {
            let mut fields: ExtFields = pairs
                .into_iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            fields.insert("a", "PG");
            let header = SendMessageRequestHeader::from_ext(&fields).unwrap();
            assert_eq!(header.topic, "Long", "{pairs:?}");
            assert_eq!(header.producer_group, "PG");
        }
        let mut bad = ExtFields::new();
        bad.insert("a", "PG");
        bad.insert("b", "T");
        bad.insert("e", "x");
        assert_eq!(
            SendMessageRequestHeader::from_ext(&bad),
            Err(ProtocolError::InvalidField {
                field: "e",
                value: "x".into()
            })
        );
    }

    #[test]
    fn missing_and_invalid_fields_are_typed_errors() {
        let empty = ExtFields::new();
        assert_eq!(
            PullMessageRequestHeader::from_ext(&empty),
            Err(ProtocolError::MissingField("consumerGroup"))
        );
        let mut bad = ExtFields::new();
        bad.insert("topic", "T");
        bad.insert("queueId", "zero");
        assert!(matches!(
            QueueRequestHeader::from_ext(&bad),
            Err(ProtocolError::InvalidField {
                field: "queueId",
                ..
            })
        ));
    }
}
