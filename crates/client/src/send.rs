//! What a send takes and gives back: options, batch items, queue selection,
//! results, and the send request header in its V1 (long names) and V2
//! (short names a..n) forms.

use bytes::Bytes;
use ferrocket_protocol::header::SendMessageRequestHeader;
use ferrocket_protocol::properties::{self, java_string_hash, Properties};
use ferrocket_protocol::ExtFields;

use crate::route::MessageQueue;
use crate::ClientError;

/// Which send request a producer uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SendVersion {
    /// SEND_MESSAGE (10) with long header names.
    V1,
    /// SEND_MESSAGE_V2 (310) with short header names a..n, as Java does.
    #[default]
    V2,
}

/// How the queue of a send is chosen among the topic's write queues.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum QueueSelector {
    /// The next queue of a per-producer rotation.
    #[default]
    RoundRobin,
    /// The first queue (in broker name order) with this queue id.
    QueueId(i32),
    /// `queues[index % len]` (Java's `MessageQueueSelector` by index).
    Index(usize),
    /// `queues[hash % len]` (Java's `SelectMessageQueueByHash`).
    Hash(u64),
    /// Exactly this queue.
    Queue(MessageQueue),
}

impl QueueSelector {
    /// Selects by the Java hash of `key`, as `SelectMessageQueueByHash`
    /// does with a string argument, so orders agree with Java producers.
    pub fn by_key(key: &str) -> Self {
        QueueSelector::Hash(u64::from(java_string_hash(key).unsigned_abs()))
    }

    /// True when the caller chose the queue (no retry on another queue).
    pub fn is_explicit(&self) -> bool {
        !matches!(self, QueueSelector::RoundRobin)
    }

    /// Picks from `queues` (non-empty); `rotation` feeds round-robin.
    pub fn select(
        &self,
        queues: &[MessageQueue],
        rotation: usize,
    ) -> Result<MessageQueue, ClientError> {
        let Some(first) = queues.first() else {
            return Err(ClientError::InvalidArgument(
                "no write queue to select from".into(),
            ));
        };
        let len = queues.len();
        let picked = match self {
            QueueSelector::RoundRobin => &queues[rotation % len],
            QueueSelector::Index(index) => &queues[index % len],
            QueueSelector::Hash(hash) => &queues[(hash % len as u64) as usize],
            QueueSelector::QueueId(id) => {
                queues.iter().find(|q| q.queue_id == *id).ok_or_else(|| {
                    ClientError::InvalidArgument(format!(
                        "topic `{}` has no write queue {id} ({len} queues)",
                        first.topic
                    ))
                })?
            }
            QueueSelector::Queue(queue) => return Ok(queue.clone()),
        };
        Ok(picked.clone())
    }
}

/// Options of one send. `Default` is a plain message, round-robin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SendOptions {
    /// TAGS property.
    pub tags: Option<String>,
    /// KEYS property (joined with spaces).
    pub keys: Vec<String>,
    /// Further user properties (names must not be the system ones above).
    pub properties: Vec<(String, String)>,
    /// Message flag (opaque to the broker).
    pub flag: i32,
    /// DELAY property: delay level 1..=18 (1s ... 2h).
    pub delay_level: Option<i32>,
    /// WAIT property: whether the broker answers after storing (true).
    pub wait_store_msg_ok: bool,
    /// Shortcut for `QueueSelector::QueueId`; wins over `selector`.
    pub queue_id: Option<i32>,
    pub selector: QueueSelector,
}

impl Default for SendOptions {
    fn default() -> Self {
        Self {
            tags: None,
            keys: Vec::new(),
            properties: Vec::new(),
            flag: 0,
            delay_level: None,
            wait_store_msg_ok: true,
            queue_id: None,
            selector: QueueSelector::RoundRobin,
        }
    }
}

impl SendOptions {
    pub fn with_tags(mut self, tags: impl Into<String>) -> Self {
        self.tags = Some(tags.into());
        self
    }

