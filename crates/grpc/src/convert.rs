//! Between v5 messages and Remoting: a `SendMessageRequest` message becomes
//! a SEND_MESSAGE with RocketMQ's properties (as the proxy's
//! `SendMessageActivity` builds them), and a stored record becomes a v5
//! `Message` with its system properties (as `GrpcConverter` fills them).

use std::io::Read;
use std::net::SocketAddr;

use bytes::Bytes;
use ferrocket_protocol::codes::request_code;
use ferrocket_protocol::header::SendMessageRequestHeader;
use ferrocket_protocol::properties::{self as prop, Properties};
use ferrocket_protocol::record::{sys_flag, RecordView};
use ferrocket_protocol::RemotingCommand;

use crate::body::BodyError;
use crate::limits::{BODY_BYTES_MAX, DELAY_MS_MAX, MESSAGE_GROUP_BYTES_MAX};
use crate::pb::{self, Code, Digest, DigestType, Encoding, MessageType, Status};
use crate::status::status;

/// Properties a v5 message may not set as user properties: they are the
/// broker's own (Java `MessageConst.STRING_HASH_SET`, the ones that matter).
const RESERVED: &[&str] = &[
    prop::KEYS,
    prop::TAGS,
    prop::WAIT,
    prop::DELAY,
    prop::RETRY_TOPIC,
    prop::REAL_TOPIC,
    prop::REAL_QID,
    prop::TRAN_MSG,
    prop::PGROUP,
    prop::MIN_OFFSET,
    prop::MAX_OFFSET,
    prop::UNIQ_KEY,
    prop::RECONSUME_TIME,
    prop::MAX_RECONSUME_TIMES,
    prop::TRANSACTION_ID,
    prop::POP_CK,
    prop::SHARDING_KEY,
    prop::PRIORITY,
    prop::TRACE_CONTEXT,
    prop::TIMER_DELIVER_MS,
    prop::TIMER_DELAY_MS,
    prop::TIMER_DELAY_SEC,
    prop::CHECK_IMMUNITY_TIME_IN_SECONDS,
    prop::MSG_REGION,
    prop::TRACE_ON,
    prop::CLUSTER,
    prop::MSG_TYPE,
    prop::INSTANCE_ID,
    prop::BUYER_ID,
    prop::ORIGIN_MESSAGE_ID,
    prop::TRANSFER_FLAG,
    prop::CORRECTION_FLAG,
    prop::EXTEND_UNIQ_INFO,
    prop::CONSUME_START_TIME,
    prop::INNER_NUM,
    prop::INNER_BASE,
    prop::DUP_INFO,
    prop::TRAN_PREPARED_QUEUE_OFFSET,
    prop::TRANSACTION_CHECK_TIMES,
    prop::POP_CK_OFFSET,
    prop::FIRST_POP_TIME,
    prop::FORWARD_QUEUE_ID,
    prop::REDIRECT,
    prop::INNER_MULTI_DISPATCH,
    prop::INNER_MULTI_QUEUE_OFFSET,
    prop::TIMER_ENQUEUE_MS,
    prop::CORRELATION_ID,
    prop::REPLY_TO_CLIENT,
    prop::TTL,
    prop::ARRIVE_TIME,
    prop::PUSH_REPLY_TIME,
    prop::LITE_TOPIC,
];

/// Whether a property is the broker's (the timer's working properties all
/// start with `TIMER_`).
fn is_reserved(name: &str) -> bool {
    RESERVED.contains(&name) || name.starts_with("TIMER_")
}

fn bad(code: Code, message: impl Into<String>) -> Status {
    status(code, message)
}

/// The message's body as the broker stores it (GZIP bodies are inflated:
/// the broker's compressed flag means zlib, and consumers of every protocol
/// must read it).
fn plain_body(message: &pb::Message) -> Result<Bytes, Status> {
    let encoding = message
        .system_properties
        .as_ref()
        .map_or(Encoding::Identity as i32, |sys| sys.body_encoding);
    if encoding != Encoding::Gzip as i32 {
        return Ok(Bytes::copy_from_slice(&message.body));
    }
    let mut body = Vec::new();
    flate2::read::GzDecoder::new(&message.body[..])
        .take(BODY_BYTES_MAX as u64 + 1)
        .read_to_end(&mut body)
        .map_err(|e| {
            bad(
                Code::MessageCorrupted,
                format!("body is not valid GZIP: {e}"),
            )
        })?;
    Ok(Bytes::from(body))
}

