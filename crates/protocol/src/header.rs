//! Typed request and response headers. Every field travels as a string in
//! `extFields`; [`HeaderField`] reads each form real clients send and writes
//! what the Java client writes.

use crate::{ExtFields, ProtocolError};

/// One header field's type: how it is read from and written to `extFields`.
pub trait HeaderField: Sized {
    /// Builds the field from what was found under its names: the name that
    /// matched and its value, or `None`. `key` names the field in errors.
    fn from_found(
        found: Option<(&'static str, &str)>,
        key: &'static str,
    ) -> Result<Self, ProtocolError>;
    /// Writes the field under `key` (omitted when absent).
    fn write(&self, key: &'static str, out: &mut ExtFields);

    /// Reads the field from the first present key among `keys`.
    fn read(fields: &ExtFields, keys: &[&'static str]) -> Result<Self, ProtocolError> {
        Self::from_found(raw(fields, keys), keys[0])
    }
}

fn raw<'a>(fields: &'a ExtFields, keys: &[&'static str]) -> Option<(&'static str, &'a str)> {
    keys.iter()
        .find_map(|key| fields.get(key).map(|value| (*key, value)))
}

fn parse_int(key: &'static str, value: &str) -> Result<Option<i64>, ProtocolError> {
    crate::ext::parse_i64(key, value)
}

impl HeaderField for String {
    fn from_found(
        found: Option<(&'static str, &str)>,
        key: &'static str,
    ) -> Result<Self, ProtocolError> {
        found
            .map(|(_, v)| v.to_string())
            .ok_or(ProtocolError::MissingField(key))
    }
    fn write(&self, key: &'static str, out: &mut ExtFields) {
        out.insert(key, self);
    }
}

impl HeaderField for Option<String> {
    fn from_found(
        found: Option<(&'static str, &str)>,
        _key: &'static str,
    ) -> Result<Self, ProtocolError> {
        Ok(found.map(|(_, v)| v.to_string()))
    }
    fn write(&self, key: &'static str, out: &mut ExtFields) {
        if let Some(value) = self {
            out.insert(key, value);
        }
    }
}

impl HeaderField for Option<i64> {
    fn from_found(
        found: Option<(&'static str, &str)>,
        _key: &'static str,
    ) -> Result<Self, ProtocolError> {
        match found {
            None => Ok(None),
            Some((name, value)) => parse_int(name, value),
        }
    }
    fn write(&self, key: &'static str, out: &mut ExtFields) {
        if let Some(value) = self {
            out.insert_int(key, *value);
        }
    }
}

impl HeaderField for i64 {
    fn from_found(
        found: Option<(&'static str, &str)>,
        key: &'static str,
    ) -> Result<Self, ProtocolError> {
        <Option<i64>>::from_found(found, key)?.ok_or(ProtocolError::MissingField(key))
    }
    fn write(&self, key: &'static str, out: &mut ExtFields) {
        out.insert_int(key, *self);
    }
}

impl HeaderField for Option<i32> {
    fn from_found(
        found: Option<(&'static str, &str)>,
        key: &'static str,
    ) -> Result<Self, ProtocolError> {
        match <Option<i64>>::from_found(found, key)? {
            None => Ok(None),
            Some(wide) => i32::try_from(wide)
                .map(Some)
                .map_err(|_| ProtocolError::InvalidField {
                    field: key,
                    value: wide.to_string(),
                }),
        }
    }
    fn write(&self, key: &'static str, out: &mut ExtFields) {
        if let Some(value) = self {
            out.insert_int(key, i64::from(*value));
        }
    }
}

impl HeaderField for i32 {
    fn from_found(
        found: Option<(&'static str, &str)>,
        key: &'static str,
    ) -> Result<Self, ProtocolError> {
        <Option<i32>>::from_found(found, key)?.ok_or(ProtocolError::MissingField(key))
    }
    fn write(&self, key: &'static str, out: &mut ExtFields) {
        out.insert_int(key, i64::from(*self));
    }
}

impl HeaderField for bool {
    fn from_found(
        found: Option<(&'static str, &str)>,
        _key: &'static str,
    ) -> Result<Self, ProtocolError> {
        Ok(found.is_some_and(|(_, v)| v.trim().eq_ignore_ascii_case("true")))
    }
    fn write(&self, key: &'static str, out: &mut ExtFields) {
        out.insert(key, if *self { "true" } else { "false" });
    }
}

/// Declares a header struct with its Java field names (and alternative
/// names, such as V2's short ones, after `|`).
macro_rules! header {
    ($(#[$meta:meta])* pub struct $name:ident {
        $( $(#[$fmeta:meta])* $field:ident : $ty:ty = $java:literal $(| $alt:literal)* ),* $(,)?
    }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, Eq, Default)]
        pub struct $name {
            $( $(#[$fmeta])* pub $field: $ty, )*
        }

        impl $name {
            /// Reads the header from a command's `extFields` in one pass:
            /// each key is matched against every field's names at once (a
            /// `match` on the literals), where looking each field up by
            /// scanning cost a scan per name. The Java name wins over an
            /// alternative one when both are present.
            pub fn from_ext(fields: &ExtFields) -> Result<Self, ProtocolError> {
                #[derive(Default)]
                struct Found<'a> {
                    $( $field: Option<(&'static str, &'a str)>, )*
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
                    $( $field: <$ty as HeaderField>::from_found(found.$field, $java)?, )*
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
mod pop;
pub use pop::*;

header! {
    /// SEND_MESSAGE / SEND_MESSAGE_V2 / SEND_BATCH_MESSAGE request
    /// (`SendMessageRequestHeader`, V2's short names a..n accepted too).
    pub struct SendMessageRequestHeader {
        producer_group: String = "producerGroup" | "a",
        topic: String = "topic" | "b",
        default_topic: Option<String> = "defaultTopic" | "c",
        default_topic_queue_nums: Option<i32> = "defaultTopicQueueNums" | "d",
        queue_id: Option<i32> = "queueId" | "e",
        sys_flag: Option<i32> = "sysFlag" | "f",
        born_timestamp: Option<i64> = "bornTimestamp" | "g",
        flag: Option<i32> = "flag" | "h",
        properties: Option<String> = "properties" | "i",
        reconsume_times: Option<i32> = "reconsumeTimes" | "j",
        unit_mode: bool = "unitMode" | "k",
        max_reconsume_times: Option<i32> = "maxReconsumeTimes" | "l",
        batch: bool = "batch" | "m",
        broker_name: Option<String> = "brokerName" | "n",
    }
}

header! {
    /// Response to a send (`SendMessageResponseHeader`).
    pub struct SendMessageResponseHeader {
        msg_id: String = "msgId",
        queue_id: i32 = "queueId",
        queue_offset: i64 = "queueOffset",
        transaction_id: Option<String> = "transactionId",
        batch_uniq_id: Option<String> = "batchUniqId",
    }
}

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
        enable_acting_master: bool = "enableActingMaster",
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