    pub fn with_keys<I: IntoIterator<Item = S>, S: Into<String>>(mut self, keys: I) -> Self {
        self.keys = keys.into_iter().map(Into::into).collect();
        self
    }

    pub fn with_property(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.properties.push((name.into(), value.into()));
        self
    }

    pub fn with_queue_id(mut self, queue_id: i32) -> Self {
        self.queue_id = Some(queue_id);
        self
    }

    pub fn with_selector(mut self, selector: QueueSelector) -> Self {
        self.selector = selector;
        self
    }

    /// The selector in effect (`queue_id` wins).
    pub fn effective_selector(&self) -> QueueSelector {
        match self.queue_id {
            Some(id) => QueueSelector::QueueId(id),
            None => self.selector.clone(),
        }
    }
}

/// Highest delay level (2 h).
pub const DELAY_LEVEL_MAX: i32 = 18;

/// Builds a message's properties: user ones, then KEYS, TAGS, WAIT, DELAY
/// and UNIQ_KEY, checking that none holds the separator characters.
pub(crate) fn message_properties(
    tags: Option<&str>,
    keys: &[String],
    user: &[(String, String)],
    delay_level: Option<i32>,
    wait_store_msg_ok: bool,
    unique_key: &str,
) -> Result<Properties, ClientError> {
    let mut props = Properties::new();
    for (name, value) in user {
        props.insert(name.clone(), value.clone());
    }
    if !keys.is_empty() {
        props.insert(properties::KEYS, keys.join(" "));
    }
    if let Some(tags) = tags.filter(|t| !t.is_empty()) {
        props.insert(properties::TAGS, tags);
    }
    props.insert(
        properties::WAIT,
        if wait_store_msg_ok { "true" } else { "false" },
    );
    if let Some(level) = delay_level {
        if !(1..=DELAY_LEVEL_MAX).contains(&level) {
            return Err(ClientError::InvalidArgument(format!(
                "delay level {level} is outside 1..={DELAY_LEVEL_MAX}"
            )));
        }
        props.insert(properties::DELAY, level.to_string());
    }
    props.insert(properties::UNIQ_KEY, unique_key);
    if let Some((name, value)) = props
        .iter()
        .find(|(n, v)| !properties::is_valid_text(n) || !properties::is_valid_text(v))
    {
        return Err(ClientError::InvalidArgument(format!(
            "property `{name}`=`{value}` contains a separator character (\\x01 or \\x02)"
        )));
    }
    Ok(props)
}

/// One message of a batch.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct BatchMessage {
    pub body: Bytes,
    pub tags: Option<String>,
    pub keys: Vec<String>,
    pub properties: Vec<(String, String)>,
    pub flag: i32,
}

impl BatchMessage {
    pub fn new(body: impl Into<Bytes>) -> Self {
        Self {
            body: body.into(),
            ..Self::default()
        }
    }
}

/// How the broker took a message (Java's `SendStatus`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SendStatus {
    SendOk,
    FlushDiskTimeout,
    FlushSlaveTimeout,
    SlaveNotAvailable,
}

/// The answer to a successful send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SendResult {
    pub status: SendStatus,
    /// Offset message id from the broker (store host + CommitLog offset);
    /// comma-separated, one per message, for a batch.
    pub msg_id: String,
    /// The UNIQ_KEY the client gave the message (Java's `SendResult.msgId`);
    /// comma-separated for a batch.
    pub unique_key: String,
    pub topic: String,
    pub broker_name: String,
    pub queue_id: i32,
    /// Queue offset of the (first) message.
    pub queue_offset: i64,
    pub transaction_id: Option<String>,
    /// Address of the broker that stored it.
    pub broker_addr: String,
    /// A timer message's recall handle (RocketMQ 5.3), for
    /// [`crate::Producer::recall`].
    pub recall_handle: Option<String>,
}

impl SendResult {
    pub fn queue(&self) -> MessageQueue {
        MessageQueue::new(&self.topic, &self.broker_name, self.queue_id)
    }
}

