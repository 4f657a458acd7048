//! The recall handle of RocketMQ 5.3 (`RecallMessageHandle`): what a send
//! of a timer message answers (`recallHandle` in the send response header,
//! `recall_handle` in the v5 API's send result) and RECALL_MESSAGE (370)
//! takes back.
//!
//! Version 1, the only one: the five words `v1 TOPIC BROKER_NAME
//! TIMESTAMP MESSAGE_ID` joined by single spaces, encoded as URL-safe
//! base64 with padding. TIMESTAMP is the held message's due time
//! (TIMER_OUT_MS) plus one, in ms; MESSAGE_ID its unique key (UNIQ_KEY).
//! Decoding follows Java's: padding optional, words past the fifth
//! ignored, the timestamp left as text (a broker reads a bad one as -1).

use base64::alphabet::URL_SAFE;
use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig};
use base64::engine::DecodePaddingMode;
use base64::Engine;

/// The handle's version word.
pub const VERSION_1: &str = "v1";
/// Longest handle text taken (Java has no limit; a real one is under
/// 400 characters: a topic is at most 127, a unique key 32).
pub const HANDLE_CHARS_MAX: usize = 2_048;
/// Tag Java gives the recall marker it stores (`RecallMessageProcessor`).
pub const RECALL_TAG: &str = "_RECALL_TAG_";

/// Java's `Base64.getUrlEncoder()` / `getUrlDecoder()`: URL-safe alphabet,
/// padding written, and optional when read.
const URL_SAFE_JAVA: GeneralPurpose = GeneralPurpose::new(
    &URL_SAFE,
    GeneralPurposeConfig::new()
        .with_encode_padding(true)
        .with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

/// A decoded version-1 handle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecallHandle {
    pub topic: String,
    pub broker_name: String,
    /// Due time + 1 ms, as the text the handle carries.
    pub timestamp: String,
    /// The held message's unique key.
    pub message_id: String,
}

/// Java's remark for every handle it cannot read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("recall handle is invalid")]
pub struct InvalidHandle;

impl RecallHandle {
    /// The handle of a timer message held until `due_ms` (its TIMER_OUT_MS).
    pub fn for_timer(topic: &str, broker_name: &str, due_ms: i64, message_id: &str) -> Self {
        Self {
            topic: topic.to_string(),
            broker_name: broker_name.to_string(),
            timestamp: due_ms.saturating_add(1).to_string(),
            message_id: message_id.to_string(),
        }
    }

    /// The handle text (`HandleV1.buildHandle`).
    pub fn encode(&self) -> String {
        let raw = [
            VERSION_1,
            &self.topic,
            &self.broker_name,
            &self.timestamp,
            &self.message_id,
        ]
        .join(" ");
        URL_SAFE_JAVA.encode(raw.as_bytes())
    }

    /// Reads a handle (`RecallMessageHandle.decodeHandle`).
    pub fn decode(text: &str) -> Result<Self, InvalidHandle> {
        if text.is_empty() || text.len() > HANDLE_CHARS_MAX {
            return Err(InvalidHandle);
        }
        let bytes = URL_SAFE_JAVA
            .decode(text.as_bytes())
            .map_err(|_| InvalidHandle)?;
        let raw = String::from_utf8_lossy(&bytes);
        // Java's String.split(" "): trailing empty words dropped.
        let mut words: Vec<&str> = raw.split(' ').collect();
        while words.last().is_some_and(|w| w.is_empty()) {
            words.pop();
        }
        if words.first() != Some(&VERSION_1) || words.len() < 5 {
            return Err(InvalidHandle);
        }
        Ok(Self {
            topic: words[1].to_string(),
            broker_name: words[2].to_string(),
            timestamp: words[3].to_string(),
            message_id: words[4].to_string(),
        })
    }

    /// The timestamp in ms; -1 when it is not a number (Java's
    /// `NumberUtils.toLong(text, -1)`).
    pub fn timestamp_ms(&self) -> i64 {
        self.timestamp.parse().unwrap_or(-1)
    }

    /// The held message's due time (TIMER_OUT_MS): the timestamp less one.
    pub fn due_ms(&self) -> i64 {
        self.timestamp_ms().saturating_sub(1)
    }
}

/// What a recall marker's TIMER_DEL_UNIQKEY holds, and what the timer
/// matches a held message against (`TimerMessageStore.buildDeleteKey`).
pub fn delete_key(real_topic: &str, unique_key: &str) -> String {
    format!("{real_topic}+{unique_key}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_handle_is_javas_text() {
        let handle = RecallHandle::for_timer("T", "broker-a", 1_700_000_000_000, "ID1");
        assert_eq!(handle.timestamp, "1700000000001");
        let text = handle.encode();
        // base64url("v1 T broker-a 1700000000001 ID1"), as Java writes it.
        assert_eq!(text, "djEgVCBicm9rZXItYSAxNzAwMDAwMDAwMDAxIElEMQ==");
        assert_eq!(RecallHandle::decode(&text), Ok(handle.clone()));
        assert_eq!(handle.due_ms(), 1_700_000_000_000);
    }

    #[test]
    fn padding_is_optional_and_extra_words_are_ignored() {
        let text = URL_SAFE_JAVA.encode("v1 T b 12 ID extra ".as_bytes());
        let unpadded = text.trim_end_matches('=');
        let handle = RecallHandle::decode(unpadded).unwrap();
        assert_eq!(
            (handle.topic.as_str(), handle.message_id.as_str()),
            ("T", "ID")
        );
        assert_eq!(handle.timestamp_ms(), 12);
    }

    #[test]
    fn the_url_safe_alphabet_round_trips() {
        // Bytes that encode to '-' and '_' in the URL-safe alphabet.
        let handle = RecallHandle::for_timer("T?>", "b~~", 5, "\u{00ff}\u{00fe}");
        let text = handle.encode();
        assert!(!text.contains('+') && !text.contains('/'), "{text}");
        assert_eq!(RecallHandle::decode(&text), Ok(handle));
    }

    #[test]
    fn bad_handles_are_refused() {
        let encode = |raw: &str| URL_SAFE_JAVA.encode(raw.as_bytes());
        for bad in [
            String::new(),
            "not base64!".to_string(),
            encode("v2 T b 12 ID"),
            encode("v1 T b 12"),
            encode("v1 T b 12   "),
            "A".repeat(HANDLE_CHARS_MAX + 4),
        ] {
            assert_eq!(RecallHandle::decode(&bad), Err(InvalidHandle), "{bad}");
        }
        let handle = RecallHandle::decode(&encode("v1 T b soon ID")).unwrap();
        assert_eq!(handle.timestamp_ms(), -1);
    }

    #[test]
    fn the_delete_key_joins_topic_and_key_with_a_plus() {
        assert_eq!(delete_key("T", "ID"), "T+ID");
    }
}
