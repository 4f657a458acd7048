//! Delay levels (Java's `ScheduleMessageService`). A message sent with
//! property `DELAY` = level (1..=max) is stored in `SCHEDULE_TOPIC_XXXX`,
//! queue `level - 1`, with its destination in `REAL_TOPIC` / `REAL_QID`
//! ([`redirect_delayed`]). Each level's queue holds messages of one delay,
//! so they fall due in queue order: the level's owner shard walks its queue
//! and, for every message whose store time + the level's delay has passed,
//! stores a copy in the real topic ([`deliver_to_real_topic`]). Retries of
//! failed consumption (CONSUMER_SEND_MSG_BACK) take the same path.
//!
//! Due times come from the record's store timestamp, never from the
//! ConsumeQueue's tag code. Java keeps the deliver time there and reads it
//! when it delivers, so SCHEDULE_TOPIC_XXXX entries carry it here too
//! ([`schedule_tags_code`], and the store's recovery with
//! `schedule_delays_ms`): a Java broker started on this store delivers them
//! on time, not at once.
//!
//! Progress (next queue offset per level) lives on the level's owner shard;
//! shard 0 gathers it into `config/delayOffset.json` every
//! `flushConsumerOffsetInterval` and at shutdown, and GET_ALL_DELAY_OFFSET
//! (45) answers it. After a crash, messages delivered since the last write
//! are delivered again (at least once, as in Java).

use bytes::BytesMut;
use ferrocket_protocol::limits::validate_topic;
use ferrocket_protocol::properties::{self, Properties};
use ferrocket_protocol::record::{sys_flag, RecordView};

use crate::services::delay_levels::DelayLevels;

use crate::error::Reject;
use crate::services::append::{copy_of, encode, tag_hash};
use crate::services::topics::HALF_TOPIC;
use crate::services::topics::{self};

use crate::services::topics::SCHEDULE_TOPIC;

/// Where a delayed message is stored instead of its own topic and queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct DelayRedirect {
    pub topic: &'static str,
    pub queue_id: i32,
}

/// Java `HookUtils.handleScheduleMessage` (delay-level part): a message with
/// `DELAY` > 0 that is not a half or rolled-back transactional message is
/// redirected to `SCHEDULE_TOPIC_XXXX`, queue `level - 1`. Sets REAL_TOPIC
/// and REAL_QID to `topic` / `queue_id`, and caps a level above the
/// highest at the highest (rewriting DELAY), as Java does.
pub(crate) fn redirect_delayed(
    levels: &DelayLevels,
    props: &mut Properties,
    topic: &str,
    queue_id: i32,
    message_sys_flag: i32,
) -> Option<DelayRedirect> {
    let transaction = sys_flag::transaction_type(message_sys_flag);
    if transaction != sys_flag::TRANSACTION_NOT_TYPE && transaction != sys_flag::TRANSACTION_COMMIT
    {
        return None;
    }
    let asked = props.delay_level().filter(|level| *level > 0)?;
    let level = asked.min(levels.max_level());
    if level != asked {
        props.insert(properties::DELAY, level.to_string());
    }
    props.insert(properties::REAL_TOPIC, topic);
    props.insert(properties::REAL_QID, queue_id.to_string());
    Some(DelayRedirect {
        topic: SCHEDULE_TOPIC,
        queue_id: level - 1,
    })
}

/// The ConsumeQueue tag code of an entry the send stores at `topic` /
/// `queue_id` at `store_timestamp_ms`: for SCHEDULE_TOPIC_XXXX, the deliver
/// time (store time + the level's delay), which a Java broker on this store
/// reads as when to deliver it (`ScheduleMessageService`'s
/// `computeDeliverTimestamp`); `None` for any other topic.
pub(crate) fn schedule_tags_code(
    levels: &DelayLevels,
    topic: &str,
    queue_id: i32,
    store_timestamp_ms: i64,
) -> Option<i64> {
    if topic != SCHEDULE_TOPIC {
        return None;
    }
    let delay = levels.delay_ms(queue_id.checked_add(1)?)?;
    Some(store_timestamp_ms.saturating_add(delay))
}

/// Why a scheduled message was not delivered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum DeliverError {
    /// The message cannot be delivered, ever (skip it).
    Invalid(String),
    /// The store refused it now (try again later).
    Store(Reject),
}

/// A stored message re-addressed to its real topic: what
/// [`deliver_to_real_topic`] appends.
#[derive(Debug)]
pub(crate) struct RealTopicCopy {
    pub topic: String,
    pub queue_id: i32,
    pub record: BytesMut,
    pub tags_code: i64,
}

