//! A topic's attributes as UPDATE_AND_CREATE_TOPIC changes them (Java's
//! `AttributeParser.parseToMap` and `AttributeUtil.alterCurrentAttributes`):
//! the request's `attributes` is `+key=value` (set) and `-key` (remove)
//! entries joined by commas; keys are stored without their sign. The
//! `message.type` attribute must name one of Java's `TopicMessageType`s
//! and `cleanup.policy` one of its `CleanupPolicy`s, set only when the
//! topic is created (Java's unchangeable attribute); other keys are kept
//! as given.

use std::collections::BTreeMap;

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
    if key == CLEANUP_POLICY_ATTRIBUTE && !CLEANUP_POLICIES.contains(&value) {
        return Err(format!(
            "value is not in set: {value} (cleanup.policy takes {})",
            CLEANUP_POLICIES.join(", ")
        ));
    }
    Ok(())
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
    }

    #[test]
    fn refuses_malformed_entries() {
        for bad in [
            "message.type=PRIORITY",
            "queue.type",
            "+=x",
            "+a=1,+a=2",
            "+message.type=URGENT",
            "+cleanup.policy=COMPACT",
        ] {
            assert!(alter(None, bad).is_err(), "{bad}");
        }
    }
}
