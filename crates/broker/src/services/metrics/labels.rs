//! How RocketMQ labels what it counts: a sent message's `message_type`
//! (`BrokerMetricsManager.getMessageType`), whether a topic or group is a
//! system one, and the code names of `rocketmq_rpc_latency`.

use ferrocket_protocol::body::ConsumeType;
use ferrocket_protocol::properties::{self, Properties};

use crate::services::topics::is_system_topic;

/// Java's `MessageConst.PROPERTY_STARTDE_LIVER_TIME` (a v5 client's
/// delivery time).
const START_DELIVER_TIME: &str = "__STARTDELIVERTIME";
/// `MixAll.CID_SYS_RMQ_SYS_PREFIX`: system consumer groups.
const SYSTEM_GROUP_PREFIX: &str = "CID_RMQ_SYS_";

/// `TopicMessageType` as metrics name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MessageType {
    Normal = 0,
    Fifo = 1,
    Delay = 2,
    Transaction = 3,
}

impl MessageType {
    pub const ALL: [MessageType; 4] = [Self::Normal, Self::Fifo, Self::Delay, Self::Transaction];

    /// The properties [`MessageType::of_values`] reads, in its order.
    pub const PROPERTIES: [&'static str; 7] = [
        properties::TRAN_MSG,
        properties::SHARDING_KEY,
        START_DELIVER_TIME,
        properties::DELAY,
        properties::TIMER_DELIVER_MS,
        properties::TIMER_DELAY_SEC,
        properties::TIMER_DELAY_MS,
    ];

    pub fn of(props: &Properties) -> Self {
        Self::of_values(Self::PROPERTIES.map(|name| props.get(name)))
    }

    /// From the values of [`MessageType::PROPERTIES`], in Java's order: a
    /// half message, then a sharding key, then any delay or timer property.
    pub fn of_values(values: [Option<&str>; 7]) -> Self {
        let [tran_msg, sharding_key, delayed @ ..] = values;
        if tran_msg == Some("true") {
            return Self::Transaction;
        }
        if sharding_key.is_some() {
            return Self::Fifo;
        }
        if delayed.iter().any(Option::is_some) {
            return Self::Delay;
        }
        Self::Normal
    }

    pub fn label(self) -> &'static str {
        match self {
            Self::Normal => "normal",
            Self::Fifo => "fifo",
            Self::Delay => "delay",
            Self::Transaction => "transaction",
        }
    }
}

/// `consume_mode`: `ConsumeType.typeCN`, lower-cased.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ConsumeMode {
    Pull,
    Push,
    Pop,
}

impl ConsumeMode {
    pub fn of(consume_type: ConsumeType) -> Self {
        match consume_type {
            ConsumeType::Pull => Self::Pull,
            ConsumeType::Pop => Self::Pop,
            ConsumeType::Push => Self::Push,
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Self::Pull => "pull",
            Self::Push => "push",
            Self::Pop => "pop",
        }
    }
}

/// `is_system` of a topic (`TopicValidator.isSystemTopic`).
pub(crate) fn system_topic(topic: &str) -> &'static str {
    bool_label(is_system_topic(topic))
}

/// `is_system` of a group (`BrokerMetricsManager.isSystemGroup`: the
/// lower-cased name starts with `cid_rmq_sys_`).
pub(crate) fn system_group(group: &str) -> &'static str {
    let prefix = group.as_bytes().get(..SYSTEM_GROUP_PREFIX.len());
    bool_label(prefix.is_some_and(|p| p.eq_ignore_ascii_case(SYSTEM_GROUP_PREFIX.as_bytes())))
}

/// Whether `topic` is a retry or dead-letter topic: Java counts neither
/// as messages in, nor pulls of them as messages out.
pub(crate) fn retry_or_dlq(topic: &str) -> bool {
    topic.starts_with("%RETRY%") || topic.starts_with("%DLQ%")
}

pub(crate) fn bool_label(value: bool) -> &'static str {
    if value {
        "true"
    } else {
        "false"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn props(pairs: &[(&str, &str)]) -> Properties {
        let mut props = Properties::new();
        for (k, v) in pairs {
            props.insert(*k, *v);
        }
        props
    }

    #[test]
    fn message_types_follow_javas_order() {
        assert_eq!(MessageType::of(&props(&[])), MessageType::Normal);
        assert_eq!(
            MessageType::of(&props(&[("DELAY", "3")])),
            MessageType::Delay
        );
        assert_eq!(
            MessageType::of(&props(&[("__STARTDELIVERTIME", "1")])),
            MessageType::Delay
        );
        assert_eq!(
            MessageType::of(&props(&[("__SHARDINGKEY", "k"), ("DELAY", "3")])),
            MessageType::Fifo
        );
        assert_eq!(
            MessageType::of(&props(&[("TRAN_MSG", "true"), ("__SHARDINGKEY", "k")])),
            MessageType::Transaction
        );
        assert_eq!(
            MessageType::of(&props(&[("TRAN_MSG", "false")])),
            MessageType::Normal
        );
    }

    #[test]
    fn system_names() {
        assert_eq!(system_topic("rmq_sys_TRACE"), "true");
        assert_eq!(system_topic("orders"), "false");
        assert_eq!(system_group("cid_rmq_sys_x"), "true");
        assert_eq!(system_group("orders"), "false");
        assert!(retry_or_dlq("%RETRY%g") && retry_or_dlq("%DLQ%g") && !retry_or_dlq("t"));
    }
}
