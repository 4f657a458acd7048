//! Recalling a timer message (RocketMQ 5.3's RecallMessage): the handle a
//! send answers, the checks RECALL_MESSAGE (370) makes, and the recall
//! marker it stores.
//!
//! A recall stores, as Java's `RecallMessageProcessor` does, a **marker**
//! in the timer topic: a timer message whose TIMER_DEL_UNIQKEY names the
//! recalled message (`REAL_TOPIC+UNIQ_KEY`) and whose TIMER_OUT_MS is the
//! recalled message's. The timer holds it one millisecond earlier than
//! that, so delivery meets the marker first and drops the message it
//! names (`tasks::timer::recall`). The marker goes through the CommitLog
//! like any message: replicated, and recovered after a restart.
//!
//! Only timer messages (TIMER_DELIVER_MS / TIMER_DELAY_SEC /
//! TIMER_DELAY_MS) get a handle; a delay-level message does not, as in
//! Java.

use ferrocket_protocol::codes::response_code;
use ferrocket_protocol::properties::{self, Properties};
use ferrocket_protocol::recall::{delete_key, RecallHandle, RECALL_TAG};

use crate::config::BrokerConfig;
use crate::error::Reject;
use crate::services::topics::{RETRY_TOPIC_PREFIX, TIMER_TOPIC};

/// Body of a recall marker (Java stores "0").
pub(crate) const MARKER_BODY: &[u8] = b"0";

/// The recall handle a send of a message stored as `stored_topic` with
/// `props` answers: for a message the timer holds
/// (`SendMessageProcessor.attachRecallHandle`), not for a retry topic's.
pub(crate) fn handle_for_send(
    broker_name: &str,
    stored_topic: &str,
    props: &Properties,
) -> Option<String> {
    if stored_topic != TIMER_TOPIC {
        return None;
    }
    let due_ms = props.get(properties::TIMER_OUT_MS)?.parse::<i64>().ok()?;
    let real_topic = props.get(properties::REAL_TOPIC)?;
    if real_topic.starts_with(RETRY_TOPIC_PREFIX) {
        return None;
    }
    let unique_key = props.unique_key()?;
    Some(RecallHandle::for_timer(real_topic, broker_name, due_ms, unique_key).encode())
}

fn illegal(remark: impl Into<String>) -> Reject {
    Reject::new(response_code::ILLEGAL_OPERATION, remark)
}

/// Reads `text` as a handle for a recall in `topic` on this broker at
/// `now_ms`, with Java's codes and words for each refusal.
pub(crate) fn check_handle(
    config: &BrokerConfig,
    topic: &str,
    text: &str,
    now_ms: i64,
) -> Result<RecallHandle, Reject> {
    let handle = RecallHandle::decode(text).map_err(|err| illegal(err.to_string()))?;
    if handle.topic != topic {
        return Err(illegal("recall failed, topic not match"));
    }
    if handle.broker_name != config.broker_name {
        return Err(illegal("recall failed, broker service not available"));
    }
    let left_ms = handle.timestamp_ms().saturating_sub(now_ms);
    let max_ms = i64::try_from(config.timer_max_delay_sec)
        .unwrap_or(i64::MAX / 1000)
        .saturating_mul(1000);
    if left_ms <= 0 || left_ms >= max_ms {
        return Err(illegal("recall failed, timestamp invalid"));
    }
    Ok(handle)
}

/// The properties of the marker that recalls `handle`'s message, as
/// stored in the timer topic (Java's marker after its timer conversion).
pub(crate) fn marker_properties(
    handle: &RecallHandle,
    producer_group: Option<&str>,
    now_ms: i64,
) -> Properties {
    let mut props = Properties::new();
    props.insert(properties::TAGS, RECALL_TAG);
    props.insert(
        properties::TIMER_DEL_UNIQKEY,
        delete_key(&handle.topic, &handle.message_id),
    );
    props.insert(properties::UNIQ_KEY, handle.message_id.as_str());
    props.insert(properties::TIMER_DELIVER_MS, handle.timestamp.as_str());
    props.insert(properties::BORN_TIMESTAMP, now_ms.to_string());
    if let Some(group) = producer_group.filter(|g| !g.is_empty()) {
        props.insert(properties::PGROUP, group);
    }
    props.insert(properties::TIMER_OUT_MS, handle.due_ms().to_string());
    props.insert(properties::REAL_TOPIC, handle.topic.as_str());
    props.insert(properties::REAL_QID, "0");
    props
}

