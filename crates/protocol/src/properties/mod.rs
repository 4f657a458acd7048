//! Message properties: RocketMQ's `name \x01 value \x02 ...` string, the
//! property names the broker reads (Java `MessageConst`), and the tag hash
//! the ConsumeQueue stores.
//!
//! Decoding follows Java's `MessageDecoder.string2messageProperties`: the
//! text is read as UTF-8 with invalid bytes replaced, entries with an empty
//! name or value (or no `\x01`) are skipped, a repeated name keeps the last
//! value. Decoding never fails.

use std::borrow::Cow;
use std::collections::HashMap;

mod canonical;
pub use canonical::find_canonical;

/// Separates a name from its value (Java `NAME_VALUE_SEPARATOR`).
pub const NAME_VALUE_SEPARATOR: u8 = 0x01;
/// Ends each name/value pair (Java `PROPERTY_SEPARATOR`).
pub const PROPERTY_SEPARATOR: u8 = 0x02;
/// Separates the entries of [`KEYS`] (Java `KEY_SEPARATOR`).
pub const KEY_SEPARATOR: char = ' ';

/// Business keys, space separated (`PROPERTY_KEYS`).
pub const KEYS: &str = "KEYS";
/// Message tag (`PROPERTY_TAGS`).
pub const TAGS: &str = "TAGS";
/// Whether the producer waits for the store to flush (`PROPERTY_WAIT_STORE_MSG_OK`).
pub const WAIT: &str = "WAIT";
/// Delay level 1..=18 (`PROPERTY_DELAY_TIME_LEVEL`).
pub const DELAY: &str = "DELAY";
/// Original topic of a retry message (`PROPERTY_RETRY_TOPIC`).
pub const RETRY_TOPIC: &str = "RETRY_TOPIC";
/// Topic a scheduled/half message really belongs to (`PROPERTY_REAL_TOPIC`).
pub const REAL_TOPIC: &str = "REAL_TOPIC";
/// Queue id a scheduled/half message really belongs to (`PROPERTY_REAL_QUEUE_ID`).
pub const REAL_QID: &str = "REAL_QID";
/// "true" on a transactional half message (`PROPERTY_TRANSACTION_PREPARED`).
pub const TRAN_MSG: &str = "TRAN_MSG";
/// Producer group of a transactional message (`PROPERTY_PRODUCER_GROUP`).
pub const PGROUP: &str = "PGROUP";
/// Queue min offset, set on pulled messages (`PROPERTY_MIN_OFFSET`).
pub const MIN_OFFSET: &str = "MIN_OFFSET";
/// Queue max offset, set on pulled messages (`PROPERTY_MAX_OFFSET`).
pub const MAX_OFFSET: &str = "MAX_OFFSET";
/// Buyer id (`PROPERTY_BUYER_ID`).
pub const BUYER_ID: &str = "BUYER_ID";
/// Original message id of a retried message (`PROPERTY_ORIGIN_MESSAGE_ID`).
pub const ORIGIN_MESSAGE_ID: &str = "ORIGIN_MESSAGE_ID";
/// `PROPERTY_TRANSFER_FLAG`.
pub const TRANSFER_FLAG: &str = "TRANSFER_FLAG";
/// `PROPERTY_CORRECTION_FLAG`.
pub const CORRECTION_FLAG: &str = "CORRECTION_FLAG";
/// `PROPERTY_RECONSUME_TIME`.
pub const RECONSUME_TIME: &str = "RECONSUME_TIME";
/// Region of the message (`PROPERTY_MSG_REGION`).
pub const MSG_REGION: &str = "MSG_REGION";
/// Whether message tracing is on (`PROPERTY_TRACE_SWITCH`).
pub const TRACE_ON: &str = "TRACE_ON";
/// Client-generated unique key (`PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX`).
pub const UNIQ_KEY: &str = "UNIQ_KEY";
/// `PROPERTY_EXTEND_UNIQ_INFO`.
pub const EXTEND_UNIQ_INFO: &str = "EXTEND_UNIQ_INFO";
/// Per-message max reconsume times (`PROPERTY_MAX_RECONSUME_TIMES`).
pub const MAX_RECONSUME_TIMES: &str = "MAX_RECONSUME_TIMES";
/// When the consumer started consuming (`PROPERTY_CONSUME_START_TIMESTAMP`).
pub const CONSUME_START_TIME: &str = "CONSUME_START_TIME";
/// Number of messages in an inner batch (`PROPERTY_INNER_NUM`).
pub const INNER_NUM: &str = "INNER_NUM";
/// First queue offset of an inner batch (`PROPERTY_INNER_BASE`).
pub const INNER_BASE: &str = "INNER_BASE";
/// `DUP_INFO`.
pub const DUP_INFO: &str = "DUP_INFO";
/// Seconds before the first transaction check (`PROPERTY_CHECK_IMMUNITY_TIME_IN_SECONDS`).
pub const CHECK_IMMUNITY_TIME_IN_SECONDS: &str = "CHECK_IMMUNITY_TIME_IN_SECONDS";
/// Queue offset of the half message (`PROPERTY_TRANSACTION_PREPARED_QUEUE_OFFSET`).
pub const TRAN_PREPARED_QUEUE_OFFSET: &str = "TRAN_PREPARED_QUEUE_OFFSET";
/// Transaction id (`PROPERTY_TRANSACTION_ID`).
pub const TRANSACTION_ID: &str = "__transactionId__";
/// How many times a half message was checked (`PROPERTY_TRANSACTION_CHECK_TIMES`).
pub const TRANSACTION_CHECK_TIMES: &str = "TRANSACTION_CHECK_TIMES";
/// `PROPERTY_INSTANCE_ID`.
pub const INSTANCE_ID: &str = "INSTANCE_ID";
/// Request/reply correlation id (`PROPERTY_CORRELATION_ID`).
pub const CORRELATION_ID: &str = "CORRELATION_ID";
/// Client a reply goes to (`PROPERTY_MESSAGE_REPLY_TO_CLIENT`).
pub const REPLY_TO_CLIENT: &str = "REPLY_TO_CLIENT";
/// Request/reply time to live (`PROPERTY_MESSAGE_TTL`).
pub const TTL: &str = "TTL";
/// `PROPERTY_REPLY_MESSAGE_ARRIVE_TIME`.
pub const ARRIVE_TIME: &str = "ARRIVE_TIME";
/// `PROPERTY_PUSH_REPLY_TIME`.
pub const PUSH_REPLY_TIME: &str = "PUSH_REPLY_TIME";
/// `PROPERTY_CLUSTER`.
pub const CLUSTER: &str = "CLUSTER";
/// `PROPERTY_MESSAGE_TYPE`.
pub const MSG_TYPE: &str = "MSG_TYPE";
/// Pop checkpoint (`PROPERTY_POP_CK`).
pub const POP_CK: &str = "POP_CK";
/// `PROPERTY_POP_CK_OFFSET`.
pub const POP_CK_OFFSET: &str = "POP_CK_OFFSET";
/// First pop time (`PROPERTY_FIRST_POP_TIME`).
pub const FIRST_POP_TIME: &str = "1ST_POP_TIME";
/// Sharding key of an ordered message (`PROPERTY_SHARDING_KEY`).
pub const SHARDING_KEY: &str = "__SHARDINGKEY";
/// `PROPERTY_FORWARD_QUEUE_ID`.
pub const FORWARD_QUEUE_ID: &str = "PROPERTY_FORWARD_QUEUE_ID";
/// `PROPERTY_REDIRECT`.
pub const REDIRECT: &str = "REDIRECT";
/// Light message queues to dispatch to (`PROPERTY_INNER_MULTI_DISPATCH`).
pub const INNER_MULTI_DISPATCH: &str = "INNER_MULTI_DISPATCH";
/// `PROPERTY_INNER_MULTI_QUEUE_OFFSET`.
pub const INNER_MULTI_QUEUE_OFFSET: &str = "INNER_MULTI_QUEUE_OFFSET";
/// `PROPERTY_TRACE_CONTEXT`.
pub const TRACE_CONTEXT: &str = "TRACE_CONTEXT";
/// The lite topic of a message sent to a lite parent topic (RocketMQ 5.5,
/// `PROPERTY_LITE_TOPIC`).
pub const LITE_TOPIC: &str = "__LITE_TOPIC";
/// Priority of a message (RocketMQ 5.4, `PROPERTY_PRIORITY`): a number >= 0.
pub const PRIORITY: &str = "_SYS_MSG_PRIORITY_";
/// Timer message: delay in seconds (`PROPERTY_TIMER_DELAY_SEC`).
pub const TIMER_DELAY_SEC: &str = "TIMER_DELAY_SEC";
/// Timer message: absolute delivery time in ms (`PROPERTY_TIMER_DELIVER_MS`).
pub const TIMER_DELIVER_MS: &str = "TIMER_DELIVER_MS";
/// Timer message: delay in ms (`PROPERTY_TIMER_DELAY_MS`).
pub const TIMER_DELAY_MS: &str = "TIMER_DELAY_MS";
/// `PROPERTY_TIMER_ENQUEUE_MS`.
pub const TIMER_ENQUEUE_MS: &str = "TIMER_ENQUEUE_MS";
/// `PROPERTY_TIMER_DEQUEUE_MS`.
pub const TIMER_DEQUEUE_MS: &str = "TIMER_DEQUEUE_MS";
/// `PROPERTY_TIMER_ROLL_TIMES`.
pub const TIMER_ROLL_TIMES: &str = "TIMER_ROLL_TIMES";
/// `PROPERTY_TIMER_OUT_MS`.
pub const TIMER_OUT_MS: &str = "TIMER_OUT_MS";
/// `PROPERTY_TIMER_DEL_UNIQKEY`.
pub const TIMER_DEL_UNIQKEY: &str = "TIMER_DEL_UNIQKEY";
/// `PROPERTY_TIMER_DELAY_LEVEL`.
pub const TIMER_DELAY_LEVEL: &str = "TIMER_DELAY_LEVEL";
/// Born host set by proxies (`PROPERTY_BORN_HOST`).
pub const BORN_HOST: &str = "__BORNHOST";
/// `PROPERTY_BORN_TIMESTAMP`.
pub const BORN_TIMESTAMP: &str = "BORN_TIMESTAMP";
/// Original topic of a dead-lettered message (`PROPERTY_DLQ_ORIGIN_TOPIC`).
pub const DLQ_ORIGIN_TOPIC: &str = "DLQ_ORIGIN_TOPIC";
/// Original message id of a dead-lettered message (`PROPERTY_DLQ_ORIGIN_MESSAGE_ID`).
pub const DLQ_ORIGIN_MESSAGE_ID: &str = "DLQ_ORIGIN_MESSAGE_ID";
/// CRC32 appended to stored properties when enabled (`PROPERTY_CRC32`).
pub const CRC32: &str = "__CRC32#";