/// Which service parked a message under REAL_TOPIC / REAL_QID.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Parked {
    /// A delay level (or a retry): Java `ScheduleMessageService`.
    DelayLevel,
    /// A timer message: Java `TimerMessageStore`.
    Timer,
}

/// The copy of a due message for its real topic (Java
/// `ScheduleMessageService.messageTimeUp`, `TimerMessageStore.convertMessage`).
/// Topic and queue come from REAL_TOPIC / REAL_QID (both kept, as Java's
/// scheduler keeps them). A delay level's copy drops DELAY,
/// TIMER_DELIVER_MS and TIMER_DELAY_SEC; a timer's keeps them, as Java's
/// timer does, so a v5 client still reads the delivery time (the proxy's
/// `delivery_timestamp` comes from TIMER_DELIVER_MS; TIMER_OUT_MS keeps the
/// copy from being parked again). Every other property stays, UNIQ_KEY
/// included, so clients see the message id the producer got. Body, flag,
/// sysFlag, born time and host, store host and reconsume count are the
/// stored message's; the store time is `now_ms`.
pub(crate) fn real_topic_copy(
    source: &RecordView<'_>,
    now_ms: i64,
    parked: Parked,
) -> Result<RealTopicCopy, DeliverError> {
    let mut props = source.properties();
    let topic = props
        .get(properties::REAL_TOPIC)
        .filter(|t| !t.is_empty())
        .ok_or_else(|| DeliverError::Invalid("no REAL_TOPIC property".into()))?
        .to_string();
    if topic == HALF_TOPIC {
        return Err(DeliverError::Invalid(format!(
            "the real topic {topic} is a half-message topic"
        )));
    }
    let queue_id: i32 = props
        .get(properties::REAL_QID)
        .and_then(|q| q.trim().parse().ok())
        .filter(|q| *q >= 0)
        .ok_or_else(|| DeliverError::Invalid("REAL_QID missing or not a queue id".into()))?;
    if parked == Parked::DelayLevel {
        for name in [
            properties::DELAY,
            properties::TIMER_DELIVER_MS,
            properties::TIMER_DELAY_SEC,
        ] {
            props.remove(name);
        }
    }
    let props_bytes = props.to_bytes();
    let record = copy_of(
        source,
        &topic,
        queue_id,
        &props_bytes,
        (now_ms, source.store_host),
    );
    let encoded = encode(&record).map_err(|reject| DeliverError::Invalid(reject.remark))?;
    let tags_code = tag_hash(&props);
    Ok(RealTopicCopy {
        topic,
        queue_id,
        record: encoded,
        tags_code,
    })
}

