//! The one place where names from clients or records become paths:
//! `consumequeue/{topic}/{queueId}`. A topic that is not a legal RocketMQ
//! topic name (`^[%|a-zA-Z0-9_-]{1,127}$`: no `.`, `/`, NUL, nothing
//! non-ASCII) or a negative queue id is refused here, so no request and no
//! damaged record can make the store create or delete a file outside its
//! own directories. Group names never become paths (groups live in the
//! JSON files under `config/`).

use std::path::{Path, PathBuf};

use ferrocket_protocol::limits::validate_topic;

use crate::error::StoreError;

/// Checks that `topic`/`queue_id` may name a queue's files.
pub fn check_queue_name(topic: &str, queue_id: i32) -> Result<(), StoreError> {
    validate_topic(topic).map_err(|err| StoreError::InvalidRecord(err.to_string()))?;
    if queue_id < 0 {
        return Err(StoreError::InvalidRecord(format!(
            "queue id {queue_id} of topic {topic} is negative"
        )));
    }
    Ok(())
}

/// `consumequeue/{topic}`, for a legal topic name only.
pub fn topic_dir(consumequeue_dir: &Path, topic: &str) -> Result<PathBuf, StoreError> {
    validate_topic(topic).map_err(|err| StoreError::InvalidRecord(err.to_string()))?;
    Ok(consumequeue_dir.join(topic))
}

/// `consumequeue/{topic}/{queue_id}`, for a legal topic and queue id only.
pub fn queue_dir(
    consumequeue_dir: &Path,
    topic: &str,
    queue_id: i32,
) -> Result<PathBuf, StoreError> {
    check_queue_name(topic, queue_id)?;
    Ok(consumequeue_dir.join(topic).join(queue_id.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_legal_names_become_paths() {
        let root = Path::new("/store/consumequeue");
        assert_eq!(
            queue_dir(root, "T-1_%|x", 3).unwrap(),
            root.join("T-1_%|x").join("3")
        );
        let long = "x".repeat(300);
        for topic in ["..", "../x", "/abs", "a/b", "nul\0", "", "ä", long.as_str()] {
            assert!(queue_dir(root, topic, 0).is_err(), "{topic:?}");
            assert!(topic_dir(root, topic).is_err(), "{topic:?}");
        }
        assert!(queue_dir(root, "T", -1).is_err());
    }
}