/// Text bytes a decode reserves beyond the string it reads.
const ADDED_TEXT_BYTES: usize = 96;
/// Entries a decode reserves (a sent message carries a handful).
const ENTRIES_INITIAL: usize = 8;

/// Above this many entries, decoding indexes names with a hash map instead
/// of scanning, so a hostile properties string stays linear.
const LINEAR_SCAN_ENTRIES_MAX: usize = 16;

/// An ordered set of message properties. Small and linear: a message has a
/// handful of properties, so a vector beats a map.
///
/// Every name and value lives in one string (`text`), each entry holding
/// the byte ranges of its name and value: decoding costs two allocations
/// instead of two per property (this runs for every message sent). A
/// replaced or removed value leaves its old bytes behind until the text is
/// compacted.
#[derive(Clone, Default)]
pub struct Properties {
    text: String,
    entries: Vec<Entry>,
}

/// Byte ranges of one property's name and value inside [`Properties::text`].
#[derive(Clone, Copy)]
struct Entry {
    name: (u32, u32),
    value: (u32, u32),
}

/// Equal when both hold the same properties in the same order.
impl PartialEq for Properties {
    fn eq(&self, other: &Self) -> bool {
        self.iter().eq(other.iter())
    }
}

impl Eq for Properties {}

impl std::fmt::Debug for Properties {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl Properties {
    pub fn new() -> Self {
        Self::default()
    }

