//! The send headers. A broker reads a send's header in place
//! ([`SendMessageRequestView`]: its strings borrow from the request's
//! `extFields`, where the owned header copied the topic, the group and the
//! properties text into strings of their own on every send); clients build
//! the owned [`SendMessageRequestHeader`]. Both read and write the same
//! names: the owned one goes through the view.

use crate::{ExtFields, ProtocolError};

use super::HeaderField;

header! {
    /// SEND_MESSAGE / SEND_MESSAGE_V2 / SEND_BATCH_MESSAGE request
    /// (`SendMessageRequestHeader`, V2's short names a..n accepted too),
    /// borrowed from the request's `extFields`.
    pub struct SendMessageRequestView<'a> {
        producer_group: &'a str = "producerGroup" | "a",
        topic: &'a str = "topic" | "b",
        default_topic: Option<&'a str> = "defaultTopic" | "c",
        default_topic_queue_nums: Option<i32> = "defaultTopicQueueNums" | "d",
        queue_id: Option<i32> = "queueId" | "e",
        sys_flag: Option<i32> = "sysFlag" | "f",
        born_timestamp: Option<i64> = "bornTimestamp" | "g",
        flag: Option<i32> = "flag" | "h",
        properties: Option<&'a str> = "properties" | "i",
        reconsume_times: Option<i32> = "reconsumeTimes" | "j",
        unit_mode: bool = "unitMode" | "k",
        max_reconsume_times: Option<i32> = "maxReconsumeTimes" | "l",
        batch: bool = "batch" | "m",
        broker_name: Option<&'a str> = "brokerName" | "n",
    }
}

/// SEND_MESSAGE / SEND_MESSAGE_V2 / SEND_BATCH_MESSAGE request
/// (`SendMessageRequestHeader`), owned: what a client builds.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SendMessageRequestHeader {
    pub producer_group: String,
    pub topic: String,
    pub default_topic: Option<String>,
    pub default_topic_queue_nums: Option<i32>,
    pub queue_id: Option<i32>,
    pub sys_flag: Option<i32>,
    pub born_timestamp: Option<i64>,
    pub flag: Option<i32>,
    pub properties: Option<String>,
    pub reconsume_times: Option<i32>,
    pub unit_mode: bool,
    pub max_reconsume_times: Option<i32>,
    pub batch: bool,
    pub broker_name: Option<String>,
}

impl SendMessageRequestHeader {
    /// Reads the header from a command's `extFields` (as the view does).
    pub fn from_ext(fields: &ExtFields) -> Result<Self, ProtocolError> {
        SendMessageRequestView::from_ext(fields).map(Self::from)
    }

    /// Writes the header with its Java (long) field names.
    pub fn to_ext(&self) -> ExtFields {
        self.view().to_ext()
    }

    /// The header as a view of its own strings.
    pub fn view(&self) -> SendMessageRequestView<'_> {
        SendMessageRequestView {
            producer_group: &self.producer_group,
            topic: &self.topic,
            default_topic: self.default_topic.as_deref(),
            default_topic_queue_nums: self.default_topic_queue_nums,
            queue_id: self.queue_id,
            sys_flag: self.sys_flag,
            born_timestamp: self.born_timestamp,
            flag: self.flag,
            properties: self.properties.as_deref(),
            reconsume_times: self.reconsume_times,
            unit_mode: self.unit_mode,
            max_reconsume_times: self.max_reconsume_times,
            batch: self.batch,
            broker_name: self.broker_name.as_deref(),
        }
    }
}

impl From<SendMessageRequestView<'_>> for SendMessageRequestHeader {
    fn from(view: SendMessageRequestView<'_>) -> Self {
        let owned = |text: Option<&str>| text.map(str::to_string);
        Self {
            producer_group: view.producer_group.to_string(),
            topic: view.topic.to_string(),
            default_topic: owned(view.default_topic),
            default_topic_queue_nums: view.default_topic_queue_nums,
            queue_id: view.queue_id,
            sys_flag: view.sys_flag,
            born_timestamp: view.born_timestamp,
            flag: view.flag,
            properties: owned(view.properties),
            reconsume_times: view.reconsume_times,
            unit_mode: view.unit_mode,
            max_reconsume_times: view.max_reconsume_times,
            batch: view.batch,
            broker_name: owned(view.broker_name),
        }
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
        /// A timer message's recall handle (RocketMQ 5.3, `recallHandle`).
        recall_handle: Option<String> = "recallHandle",
    }
}

header! {
    /// RECALL_MESSAGE request (`RecallMessageRequestHeader`, RocketMQ 5.3);
    /// `brokerName` is the RPC header's, set by clients to the handle's.
    pub struct RecallMessageRequestHeader {
        producer_group: Option<String> = "producerGroup",
        topic: String = "topic",
        recall_handle: String = "recallHandle",
        broker_name: Option<String> = "brokerName",
    }
}

header! {
    /// Response to RECALL_MESSAGE (`RecallMessageResponseHeader`): the
    /// recalled message's unique key.
    pub struct RecallMessageResponseHeader {
        msg_id: String = "msgId",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ext(pairs: &[(&str, &str)]) -> ExtFields {
        let mut fields = ExtFields::new();
        for (key, value) in pairs {
            fields.insert(key, value);
        }
        fields
    }

    #[test]
    fn the_view_borrows_its_strings_from_the_fields() {
        let fields = ext(&[
            ("a", "PG"),
            ("b", "T"),
            ("i", "TAGS\u{1}a\u{2}"),
            ("n", "broker-a"),
        ]);
        let view = SendMessageRequestView::from_ext(&fields).unwrap();
        assert_eq!(view.topic, "T");
        assert_eq!(view.topic.as_ptr(), fields.get("b").unwrap().as_ptr());
        let properties = view.properties.unwrap();
        assert_eq!(properties.as_ptr(), fields.get("i").unwrap().as_ptr());
        assert_eq!(view.broker_name, Some("broker-a"));
    }

    #[test]
    fn owned_and_view_read_and_write_alike() {
        let fields = ext(&[
            ("producerGroup", "PG"),
            ("topic", "T"),
            ("queueId", "2"),
            ("bornTimestamp", "1700000000000"),
            ("batch", "true"),
            ("unitMode", "false"),
            ("defaultTopic", "TBW102"),
        ]);
        let view = SendMessageRequestView::from_ext(&fields).unwrap();
        let owned = SendMessageRequestHeader::from_ext(&fields).unwrap();
        assert_eq!(owned.view(), view);
        assert_eq!(SendMessageRequestHeader::from(view.clone()), owned);
        assert_eq!(owned.to_ext(), view.to_ext());
        assert_eq!(view.to_ext(), fields);
        let only_group = ext(&[("producerGroup", "PG")]);
        assert_eq!(
            SendMessageRequestView::from_ext(&only_group),
            Err(ProtocolError::MissingField("topic"))
        );
    }
}