/// What a send needs besides the message: where it goes.
pub struct SendTarget<'a> {
    pub queue_id: i32,
    pub broker_name: &'a str,
}

/// The SEND_MESSAGE for one v5 message, or the status that refuses it.
pub fn send_request(message: &pb::Message, target: &SendTarget) -> Result<RemotingCommand, Status> {
    let topic = message.topic.as_ref().map_or("", |t| t.name.as_str());
    if topic.is_empty() {
        return Err(bad(Code::IllegalTopic, "the message has no topic"));
    }
    let Some(sys) = message.system_properties.as_ref() else {
        return Err(bad(
            Code::BadRequest,
            "the message has no system properties",
        ));
    };
    if sys.message_id.is_empty() {
        return Err(bad(Code::IllegalMessageId, "the message has no message id"));
    }
    let body = plain_body(message)?;
    if body.len() > BODY_BYTES_MAX {
        return Err(bad(
            Code::MessageBodyTooLarge,
            format!(
                "message body of {} bytes exceeds {BODY_BYTES_MAX}",
                body.len()
            ),
        ));
    }
    let properties = send_properties(message, sys, topic)?;
    let header = SendMessageRequestHeader {
        producer_group: topic.to_string(),
        topic: topic.to_string(),
        default_topic: Some("TBW102".into()),
        default_topic_queue_nums: Some(4),
        queue_id: Some(target.queue_id),
        sys_flag: Some(if sys.message_type == MessageType::Transaction as i32 {
            sys_flag::TRANSACTION_PREPARED
        } else {
            0
        }),
        born_timestamp: Some(sys.born_timestamp.as_ref().map_or(0, timestamp_ms)),
        flag: Some(0),
        properties: Some(properties.to_encoded_string()),
        reconsume_times: Some(0),
        unit_mode: false,
        max_reconsume_times: None,
        batch: false,
        broker_name: Some(target.broker_name.to_string()),
    };
    let mut request = RemotingCommand::request(request_code::SEND_MESSAGE).with_body(body);
    request.ext_fields = header.to_ext();
    Ok(request)
}

fn send_properties(
    message: &pb::Message,
    sys: &pb::SystemProperties,
    topic: &str,
) -> Result<Properties, Status> {
    let mut properties = Properties::new();
    for (name, value) in &message.user_properties {
        if is_reserved(name) {
            return Err(bad(
                Code::IllegalMessagePropertyKey,
                format!("property {name} is reserved for the broker"),
            ));
        }
        if !prop::is_valid_text(name) || !prop::is_valid_text(value) {
            return Err(bad(
                Code::IllegalMessagePropertyKey,
                format!("property {name} holds a control character"),
            ));
        }
        properties.insert(name.as_str(), value.as_str());
    }
    properties.insert(prop::UNIQ_KEY, sys.message_id.as_str());
    if let Some(tag) = sys.tag.as_deref().filter(|t| !t.is_empty()) {
        if tag.contains('|') || !prop::is_valid_text(tag) {
            return Err(bad(Code::IllegalMessageTag, format!("illegal tag `{tag}`")));
        }
        properties.insert(prop::TAGS, tag);
    }
    if !sys.keys.is_empty() {
        properties.insert(prop::KEYS, sys.keys.join(" "));
    }
    if let Some(group) = sys.message_group.as_deref().filter(|g| !g.is_empty()) {
        if group.len() > MESSAGE_GROUP_BYTES_MAX {
            return Err(bad(
                Code::IllegalMessageGroup,
                format!("message group longer than {MESSAGE_GROUP_BYTES_MAX} bytes"),
            ));
        }
        properties.insert(prop::SHARDING_KEY, group);
    }
    if let Some(at) = sys.delivery_timestamp.as_ref() {
        let at_ms = timestamp_ms(at);
        if at_ms - now_ms() > DELAY_MS_MAX {
            return Err(bad(
                Code::IllegalDeliveryTime,
                "delivery time is more than a day ahead",
            ));
        }
        properties.insert(prop::TIMER_DELIVER_MS, at_ms.to_string());
    }
    if sys.message_type == MessageType::Transaction as i32 {
        properties.insert(prop::TRAN_MSG, "true");
        properties.insert(prop::PGROUP, topic);
        if let Some(after) = sys.orphaned_transaction_recovery_duration.as_ref() {
            properties.insert(
                prop::CHECK_IMMUNITY_TIME_IN_SECONDS,
                after.seconds.max(0).to_string(),
            );
        }
    }
    if let Some(trace) = sys.trace_context.as_deref().filter(|t| !t.is_empty()) {
        properties.insert(prop::TRACE_CONTEXT, trace);
    }
    if let Some(lite) = sys.lite_topic.as_deref() {
        ferrocket_protocol::lite::check_lite_topic(lite)
            .map_err(|why| bad(Code::IllegalLiteTopic, why))?;
        properties.insert(prop::LITE_TOPIC, lite);
    }
    // The broker stores it in its priority's queue (or drops it from a
    // message of another type), as Java's broker does.
    if let Some(priority) = sys.priority {
        if priority < 0 {
            return Err(bad(Code::BadRequest, "priority must be 0 or more"));
        }
        properties.insert(prop::PRIORITY, priority.to_string());
    }
    Ok(properties)
}