    /// Parses the wire/disk form. Never fails; see the module doc.
    pub fn decode(bytes: &[u8]) -> Self {
        // The separators are ASCII, so replacing invalid UTF-8 in the whole
        // string replaces it in each name and value alike (and a valid
        // string is validated once, not twice per entry).
        Self::decode_str(&String::from_utf8_lossy(bytes))
    }

    /// Parses a properties string (e.g. the `properties` send header field).
    pub fn decode_str(text: &str) -> Self {
        // Room for what a broker adds to a sent message's properties
        // (UNIQ_KEY, CLUSTER) without growing either vector again.
        let mut properties = Properties {
            text: String::with_capacity(text.len() + ADDED_TEXT_BYTES),
            entries: Vec::with_capacity(ENTRIES_INITIAL),
        };
        let mut index = HashMap::new();
        for segment in text.split(PROPERTY_SEPARATOR as char) {
            let Some((name, value)) = segment.split_once(NAME_VALUE_SEPARATOR as char) else {
                continue;
            };
            if !name.is_empty() && !value.is_empty() {
                properties.decoded(&mut index, name, value);
            }
        }
        properties
    }

    /// One decoded pair; a later duplicate wins. `index` (name to position)
    /// is built only past [`LINEAR_SCAN_ENTRIES_MAX`] entries.
    fn decoded(&mut self, index: &mut HashMap<String, usize>, name: &str, value: &str) {
        if self.entries.len() < LINEAR_SCAN_ENTRIES_MAX && index.is_empty() {
            self.insert(name, value);
            return;
        }
        if index.is_empty() {
            for (i, (known, _)) in self.iter().enumerate() {
                index.insert(known.to_owned(), i);
            }
        }
        match index.get(name) {
            Some(&i) => self.set_value(i, value),
            None => {
                index.insert(name.to_owned(), self.entries.len());
                self.push(name, value);
            }
        }
    }