const V2_NAMES: [(&str, &str); 14] = [
    ("producerGroup", "a"),
    ("topic", "b"),
    ("defaultTopic", "c"),
    ("defaultTopicQueueNums", "d"),
    ("queueId", "e"),
    ("sysFlag", "f"),
    ("bornTimestamp", "g"),
    ("flag", "h"),
    ("properties", "i"),
    ("reconsumeTimes", "j"),
    ("unitMode", "k"),
    ("maxReconsumeTimes", "l"),
    ("batch", "m"),
    ("brokerName", "n"),
];

/// The header's extFields in the request's naming.
pub(crate) fn send_header_ext(
    header: &SendMessageRequestHeader,
    version: SendVersion,
) -> ExtFields {
    let long = header.to_ext();
    match version {
        SendVersion::V1 => long,
        SendVersion::V2 => long
            .iter()
            .map(|(key, value)| {
                let short = V2_NAMES
                    .iter()
                    .find(|(l, _)| *l == key)
                    .map_or(key, |(_, s)| *s);
                (short.to_string(), value.to_string())
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn queues() -> Vec<MessageQueue> {
        vec![
            MessageQueue::new("T", "a", 0),
            MessageQueue::new("T", "a", 1),
            MessageQueue::new("T", "b", 0),
        ]
    }

    #[test]
    fn selectors_pick_queues() {
        let qs = queues();
        assert_eq!(QueueSelector::RoundRobin.select(&qs, 4).unwrap(), qs[1]);
        assert_eq!(QueueSelector::Index(5).select(&qs, 0).unwrap(), qs[2]);
        assert_eq!(QueueSelector::QueueId(1).select(&qs, 0).unwrap(), qs[1]);
        assert!(QueueSelector::QueueId(7).select(&qs, 0).is_err());
        assert!(QueueSelector::RoundRobin.select(&[], 0).is_err());
        // Java: "order-1".hashCode() == -1207111310, Math.abs(..) % 3 == 2
        assert_eq!(java_string_hash("order-1"), -1207111310);
        assert_eq!(
            QueueSelector::by_key("order-1").select(&qs, 0).unwrap(),
            qs[2]
        );
        let options = SendOptions::default()
            .with_queue_id(0)
            .with_selector(QueueSelector::Index(2));
        assert_eq!(options.effective_selector(), QueueSelector::QueueId(0));
    }

    #[test]
    fn properties_carry_system_keys() {
        let props = message_properties(
            Some("TagA"),
            &["k1".to_string(), "k2".to_string()],
            &[("color".to_string(), "red".to_string())],
            Some(3),
            true,
            "UNIQ",
        )
        .unwrap();
        assert_eq!(props.get("KEYS"), Some("k1 k2"));
        assert_eq!(props.get("TAGS"), Some("TagA"));
        assert_eq!(props.get("WAIT"), Some("true"));
        assert_eq!(props.get("DELAY"), Some("3"));
        assert_eq!(props.get("UNIQ_KEY"), Some("UNIQ"));
        assert_eq!(props.get("color"), Some("red"));
        assert!(message_properties(None, &[], &[], Some(19), true, "U").is_err());
        let bad = [("a".to_string(), "x\u{1}y".to_string())];
        assert!(message_properties(None, &[], &bad, None, true, "U").is_err());
    }

    #[test]
    fn v2_header_uses_short_names() {
        let header = SendMessageRequestHeader {
            producer_group: "PG".into(),
            topic: "T".into(),
            queue_id: Some(2),
            batch: true,
            ..Default::default()
        };
        let ext = send_header_ext(&header, SendVersion::V2);
        assert_eq!(ext.get("a"), Some("PG"));
        assert_eq!(ext.get("b"), Some("T"));
        assert_eq!(ext.get("e"), Some("2"));
        assert_eq!(ext.get("m"), Some("true"));
        assert_eq!(ext.get("topic"), None);
        assert_eq!(SendMessageRequestHeader::from_ext(&ext).unwrap(), header);
        let v1 = send_header_ext(&header, SendVersion::V1);
        assert_eq!(v1.get("producerGroup"), Some("PG"));
    }
}
