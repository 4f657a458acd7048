//! Messages read back from a broker (Java's `MessageExt`), decoded from the
//! stored records of a pull body, and tag filtering of subscriptions.

use std::collections::BTreeSet;
use std::net::SocketAddr;

use bytes::Bytes;
use ferrocket_protocol::properties::Properties;
use ferrocket_protocol::record::{records, RecordView};

use crate::ClientError;

/// One stored message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessageExt {
    pub topic: String,
    pub queue_id: i32,
    pub queue_offset: i64,
    /// Physical position in the broker's CommitLog.
    pub commit_log_offset: i64,
    /// Offset message id (store host + CommitLog offset), as a send result's
    /// `msg_id`.
    pub msg_id: String,
    /// UNIQ_KEY property (the producer-side id), when present.
    pub unique_key: Option<String>,
    /// The body as stored (a compressed body, sysFlag bit 0x1, is not
    /// inflated).
    pub body: Bytes,
    pub properties: Properties,
    pub tags: Option<String>,
    pub keys: Vec<String>,
    pub flag: i32,
    pub sys_flag: i32,
    pub born_timestamp_ms: i64,
    pub born_host: SocketAddr,
    pub store_timestamp_ms: i64,
    pub store_host: SocketAddr,
    pub reconsume_times: i32,
    pub prepared_transaction_offset: i64,
    pub body_crc: i32,
    /// Bytes of the stored record.
    pub store_size: usize,
}

impl MessageExt {
    /// Builds the message from a record borrowed out of `buffer`; the body
    /// shares `buffer`'s memory when it lies inside it.
    pub fn from_record(view: &RecordView<'_>, buffer: &Bytes) -> Self {
        let properties = view.properties();
        let body = if view.body.is_empty() {
            Bytes::new()
        } else if buffer.as_ptr_range().contains(&view.body.as_ptr()) {
            buffer.slice_ref(view.body)
        } else {
            Bytes::copy_from_slice(view.body)
        };
        Self {
            topic: view.topic.to_string(),
            queue_id: view.queue_id,
            queue_offset: view.queue_offset,
            commit_log_offset: view.physical_offset,
            msg_id: view.offset_msg_id(),
            unique_key: properties.unique_key().map(str::to_string),
            body,
            tags: properties.tags().map(str::to_string),
            keys: properties.keys().map(str::to_string).collect(),
            properties,
            flag: view.flag,
            sys_flag: view.sys_flag,
            born_timestamp_ms: view.born_timestamp_ms,
            born_host: view.born_host,
            store_timestamp_ms: view.store_timestamp_ms,
            store_host: view.store_host,
            reconsume_times: view.reconsume_times,
            prepared_transaction_offset: view.prepared_transaction_offset,
            body_crc: view.body_crc,
            store_size: view.total_size,
        }
    }
}

/// Decodes the records laid back to back in a pull body.
pub fn decode_messages(body: &Bytes, verify_crc: bool) -> Result<Vec<MessageExt>, ClientError> {
    let mut out = Vec::new();
    for view in records(body, verify_crc) {
        out.push(MessageExt::from_record(&view?, body));
    }
    Ok(out)
}

/// A TAG subscription expression: `*` (or empty) for all, else tags joined
/// by `||` (Java's `FilterAPI.buildSubscriptionData`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TagFilter {
    /// `None` matches every message.
    tags: Option<BTreeSet<String>>,
}

impl TagFilter {
    pub fn parse(expression: &str) -> Self {
        let trimmed = expression.trim();
        if trimmed.is_empty() || trimmed == "*" {
            return Self { tags: None };
        }
        let tags: BTreeSet<String> = trimmed
            .split("||")
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .map(str::to_string)
            .collect();
        Self {
            tags: if tags.is_empty() { None } else { Some(tags) },
        }
    }

    pub fn matches_all(&self) -> bool {
        self.tags.is_none()
    }

    /// The tags, in order (empty for "all").
    pub fn tags(&self) -> Vec<String> {
        self.tags
            .as_ref()
            .map(|t| t.iter().cloned().collect())
            .unwrap_or_default()
    }

    pub fn matches(&self, tags: Option<&str>) -> bool {
        match &self.tags {
            None => true,
            Some(set) => tags.is_some_and(|t| set.contains(t)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::BytesMut;
    use ferrocket_protocol::record::NewRecord;

    fn record(queue_offset: i64, tags: &str, body: &[u8], out: &mut BytesMut) {
        let mut props = Properties::new();
        props.insert("TAGS", tags);
        props.insert("KEYS", "k1 k2");
        props.insert("UNIQ_KEY", format!("U{queue_offset}"));
        let props = props.to_bytes();
        let new = NewRecord {
            topic: "T",
            queue_id: 1,
            flag: 7,
            sys_flag: 0,
            born_timestamp_ms: 1_000,
            born_host: "10.0.0.1:5000".parse().unwrap(),
            store_timestamp_ms: 2_000,
            store_host: "10.0.0.2:10911".parse().unwrap(),
            reconsume_times: 0,
            prepared_transaction_offset: 0,
            body,
            properties: &props,
        };
        let physical = out.len() as i64;
        new.encode(queue_offset, physical, out).unwrap();
    }

    #[test]
    fn pull_body_decodes_into_messages() {
        let mut buf = BytesMut::new();
        record(5, "a", b"hello", &mut buf);
        record(6, "b", b"world", &mut buf);
        let body = buf.freeze();
        let messages = decode_messages(&body, true).unwrap();
        assert_eq!(messages.len(), 2);
        let first = &messages[0];
        assert_eq!(first.topic, "T");
        assert_eq!((first.queue_id, first.queue_offset), (1, 5));
        assert_eq!(&first.body[..], b"hello");
        assert_eq!(first.tags.as_deref(), Some("a"));
        assert_eq!(first.keys, vec!["k1".to_string(), "k2".to_string()]);
        assert_eq!(first.unique_key.as_deref(), Some("U5"));
        assert_eq!(first.flag, 7);
        assert_eq!(first.store_timestamp_ms, 2_000);
        assert_eq!(messages[1].commit_log_offset, first.store_size as i64);
        assert_eq!(first.msg_id.len(), 32);
        assert!(
            first.msg_id.ends_with("0000000000000000"),
            "{}",
            first.msg_id
        );
        // A flipped body byte fails the CRC check only when asked.
        let mut corrupt = BytesMut::from(&body[..]);
        let at = body.windows(5).position(|w| w == b"hello").unwrap();
        corrupt[at] ^= 0xFF;
        let corrupt = corrupt.freeze();
        assert!(decode_messages(&corrupt, true).is_err());
        assert_eq!(decode_messages(&corrupt, false).unwrap().len(), 2);
        assert!(decode_messages(&body.slice(..body.len() - 3), false).is_err());
    }

    #[test]
    fn tag_filters() {
        assert!(TagFilter::parse("*").matches(None));
        assert!(TagFilter::parse(" ").matches_all());
        let filter = TagFilter::parse("a || b");
        assert!(filter.matches(Some("a")));
        assert!(filter.matches(Some("b")));
        assert!(!filter.matches(Some("c")));
        assert!(!filter.matches(None));
        assert_eq!(filter.tags(), vec!["a".to_string(), "b".to_string()]);
    }
}