    fn slice(&self, (start, end): (u32, u32)) -> &str {
        &self.text[start as usize..end as usize]
    }

    /// Appends `piece` to the text, returning its range.
    fn push_text(&mut self, piece: &str) -> (u32, u32) {
        let start = self.text.len();
        self.text.push_str(piece);
        let end = self.text.len();
        assert!(end <= u32::MAX as usize, "properties text over 4 GiB");
        (start as u32, end as u32)
    }

    fn push(&mut self, name: &str, value: &str) {
        let name = self.push_text(name);
        let value = self.push_text(value);
        self.entries.push(Entry { name, value });
    }

    fn set_value(&mut self, index: usize, value: &str) {
        self.entries[index].value = self.push_text(value);
        self.compact_if_sparse();
    }

    fn position(&self, name: &str) -> Option<usize> {
        self.entries
            .iter()
            .position(|entry| self.slice(entry.name) == name)
    }

    /// Rewrites the text without the bytes of replaced or removed values
    /// once they make up most of it.
    fn compact_if_sparse(&mut self) {
        let live: usize = self.encoded_len();
        if self.text.len() <= 2 * live + 256 {
            return;
        }
        let old = std::mem::take(self);
        self.text.reserve(live);
        self.entries.reserve(old.entries.len());
        for (name, value) in old.iter() {
            self.push(name, value);
        }
    }

