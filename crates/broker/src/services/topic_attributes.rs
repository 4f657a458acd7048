//! A topic's attributes as UPDATE_AND_CREATE_TOPIC changes them (Java's
//! `AttributeParser.parseToMap` and `AttributeUtil.alterCurrentAttributes`):
//! the request's `attributes` is `+key=value` (set) and `-key` (remove)
//! entries joined by commas; keys are stored without their sign. The
//! `message.type` attribute must name one of Java's `TopicMessageType`s
//! and `cleanup.policy` one of its `CleanupPolicy`s, set only when the
//! topic is created (Java's unchangeable attribute); `retention.ms` and
//! `retention.bytes` (retention per topic, see
//! `ferrocket_store::topic_retention`) a positive integer or -1; other keys
//! are kept as given.

use std::collections::BTreeMap;
use std::sync::Arc;

use ferrocket_protocol::body::TopicConfig;
use ferrocket_store::topic_retention::parse_value;
use ferrocket_store::{TopicRetention, RETENTION_BYTES_ATTRIBUTE, RETENTION_MS_ATTRIBUTE};

use crate::services::compaction::{CLEANUP_POLICIES, CLEANUP_POLICY_ATTRIBUTE};
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

/// `current` (`None`: the topic is new) changed by `modification`; an
/// error names what is wrong.
pub fn alter(
    current: Option<&BTreeMap<String, String>>,
    modification: &str,
) -> Result<BTreeMap<String, String>, String> {
    let mut altered = current.cloned().unwrap_or_default();
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
        if current.is_some() && key == CLEANUP_POLICY_ATTRIBUTE {
            return Err(format!(
                "attempt to update an unchangeable attribute. key: {key}"
            ));
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
    if key == CLEANUP_POLICY_ATTRIBUTE && !CLEANUP_POLICIES.contains(&value) {
        return Err(format!(
            "value is not in set: {value} (cleanup.policy takes {})",
            CLEANUP_POLICIES.join(", ")
        ));
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
        let set = alter(None, "+message.type=PRIORITY,+queue.type=SimpleCQ").unwrap();
        let compacted = alter(None, "+cleanup.policy=COMPACTION").unwrap();
        assert_eq!(compacted["cleanup.policy"], "COMPACTION");
        for change in ["+cleanup.policy=DELETE", "-cleanup.policy"] {
            assert!(alter(Some(&compacted), change).is_err(), "{change}");
        }
        assert_eq!(alter(Some(&compacted), "").unwrap(), compacted);
        assert_eq!(set["message.type"], "PRIORITY");
        assert_eq!(set["queue.type"], "SimpleCQ");
        let removed = alter(Some(&set), "-queue.type").unwrap();
        assert_eq!(removed.len(), 1);
        assert_eq!(alter(Some(&set), "").unwrap(), set, "nothing to change");
        let kept = alter(Some(&set), "+retention.ms=60000,+retention.bytes=-1").unwrap();
        assert_eq!(kept["retention.ms"], "60000");
        let mut topic = TopicConfig::new("T", 4);
        topic.attributes = kept;
        let rules = retention_rules([&topic]);
        assert_eq!(rules.len(), 1);
        assert_eq!(rules[0].1.ms, Some(60_000));
        assert_eq!(oldest_kept_ms(&topic, 100_000), Some(40_000));
        topic.attributes =
            alter(Some(&topic.attributes), "-retention.ms,-retention.bytes").unwrap();
        assert!(retention_rules([&topic]).is_empty());
        assert_eq!(oldest_kept_ms(&topic, 100_000), None);
    }

    #[test]
    fn refuses_malformed_entries() {
        for bad in [
            "message.type=PRIORITY",
            "queue.type",
            "+=x",
            "+a=1,+a=2",
            "+message.type=URGENT",
            "+retention.ms=0",
            "+retention.bytes=ten",
            "+cleanup.policy=COMPACT",
        ] {
            assert!(alter(None, bad).is_err(), "{bad}");
        }
    }
}
