//! Lite topics (RocketMQ 5.5, RIP-83): a parent topic whose `message.type`
//! is `LITE` holds many small lite topics; a message names its lite topic
//! in the `__LITE_TOPIC` property. These are the rules both the gRPC
//! endpoint and the broker apply to a lite topic's name, and the table of
//! lite subscriptions both keep ([`subscriptions`]).

pub mod subscriptions;

/// Ferrocket's own pop expression type for lite consumption: the
/// expression is one lite topic, and a message passes when its
/// `__LITE_TOPIC` property is that lite topic. (Java pops lite topics with
/// its own request code, POP_LITE_MESSAGE, from per-lite-topic queues.)
pub const LITE_EXPRESSION_TYPE: &str = "LITE";

/// Longest lite topic name (the proxy's `maxLiteTopicSize`, 64).
pub const LITE_TOPIC_BYTES_MAX: usize = 64;

/// What separates a group from its lite topic in the group a lite topic
/// is popped as.
pub const LITE_GROUP_SEPARATOR: &str = "%LITE%";
/// Hex digits of a hashed lite group's name (128 bits of SHA-1).
pub const LITE_GROUP_HASH_HEX: usize = 32;
/// The pop retry topic `%RETRY%{group}_{topic}` around a group's name.
pub const RETRY_WRAPPING: usize = "%RETRY%".len() + 1;

/// The consumer group a lite topic of `group` (bound to parent `topic`)
/// is popped and acked as, by the gRPC endpoint and by POP_LITE_MESSAGE
/// alike: `{group}%LITE%{lite}` while the group's pop retry topic fits a
/// topic name (127 bytes), otherwise `%LITE%` and a hash of both names.
pub fn lite_group(group: &str, topic: &str, lite_topic: &str) -> String {
    use sha1::Digest;
    let readable = format!("{group}{LITE_GROUP_SEPARATOR}{lite_topic}");
    if RETRY_WRAPPING + readable.len() + topic.len() <= crate::limits::TOPIC_NAME_BYTES_MAX {
        return readable;
    }
    let digest = sha1::Sha1::new()
        .chain_update(group.as_bytes())
        .chain_update([0u8])
        .chain_update(lite_topic.as_bytes())
        .finalize();
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("{LITE_GROUP_SEPARATOR}{}", &hex[..LITE_GROUP_HASH_HEX])
}

/// Why a lite topic name is refused, or `Ok`: as the proxy's
/// `GrpcValidator.validateLiteTopic`, a lite topic is not blank, at most
/// [`LITE_TOPIC_BYTES_MAX`] bytes, and only letters, digits, `-` and `_`.
pub fn check_lite_topic(name: &str) -> Result<(), String> {
    if name.trim().is_empty() {
        return Err("the lite topic is blank".into());
    }
    if name.len() > LITE_TOPIC_BYTES_MAX {
        return Err(format!(
            "the lite topic is longer than {LITE_TOPIC_BYTES_MAX} characters"
        ));
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    {
        return Err(format!(
            "the lite topic `{name}` has characters other than [A-Za-z0-9_-]"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lite_topic_names() {
        assert!(check_lite_topic("session-42_a").is_ok());
        assert!(check_lite_topic(&"a".repeat(LITE_TOPIC_BYTES_MAX)).is_ok());
        assert!(check_lite_topic(&"a".repeat(LITE_TOPIC_BYTES_MAX + 1)).is_err());
        assert!(check_lite_topic(" ").is_err());
        assert!(check_lite_topic("a%b").is_err());
        assert!(check_lite_topic("a|b").is_err());
        assert!(check_lite_topic("a b").is_err());
    }
}