    /// Bytes [`Properties::encode`] writes.
    pub fn encoded_len(&self) -> usize {
        self.iter().map(|(k, v)| k.len() + v.len() + 2).sum()
    }

    /// Appends `name\x01value\x02` for every entry, in order. Names and
    /// values must not contain `\x01` or `\x02` (see [`is_valid_text`]).
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.reserve(self.encoded_len());
        for (name, value) in self.iter() {
            encode_entry(out, name, value);
        }
    }

    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.encoded_len());
        self.encode(&mut out);
        out
    }

    /// The encoded form as text (what the send header's `properties` holds).
    pub fn to_encoded_string(&self) -> String {
        let mut out = String::with_capacity(self.encoded_len());
        for (name, value) in self.iter() {
            out.push_str(name);
            out.push(NAME_VALUE_SEPARATOR as char);
            out.push_str(value);
            out.push(PROPERTY_SEPARATOR as char);
        }
        out
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.entries
            .iter()
            .map(|entry| (self.slice(entry.name), self.slice(entry.value)))
    }

    pub fn get(&self, name: &str) -> Option<&str> {
        self.position(name)
            .map(|index| self.slice(self.entries[index].value))
    }

    pub fn contains(&self, name: &str) -> bool {
        self.position(name).is_some()
    }

    /// Sets `name` to `value`, keeping the position of an earlier value;
    /// returns the earlier value.
    pub fn insert(&mut self, name: impl AsRef<str>, value: impl AsRef<str>) -> Option<String> {
        let (name, value) = (name.as_ref(), value.as_ref());
        match self.position(name) {
            Some(index) => {
                let old = self.slice(self.entries[index].value).to_owned();
                self.set_value(index, value);
                Some(old)
            }
            None => {
                self.push(name, value);
                None
            }
        }
    }

    pub fn remove(&mut self, name: &str) -> Option<String> {
        let index = self.position(name)?;
        let entry = self.entries.remove(index);
        let old = self.slice(entry.value).to_owned();
        if self.entries.is_empty() {
            self.text.clear();
        } else {
            self.compact_if_sparse();
        }
        Some(old)
    }

    /// The `TAGS` property.
    pub fn tags(&self) -> Option<&str> {
        self.get(TAGS)
    }

    /// The `KEYS` entries (space separated, empty ones skipped).
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.get(KEYS)
            .unwrap_or("")
            .split(KEY_SEPARATOR)
            .filter(|k| !k.is_empty())
    }

    /// The `UNIQ_KEY` property.
    pub fn unique_key(&self) -> Option<&str> {
        self.get(UNIQ_KEY)
    }

    /// The `DELAY` level, when present and numeric.
    pub fn delay_level(&self) -> Option<i32> {
        self.get(DELAY).and_then(|v| v.trim().parse().ok())
    }
}

/// The value of `name` in an encoded properties string, read in place:
/// the same answer as `Properties::decode(bytes).get(name)` (the last
/// non-empty value of that name; invalid UTF-8 replaced) without building
/// the map. For readers that need one property of many records.
pub fn find<'a>(bytes: &'a [u8], name: &str) -> Option<Cow<'a, str>> {
    let [found] = find_each(bytes, [name]);
    found
}

