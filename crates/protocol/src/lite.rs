//! Lite topics (RocketMQ 5.5, RIP-83): a parent topic whose `message.type`
//! is `LITE` holds many small lite topics; a message names its lite topic
//! in the `__LITE_TOPIC` property. These are the rules both the gRPC
//! endpoint and the broker apply to a lite topic's name.

/// Ferrocket's own pop expression type for lite consumption: the
/// expression is one lite topic, and a message passes when its
/// `__LITE_TOPIC` property is that lite topic. (Java pops lite topics with
/// its own request code, POP_LITE_MESSAGE, from per-lite-topic queues.)
pub const LITE_EXPRESSION_TYPE: &str = "LITE";

/// Longest lite topic name (the proxy's `maxLiteTopicSize`, 64).
pub const LITE_TOPIC_BYTES_MAX: usize = 64;

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