/// Whether a timer-topic message with `props` is a recall marker, and the
/// delete key it carries when it may recall a message of its own
/// REAL_TOPIC (a marker naming another topic recalls nothing: the topic
/// a recall was authorized for is its REAL_TOPIC).
pub(crate) fn marker_key(props: &Properties) -> Option<Option<&str>> {
    let key = props.get(properties::TIMER_DEL_UNIQKEY)?;
    let own_topic = props
        .get(properties::REAL_TOPIC)
        .and_then(|topic| key.strip_prefix(topic))
        .is_some_and(|rest| rest.starts_with('+'));
    Some(own_topic.then_some(key))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> BrokerConfig {
        BrokerConfig {
            broker_name: "broker-a".into(),
            timer_max_delay_sec: 60,
            ..BrokerConfig::default()
        }
    }

    fn timer_props(real_topic: &str) -> Properties {
        let mut props = Properties::new();
        props.insert(properties::UNIQ_KEY, "ID1");
        props.insert(properties::TIMER_OUT_MS, "10000");
        props.insert(properties::REAL_TOPIC, real_topic);
        props
    }

    #[test]
    fn only_timer_held_messages_get_a_handle() {
        let text = handle_for_send("broker-a", TIMER_TOPIC, &timer_props("T")).unwrap();
        let handle = RecallHandle::decode(&text).unwrap();
        assert_eq!(
            handle,
            RecallHandle::for_timer("T", "broker-a", 10_000, "ID1")
        );
        assert_eq!(handle_for_send("broker-a", "T", &timer_props("T")), None);
        let retry = timer_props("%RETRY%G");
        assert_eq!(handle_for_send("broker-a", TIMER_TOPIC, &retry), None);
    }

    #[test]
    fn handles_are_checked_as_java_checks_them() {
        let config = config();
        let now = 1_000_000;
        let good = RecallHandle::for_timer("T", "broker-a", now + 5_000, "ID1").encode();
        assert!(check_handle(&config, "T", &good, now).is_ok());
        let refused = |topic: &str, text: &str| {
            let reject = check_handle(&config, topic, text, now).unwrap_err();
            assert_eq!(reject.code, response_code::ILLEGAL_OPERATION);
            reject.remark
        };
        assert_eq!(refused("T", "junk!"), "recall handle is invalid");
        assert_eq!(refused("U", &good), "recall failed, topic not match");
        let elsewhere = RecallHandle::for_timer("T", "broker-b", now + 5_000, "ID1").encode();
        assert!(refused("T", &elsewhere).contains("not available"));
        for due in [now - 1, now - 5_000, now + 60_000] {
            let text = RecallHandle::for_timer("T", "broker-a", due, "ID1").encode();
            assert_eq!(refused("T", &text), "recall failed, timestamp invalid");
        }
    }

    #[test]
    fn a_marker_recalls_only_in_its_own_topic() {
        let handle = RecallHandle::for_timer("T", "broker-a", 10_000, "ID1");
        let props = marker_properties(&handle, Some("PG"), 1);
        assert_eq!(marker_key(&props), Some(Some("T+ID1")));
        assert_eq!(props.get(properties::TIMER_OUT_MS), Some("10000"));
        let mut forged = props.clone();
        forged.insert(properties::REAL_TOPIC, "Other");
        assert_eq!(marker_key(&forged), Some(None));
        forged.insert(properties::REAL_TOPIC, "T+I");
        forged.insert(properties::TIMER_DEL_UNIQKEY, "T+ID1");
        assert_eq!(marker_key(&forged), Some(None));
        assert_eq!(marker_key(&timer_props("T")), None);
    }
}