/// [`find`] for several names in one pass over the string: the index feed
/// reads `KEYS` and `UNIQ_KEY` of every stored message, and two passes
/// cost 2.9% of a saturated send profile.
pub fn find_each<'a, const N: usize>(
    bytes: &'a [u8],
    names: [&str; N],
) -> [Option<Cow<'a, str>>; N] {
    let mut found: [Option<&'a [u8]>; N] = [None; N];
    for segment in bytes.split(|b| *b == PROPERTY_SEPARATOR) {
        for (name, slot) in names.iter().zip(found.iter_mut()) {
            let value = segment
                .strip_prefix(name.as_bytes())
                .and_then(|rest| rest.strip_prefix(&[NAME_VALUE_SEPARATOR]));
            if let Some(value) = value.filter(|v| !v.is_empty() && !name.is_empty()) {
                *slot = Some(value);
            }
        }
    }
    found.map(|value| value.map(String::from_utf8_lossy))
}

impl FromIterator<(String, String)> for Properties {
    fn from_iter<T: IntoIterator<Item = (String, String)>>(iter: T) -> Self {
        let mut properties = Properties::new();
        for (k, v) in iter {
            properties.insert(k, v);
        }
        properties
    }
}

/// Appends one `name\x01value\x02` entry.
pub fn encode_entry(out: &mut Vec<u8>, name: &str, value: &str) {
    out.extend_from_slice(name.as_bytes());
    out.push(NAME_VALUE_SEPARATOR);
    out.extend_from_slice(value.as_bytes());
    out.push(PROPERTY_SEPARATOR);
}

/// Whether `text` can be a property name or value: non-empty and free of
/// the two separator bytes.
pub fn is_valid_text(text: &str) -> bool {
    !text.is_empty()
        && !text
            .bytes()
            .any(|b| b == NAME_VALUE_SEPARATOR || b == PROPERTY_SEPARATOR)
}

/// Java's `String.hashCode()` over the UTF-16 code units of `text`.
pub fn java_string_hash(text: &str) -> i32 {
    text.encode_utf16()
        .fold(0i32, |h, unit| h.wrapping_mul(31).wrapping_add(unit as i32))
}

/// The tag hash stored in a ConsumeQueue entry: Java's `String.hashCode()` of
/// the tag, widened to a long (`MessageExtBrokerInner.tagsString2tagsCode`).
pub fn tags_code(tags: &str) -> i64 {
    java_string_hash(tags) as i64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_like_java() {
        let p = Properties::decode(
            b"TAGS\x01tagA\x02KEYS\x01k1 k2\x02\x02bad\x02\x01v\x02k\x01\x02UNIQ_KEY\x01u",
        );
        assert_eq!(p.len(), 3);
        assert_eq!(p.tags(), Some("tagA"));
        assert_eq!(p.keys().collect::<Vec<_>>(), vec!["k1", "k2"]);
        assert_eq!(p.unique_key(), Some("u"));
        let dup = Properties::decode(b"a\x011\x02b\x012\x02a\x013\x02");
        assert_eq!(dup.iter().collect::<Vec<_>>(), vec![("a", "3"), ("b", "2")]);
        let value_with_sep = Properties::decode(b"a\x01x\x01y\x02");
        assert_eq!(value_with_sep.get("a"), Some("x\x01y"));
    }

    #[test]
    fn find_answers_as_decode_does() {
        let cases: [&[u8]; 6] = [
            b"TAGS\x01tagA\x02KEYS\x01k1 k2\x02\x02bad\x02\x01v\x02k\x01\x02UNIQ_KEY\x01u",
            b"KEYS\x011\x02KEYS\x01\x02KEYS\x013\x02KEYSX\x014\x02",
            b"KEYS\x01x\x01y\x02UNIQ_KEY\x01\xff\xfeu\x02",
            b"\xffKEYS\x01a\x02KEYS\x01b\xff",
            b"",
            b"KEYS",
        ];
        for bytes in cases {
            let decoded = Properties::decode(bytes);
            for name in [KEYS, UNIQ_KEY, TAGS, "k", ""] {
                assert_eq!(
                    find(bytes, name).as_deref(),
                    decoded.get(name),
                    "{name} in {bytes:?}"
                );
            }
            let [keys, uniq, tags] = find_each(bytes, [KEYS, UNIQ_KEY, TAGS]);
            assert_eq!(keys.as_deref(), decoded.get(KEYS), "{bytes:?}");
            assert_eq!(uniq.as_deref(), decoded.get(UNIQ_KEY), "{bytes:?}");
            assert_eq!(tags.as_deref(), decoded.get(TAGS), "{bytes:?}");
        }
    }

    #[test]
    fn many_duplicates_keep_last_value() {
        let mut text = Vec::new();
        for round in 0..3 {
            for i in 0..100 {
                text.extend_from_slice(format!("k{i}\x01v{round}\x02").as_bytes());
            }
        }
        let p = Properties::decode(&text);
        assert_eq!(p.len(), 100);
        assert_eq!(p.get("k0"), Some("v2"));
        assert_eq!(p.get("k99"), Some("v2"));
        assert_eq!(p.iter().next(), Some(("k0", "v2")));
    }

    #[test]
    fn encode_insert_remove() {
        let mut p = Properties::new();
        assert_eq!(p.insert(TAGS, "a"), None);
        p.insert(WAIT, "true");
        assert_eq!(p.insert(TAGS, "b"), Some("a".to_string()));
        assert_eq!(p.to_bytes(), b"TAGS\x01b\x02WAIT\x01true\x02".to_vec());
        assert_eq!(p.encoded_len(), p.to_bytes().len());
        assert_eq!(p.to_encoded_string().as_bytes(), &p.to_bytes()[..]);
        assert_eq!(p.remove(TAGS), Some("b".to_string()));
        assert_eq!(p.remove(TAGS), None);
        assert_eq!(p.to_bytes(), b"WAIT\x01true\x02".to_vec());
    }

    /// Replacing and removing values keeps the same answers as a plain
    /// list of pairs while the shared text is compacted under it.
    #[test]
    fn churn_matches_a_list_of_pairs() {
        let mut properties = Properties::new();
        let mut model: Vec<(String, String)> = Vec::new();
        for step in 0..2_000u32 {
            let name = format!("n{}", step % 7);
            let value = format!("v{step}-{}", "x".repeat((step % 50) as usize));
            if step % 5 == 4 {
                let expected = model
                    .iter()
                    .position(|(k, _)| *k == name)
                    .map(|i| model.remove(i).1);
                assert_eq!(properties.remove(&name), expected);
            } else {
                let expected = match model.iter_mut().find(|(k, _)| *k == name) {
                    Some(entry) => Some(std::mem::replace(&mut entry.1, value.clone())),
                    None => {
                        model.push((name.clone(), value.clone()));
                        None
                    }
                };
                assert_eq!(properties.insert(&name, &value), expected);
            }
            let pairs: Vec<(&str, &str)> = properties.iter().collect();
            let expected: Vec<(&str, &str)> = model
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str()))
                .collect();
            assert_eq!(pairs, expected, "step {step}");
            assert!(properties.text.len() <= 2 * properties.encoded_len() + 256 + 64);
        }
        assert_eq!(Properties::decode(&properties.to_bytes()), properties);
    }

    #[test]
    fn java_hash_code() {
        // Values of "x".hashCode() in Java.
        assert_eq!(tags_code(""), 0);
        assert_eq!(tags_code("a"), 97);
        assert_eq!(tags_code("TagA"), 2_598_919);
        assert_eq!(tags_code("hello world"), 1_794_106_052);
        assert_eq!(tags_code("TagA || TagB"), 1_359_775_119);
        // A well-known Java string whose hashCode() is Integer.MIN_VALUE.
        assert_eq!(tags_code("polygenelubricants"), -2_147_483_648);
        // Outside the BMP: two UTF-16 units (0xD83D, 0xDE00).
        assert_eq!(tags_code("\u{1F600}"), 0xD83D * 31 + 0xDE00);
        assert_eq!(tags_code("é"), 0xE9);
    }
}