/// The part of [`check_real_target`] that needs no topic table.
pub(crate) fn check_real_name(topic: &str) -> Result<(), String> {
    validate_topic(topic).map_err(|err| err.to_string())?;
    if topics::is_send_forbidden(topic) {
        return Err("an internal topic".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferrocket_protocol::properties::tags_code;
    use ferrocket_protocol::record::decode_record;
    use ferrocket_protocol::record::NewRecord;

    fn levels() -> DelayLevels {
        DelayLevels::parse("1s 5s 10s").unwrap()
    }

    #[test]
    fn delayed_messages_are_redirected_and_capped() {
        let mut props = Properties::new();
        props.insert(properties::DELAY, "9");
        let redirect = redirect_delayed(&levels(), &mut props, "T", 2, 0).unwrap();
        assert_eq!(redirect.topic, SCHEDULE_TOPIC);
        assert_eq!(redirect.queue_id, 2, "capped at level 3");
        assert_eq!(props.get(properties::DELAY), Some("3"));
        assert_eq!(props.get(properties::REAL_TOPIC), Some("T"));
        assert_eq!(props.get(properties::REAL_QID), Some("2"));
        let mut plain = Properties::new();
        assert!(redirect_delayed(&levels(), &mut plain, "T", 0, 0).is_none());
        plain.insert(properties::DELAY, "0");
        assert!(redirect_delayed(&levels(), &mut plain, "T", 0, 0).is_none());
        let mut half = Properties::new();
        half.insert(properties::DELAY, "1");
        let prepared = sys_flag::TRANSACTION_PREPARED;
        assert!(redirect_delayed(&levels(), &mut half, "T", 0, prepared).is_none());
    }

    #[test]
    fn the_real_topic_copy_keeps_identity_and_drops_delay() {
        let mut props = Properties::new();
        props.insert(properties::UNIQ_KEY, "ABC");
        props.insert(properties::TAGS, "t");
        props.insert(properties::DELAY, "2");
        redirect_delayed(&levels(), &mut props, "Real", 3, 0).unwrap();
        let props_bytes = props.to_bytes();
        let host = "127.0.0.1:10911".parse().unwrap();
        let stored = NewRecord {
            topic: SCHEDULE_TOPIC,
            queue_id: 1,
            flag: 7,
            sys_flag: 0,
            born_timestamp_ms: 11,
            born_host: "127.0.0.1:5000".parse().unwrap(),
            store_timestamp_ms: 12,
            store_host: host,
            reconsume_times: 2,
            prepared_transaction_offset: 0,
            body: b"body",
            properties: &props_bytes,
        };
        let mut buf = BytesMut::new();
        stored.encode(0, 0, &mut buf).unwrap();
        let view = decode_record(&buf, true).unwrap();
        let copy = real_topic_copy(&view, 99, Parked::DelayLevel).unwrap();
        assert_eq!((copy.topic.as_str(), copy.queue_id), ("Real", 3));
        assert_eq!(copy.tags_code, tags_code("t"));
        let out = decode_record(&copy.record, true).unwrap();
        assert_eq!(out.topic, "Real");
        assert_eq!(
            (out.flag, out.reconsume_times, out.born_timestamp_ms),
            (7, 2, 11)
        );
        assert_eq!(out.store_timestamp_ms, 99);
        assert_eq!(out.body, b"body");
        let out_props = out.properties();
        assert_eq!(out_props.get(properties::UNIQ_KEY), Some("ABC"));
        assert_eq!(out_props.get(properties::REAL_TOPIC), Some("Real"));
        assert!(out_props.get(properties::DELAY).is_none());
        let mut bad = Properties::new();
        bad.insert(properties::REAL_TOPIC, "Real");
        let bad_bytes = bad.to_bytes();
        let mut buf = BytesMut::new();
        NewRecord {
            properties: &bad_bytes,
            ..stored
        }
        .encode(0, 0, &mut buf)
        .unwrap();
        let view = decode_record(&buf, true).unwrap();
        assert!(matches!(
            real_topic_copy(&view, 1, Parked::DelayLevel),
            Err(DeliverError::Invalid(_))
        ));
    }

    #[test]
    fn a_timer_copy_keeps_its_delivery_time() {
        let mut props = Properties::new();
        props.insert(properties::UNIQ_KEY, "ABC");
        props.insert(properties::TIMER_DELIVER_MS, "5000");
        props.insert(properties::TIMER_OUT_MS, "5000");
        props.insert(properties::REAL_TOPIC, "Real");
        props.insert(properties::REAL_QID, "1");
        let props_bytes = props.to_bytes();
        let stored = NewRecord {
            topic: "rmq_sys_wheel_timer",
            queue_id: 0,
            flag: 0,
            sys_flag: 0,
            born_timestamp_ms: 1,
            born_host: "127.0.0.1:5000".parse().unwrap(),
            store_timestamp_ms: 2,
            store_host: "127.0.0.1:10911".parse().unwrap(),
            reconsume_times: 0,
            prepared_transaction_offset: 0,
            body: b"body",
            properties: &props_bytes,
        };
        let mut buf = BytesMut::new();
        stored.encode(0, 0, &mut buf).unwrap();
        let view = decode_record(&buf, true).unwrap();
        for (parked, kept) in [(Parked::Timer, Some("5000")), (Parked::DelayLevel, None)] {
            let copy = real_topic_copy(&view, 9, parked).unwrap();
            assert_eq!((copy.topic.as_str(), copy.queue_id), ("Real", 1));
            let out = decode_record(&copy.record, true).unwrap();
            let out_props = out.properties();
            assert_eq!(
                out_props.get(properties::TIMER_DELIVER_MS),
                kept,
                "{parked:?}"
            );
            assert_eq!(out_props.get(properties::TIMER_OUT_MS), Some("5000"));
        }
    }

    #[test]
    fn real_targets_outside_legal_user_topics_are_refused() {
        for topic in [
            "../../x",
            "/abs",
            "a/b",
            "nul\0",
            "",
            &"x".repeat(300),
            "rmq_sys_wheel_timer",
            SCHEDULE_TOPIC,
            HALF_TOPIC,
            "TBW102",
        ] {
            assert!(check_real_name(topic).is_err(), "{topic:?}");
        }
        assert!(check_real_name("Real").is_ok());
        assert!(check_real_name("%RETRY%g").is_ok());
    }
}
