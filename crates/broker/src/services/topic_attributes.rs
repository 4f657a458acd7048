//! A topic's attributes as UPDATE_AND_CREATE_TOPIC changes them (Java's
//! `AttributeParser.parseToMap` and `AttributeUtil.alterCurrentAttributes`):
//! the request's `attributes` is `+key=value` (set) and `-key` (remove)
//! entries joined by commas; keys are stored without their sign. The
//! `message.type` attribute must name one of Java's `TopicMessageType`s;
//! `retention.ms` and `retention.bytes` (retention per topic, see
//! `ferrocket_store::topic_retention`) a positive integer or -1; other keys
//! are kept as given.

use std::collections::BTreeMap;

use std::sync::Arc;

use ferrocket_protocol::body::TopicConfig;
use ferrocket_store::topic_retention::parse_value;
use ferrocket_store::{TopicRetention, RETENTION_BYTES_ATTRIBUTE, RETENTION_MS_ATTRIBUTE};

use crate::services::priority::MESSAGE_TYPE_ATTRIBUTE;

/// Java's `TopicMessageType` values.
const MESSAGE_TYPES: [&str; 8] = [
    "UNSPECIFIED",
    "NORMAL",
    "FIFO",
    "DELAY",
    "TRANSACTION",
    "PRIORITY",
    "LITE",
    "MIXED",
];

/// `current` changed by `modification`; an error names what is wrong.
pub fn alter(
    current: &BTreeMap<String, String>,
    modification: &str,
) -> Result<BTreeMap<String, String>, String> {
    let mut altered = current.clone();
    if modification.trim().is_empty() {
        return Ok(altered);
    }
    let mut seen = std::collections::BTreeSet::new();
    for entry in modification.split(',') {
        let (key, value) = match entry.split_once('=') {
            Some((key, value)) => (key.strip_prefix('+'), Some(value)),
            None => (entry.strip_prefix('-'), None),
        };
        let Some(key) = key.filter(|k| !k.is_empty()) else {
            return Err(format!("attribute format is wrong: `{entry}`"));
        };
        if !seen.insert(key) {
            return Err(format!("key duplication: {key}"));
        }
        match value {
            Some(value) => {
                check(key, value)?;
                altered.insert(key.to_string(), value.to_string());
            }
            None => {
                altered.remove(key);
            }
        }
    }
    Ok(altered)
}

fn check(key: &str, value: &str) -> Result<(), String> {
    if key == MESSAGE_TYPE_ATTRIBUTE && !MESSAGE_TYPES.contains(&value) {
        return Err(format!(
            "value is not in set: {value} (message.type takes {})",
            MESSAGE_TYPES.join(", ")
        ));
    }
    if key == RETENTION_MS_ATTRIBUTE || key == RETENTION_BYTES_ATTRIBUTE {
        parse_value(value).map_err(|e| format!("{key}: {e}"))?;
    }
    Ok(())
}

/// The store time before which `topic`'s messages are expired by its
/// `retention.ms` at `now_ms`; `None` without such a rule.
pub fn oldest_kept_ms(topic: &TopicConfig, now_ms: i64) -> Option<i64> {
    let rule =
        TopicRetention::from_attributes(|key| topic.attributes.get(key).map(String::as_str))?;
    let ms = i64::try_from(rule.ms?).ok()?;
    Some(now_ms.saturating_sub(ms))
}

/// The topics of `topics` with a retention rule of their own.
pub fn retention_rules<'a>(
    topics: impl IntoIterator<Item = &'a TopicConfig>,
) -> Vec<(Arc<str>, TopicRetention)> {
    topics
        .into_iter()
        .filter_map(|topic| {
            let rule = TopicRetention::from_attributes(|key| {
                topic.attributes.get(key).map(String::as_str)
            })?;
            Some((Arc::from(topic.topic_name.as_str()), rule))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sets_and_removes() {
        let none = BTreeMap::new();
        let set = alter(&none, "+message.type=PRIORITY,+queue.type=SimpleCQ").unwrap();
        assert_eq!(set["message.type"], "PRIORITY");
        assert_eq!(set["queue.type"], "SimpleCQ");
        let removed = alter(&set, "-queue.type").unwrap();
        assert_eq!(removed.len(), 1);
        assert_eq!(alter(&set, "").unwrap(), set, "nothing to change");
        let kept = alter(&set, "+retention.ms=60000,+retention.bytes=-1").unwrap();
        assert_eq!(kept["retention.ms"], "60000");
        let mut topic = TopicConfig::new("T", 4);
        topic.attributes = kept;
        let rules = retention_rules([&topic]);
        assert_eq!(rules.len(), 1);
        assert_eq!(rules[0].1.ms, Some(60_000));
        assert_eq!(oldest_kept_ms(&topic, 100_000), Some(40_000));
        topic.attributes = alter(&topic.attributes, "-retention.ms,-retention.bytes").unwrap();
        assert!(retention_rules([&topic]).is_empty());
        assert_eq!(oldest_kept_ms(&topic, 100_000), None);
    }

    #[test]
    fn refuses_malformed_entries() {
        let none = BTreeMap::new();
        for bad in [
            "message.type=PRIORITY",
            "queue.type",
            "+=x",
            "+a=1,+a=2",
            "+message.type=URGENT",
            "+retention.ms=0",
            "+retention.bytes=ten",
        ] {
            assert!(alter(&none, bad).is_err(), "{bad}");
        }
    }
}
