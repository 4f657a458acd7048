//! Named limits. Crossing any of them is answered with a clear error.

use crate::ProtocolError;

/// Largest Remoting frame accepted or produced (RocketMQ's default 16 MiB).
pub const FRAME_BYTES_MAX: usize = 16 * 1024 * 1024;
/// Default largest message body (RocketMQ `maxMessageSize`, 4 MiB).
pub const MESSAGE_BODY_BYTES_MAX_DEFAULT: usize = 4 * 1024 * 1024;
/// Longest topic name (RocketMQ `TopicValidator.TOPIC_MAX_LENGTH`).
pub const TOPIC_NAME_BYTES_MAX: usize = 127;
/// Longest properties string in a stored record (i16 length prefix).
pub const PROPERTIES_BYTES_MAX: usize = i16::MAX as usize;
/// Largest number of extFields entries in one header.
pub const EXT_FIELDS_COUNT_MAX: usize = 256;
/// Most messages in one batch send.
pub const BATCH_MESSAGES_MAX: usize = 4096;

// A frame's length prefix is an i32, and a message body must fit a frame.
const _: () = assert!(FRAME_BYTES_MAX <= i32::MAX as usize);
const _: () = assert!(MESSAGE_BODY_BYTES_MAX_DEFAULT < FRAME_BYTES_MAX);
const _: () = assert!(PROPERTIES_BYTES_MAX < FRAME_BYTES_MAX);
// A stored topic name has a one-byte length (record version 1).
const _: () = assert!(TOPIC_NAME_BYTES_MAX <= u8::MAX as usize);
const _: () = assert!(EXT_FIELDS_COUNT_MAX > 0 && BATCH_MESSAGES_MAX > 0);

/// Checks a topic name against RocketMQ's rules: `^[%|a-zA-Z0-9_-]+$`,
/// at most 127 bytes.
pub fn validate_topic(topic: &str) -> Result<(), ProtocolError> {
    let reason = if topic.is_empty() {
        Some("the topic name is empty")
    } else if topic.len() > TOPIC_NAME_BYTES_MAX {
        Some("the topic name is longer than 127 characters")
    } else if !topic
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'%' | b'|' | b'_' | b'-'))
    {
        Some("the topic name may only contain letters, digits, '%', '|', '_' and '-'")
    } else {
        None
    };
    match reason {
        Some(reason) => Err(ProtocolError::InvalidTopic {
            topic: topic.to_string(),
            reason,
        }),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topic_rules() {
        assert!(validate_topic("TopicTest").is_ok());
        assert!(validate_topic("%RETRY%group_1-a").is_ok());
        assert!(validate_topic("").is_err());
        assert!(validate_topic("a b").is_err());
        assert!(validate_topic("a.b").is_err());
        assert!(validate_topic(&"x".repeat(127)).is_ok());
        assert!(validate_topic(&"x".repeat(128)).is_err());
    }
}