pub fn timestamp_ms(at: &prost_types::Timestamp) -> i64 {
    at.seconds
        .saturating_mul(1000)
        .saturating_add(i64::from(at.nanos / 1_000_000))
}

pub fn timestamp(ms: i64) -> prost_types::Timestamp {
    prost_types::Timestamp {
        seconds: ms.div_euclid(1000),
        nanos: (ms.rem_euclid(1000) * 1_000_000) as i32,
    }
}

pub fn duration_ms(duration: &prost_types::Duration) -> i64 {
    duration
        .seconds
        .saturating_mul(1000)
        .saturating_add(i64::from(duration.nanos / 1_000_000))
}

pub fn duration(ms: i64) -> prost_types::Duration {
    prost_types::Duration {
        seconds: ms / 1000,
        nanos: ((ms % 1000) * 1_000_000) as i32,
    }
}

pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

fn host(addr: SocketAddr) -> String {
    addr.to_string()
}

/// What the proxy adds to a popped record for the client.
pub struct Delivery {
    pub receipt_handle: String,
    pub invisible_ms: i64,
    /// The topic the client asked for (a redelivery is stored in the
    /// group's pop retry topic).
    pub topic: String,
}

/// A stored record as a v5 message, its body inflated when a Remoting
/// producer compressed it; refused when that body does not inflate within
/// the largest body the endpoint allows.
pub fn record_message(
    record: &RecordView<'_>,
    delivery: Option<Delivery>,
) -> Result<pb::Message, BodyError> {
    let body = crate::body::plain(record.sys_flag, record.body, BODY_BYTES_MAX)?;
    let mut properties = record.properties();
    let message_id = properties
        .unique_key()
        .map(str::to_string)
        .unwrap_or_else(|| {
            ferrocket_protocol::message_id::offset_msg_id(record.store_host, record.physical_offset)
        });
    let priority = properties
        .get(prop::PRIORITY)
        .and_then(|p| p.parse::<i32>().ok())
        .filter(|p| *p >= 0);
    let lite_topic = properties.get(prop::LITE_TOPIC).map(str::to_string);
    let message_type = if lite_topic.is_some() {
        MessageType::Lite
    } else if properties.get(prop::SHARDING_KEY).is_some() {
        MessageType::Fifo
    } else if properties.get(prop::TRAN_MSG).is_some() {
        MessageType::Transaction
    } else if properties.get(prop::TIMER_DELIVER_MS).is_some() || properties.delay_level().is_some()
    {
        MessageType::Delay
    } else if priority.is_some() {
        MessageType::Priority
    } else {
        MessageType::Normal
    };
    let sys = pb::SystemProperties {
        tag: properties.tags().map(str::to_string),
        keys: properties.keys().map(str::to_string).collect(),
        message_id,
        body_digest: Some(Digest {
            r#type: DigestType::Crc32 as i32,
            checksum: format!("{:08X}", crc32fast::hash(&body)),
        }),
        body_encoding: Encoding::Identity as i32,
        message_type: message_type as i32,
        born_timestamp: Some(timestamp(record.born_timestamp_ms)),
        born_host: host(record.born_host),
        store_timestamp: Some(timestamp(record.store_timestamp_ms)),
        store_host: host(record.store_host),
        delivery_timestamp: properties
            .get(prop::TIMER_DELIVER_MS)
            .and_then(|ms| ms.parse().ok())
            .map(timestamp),
        receipt_handle: delivery.as_ref().map(|d| d.receipt_handle.clone()),
        queue_id: record.queue_id,
        queue_offset: Some(record.queue_offset),
        invisible_duration: delivery.as_ref().map(|d| duration(d.invisible_ms)),
        delivery_attempt: Some(record.reconsume_times.saturating_add(1)),
        message_group: properties.get(prop::SHARDING_KEY).map(str::to_string),
        trace_context: properties.get(prop::TRACE_CONTEXT).map(str::to_string),
        priority,
        lite_topic,
        ..Default::default()
    };
    let retry_topic = properties.remove(prop::RETRY_TOPIC);
    let topic = match &delivery {
        Some(delivery) => delivery.topic.clone(),
        None => retry_topic.unwrap_or_else(|| record.topic.to_string()),
    };
    let user_properties = properties
        .iter()
        .filter(|(name, _)| !is_reserved(name))
        .map(|(name, value)| (name.to_string(), value.to_string()))
        .collect();
    Ok(pb::Message {
        topic: Some(pb::Resource {
            name: topic,
            ..Default::default()
        }),
        user_properties,
        system_properties: Some(sys),
        body: body.into_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(topic: &str) -> pb::Message {
        pb::Message {
            topic: Some(pb::Resource {
                name: topic.into(),
                ..Default::default()
            }),
            system_properties: Some(pb::SystemProperties {
                message_id: "01ABCDEF".into(),
                tag: Some("TagA".into()),
                keys: vec!["k1".into(), "k2".into()],
                message_type: MessageType::Normal as i32,
                ..Default::default()
            }),
            body: b"hello".to_vec(),
            ..Default::default()
        }
    }

    fn target() -> SendTarget<'static> {
        SendTarget {
            queue_id: 2,
            broker_name: "broker-a",
        }
    }

    #[test]
    fn a_send_carries_tag_keys_and_the_client_message_id() {
        let request = send_request(&message("T"), &target()).unwrap();
        let header = SendMessageRequestHeader::from_ext(&request.ext_fields).unwrap();
        assert_eq!(header.topic, "T");
        assert_eq!(header.queue_id, Some(2));
        let properties = Properties::decode_str(&header.properties.unwrap());
        assert_eq!(properties.tags(), Some("TagA"));
        assert_eq!(properties.unique_key(), Some("01ABCDEF"));
        assert_eq!(properties.keys().collect::<Vec<_>>(), ["k1", "k2"]);
        assert_eq!(&request.body[..], b"hello");
    }

    #[test]
    fn bad_messages_are_refused_with_their_code() {
        let mut reserved = message("T");
        reserved
            .user_properties
            .insert("UNIQ_KEY".into(), "x".into());
        let refused = send_request(&reserved, &target()).unwrap_err();
        assert_eq!(refused.code, Code::IllegalMessagePropertyKey as i32);
        let mut large = message("T");
        large.body = vec![0; BODY_BYTES_MAX + 1];
        let refused = send_request(&large, &target()).unwrap_err();
        assert_eq!(refused.code, Code::MessageBodyTooLarge as i32);
        let refused = send_request(&message(""), &target()).unwrap_err();
        assert_eq!(refused.code, Code::IllegalTopic as i32);
    }

    #[test]
    fn fifo_and_timer_messages_map_to_broker_properties() {
        let mut fifo = message("T");
        let sys = fifo.system_properties.as_mut().unwrap();
        sys.message_group = Some("order-1".into());
        sys.delivery_timestamp = Some(timestamp(now_ms() + 5_000));
        let request = send_request(&fifo, &target()).unwrap();
        let header = SendMessageRequestHeader::from_ext(&request.ext_fields).unwrap();
        let properties = Properties::decode_str(&header.properties.unwrap());
        assert_eq!(properties.get(prop::SHARDING_KEY), Some("order-1"));
        assert!(properties.get(prop::TIMER_DELIVER_MS).is_some());
    }

    #[test]
    fn priority_goes_as_its_property() {
        let mut urgent = message("T");
        urgent.system_properties.as_mut().unwrap().priority = Some(7);
        let request = send_request(&urgent, &target()).unwrap();
        let header = SendMessageRequestHeader::from_ext(&request.ext_fields).unwrap();
        let properties = Properties::decode_str(&header.properties.unwrap());
        assert_eq!(properties.get(prop::PRIORITY), Some("7"));
        urgent.system_properties.as_mut().unwrap().priority = Some(-1);
        let refused = send_request(&urgent, &target()).unwrap_err();
        assert_eq!(refused.code, Code::BadRequest as i32);
        let mut spoofed = message("T");
        spoofed
            .user_properties
            .insert(prop::PRIORITY.into(), "9".into());
        let refused = send_request(&spoofed, &target()).unwrap_err();
        assert_eq!(refused.code, Code::IllegalMessagePropertyKey as i32);
    }
}
