//! `extFields`: the string map every typed header travels in.
//!
//! Java clients send every value as a string; the Apache C++ client sends some
//! as JSON numbers and booleans as "0"/"1". Decoding normalises all of them to
//! strings, and the typed getters here accept every form a real client sends.

use crate::ProtocolError;

/// The header fields of one command, in arrival order. Small and linear:
/// a header has a dozen fields, so a vector beats a hash map.
///
/// All keys and values live in one string (`text`), each entry holding the
/// byte ranges of its key and value: decoding a header costs two
/// allocations instead of two per field. Replacing or removing a value
/// leaves its old bytes behind until [`ExtFields::insert`] compacts.
#[derive(Clone, Default)]
pub struct ExtFields {
    text: String,
    entries: Vec<Entry>,
    /// One bit ([`key_bit`]) for every key pushed: a key whose bit is clear
    /// is absent, so adding a new key or asking for an absent one skips the
    /// scan of the keys (the decoder's check for a repeated key was 7% of
    /// decoding a send header). Removing a key leaves its bit set.
    key_bits: u64,
}

/// The bit of `key` in [`ExtFields::key_bits`]: from its length and its
/// first and last bytes, spread by a multiplicative hash (the fourteen
/// names of a send header take thirteen bits).
fn key_bit(key: &str) -> u64 {
    let bytes = key.as_bytes();
    let first = u32::from(bytes.first().copied().unwrap_or(0));
    let last = u32::from(bytes.last().copied().unwrap_or(0));
    let hash = (bytes.len() as u32 | first << 8 | last << 16).wrapping_mul(0x9E37_79B1);
    1 << (hash >> 26)
}

/// Bytes reserved for keys and values when the first field is added.
const TEXT_BYTES_INITIAL: usize = 256;
/// Fields reserved when the first one is added.
const ENTRIES_INITIAL: usize = 12;

/// The longest decimal i64 (`-9223372036854775808`).
pub(crate) const INT_TEXT_BYTES_MAX: usize = 20;

/// `value` in decimal, written at the end of `digits`.
pub(crate) fn int_text(value: i64, digits: &mut [u8; INT_TEXT_BYTES_MAX]) -> &str {
    let mut at = digits.len();
    let mut rest = value.unsigned_abs();
    loop {
        at -= 1;
        digits[at] = b'0' + (rest % 10) as u8;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    if value < 0 {
        at -= 1;
        digits[at] = b'-';
    }
    // Only ASCII digits and a sign were written.
    std::str::from_utf8(&digits[at..]).unwrap_or_default()
}

/// Byte ranges of one field inside [`ExtFields::text`].
#[derive(Debug, Clone, Copy)]
struct Entry {
    key_start: u32,
    key_end: u32,
    value_start: u32,
    value_end: u32,
}

/// Equal when both hold the same keys with the same values, in any order
/// (JSON headers may arrive with their keys in any order).
impl PartialEq for ExtFields {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len()
            && self
                .iter()
                .all(|(key, value)| other.get(key) == Some(value))
    }
}

impl Eq for ExtFields {}

impl std::fmt::Debug for ExtFields {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl ExtFields {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn with_capacity(count: usize) -> Self {
        Self {
            text: String::with_capacity(count * 24),
            entries: Vec::with_capacity(count),
            key_bits: 0,
        }
    }

    /// Room for `count` fields holding `text_bytes` of keys and values.
    pub fn with_text_capacity(count: usize, text_bytes: usize) -> Self {
        Self {
            text: String::with_capacity(text_bytes),
            entries: Vec::with_capacity(count),
            key_bits: 0,
        }
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Bytes of all keys and values (at least; replaced values count until
    /// the text is compacted).
    pub fn text_bytes(&self) -> usize {
        self.text.len()
    }

    fn key_of(&self, entry: &Entry) -> &str {
        &self.text[entry.key_start as usize..entry.key_end as usize]
    }

    fn value_of(&self, entry: &Entry) -> &str {
        &self.text[entry.value_start as usize..entry.value_end as usize]
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.entries
            .iter()
            .map(move |entry| (self.key_of(entry), self.value_of(entry)))
    }

    /// Whether `entry`'s key is `key`: lengths first, then bytes, without
    /// the char-boundary checks of slicing the text as `str`. Header
    /// decoding looks up every field under one or two names by scanning,
    /// so this compare is the hottest loop of a send (perf, RESULTS.md).
    fn key_is(&self, entry: &Entry, key: &str) -> bool {
        let (start, end) = (entry.key_start as usize, entry.key_end as usize);
        end - start == key.len() && self.text.as_bytes().get(start..end) == Some(key.as_bytes())
    }

    fn position(&self, key: &str) -> Option<usize> {
        if self.key_bits & key_bit(key) == 0 {
            return None;
        }
        self.entries
            .iter()
            .position(|entry| self.key_is(entry, key))
    }

    /// Appends `piece` to the text, returning its range.
    fn push_text(&mut self, piece: &str) -> (u32, u32) {
        if self.text.capacity() == 0 {
            // A typical header's keys and values, so building one does not
            // reallocate field by field.
            self.text.reserve(TEXT_BYTES_INITIAL.max(piece.len()));
        }
        let start = self.text.len();
        self.text.push_str(piece);
        let end = self.text.len();
        assert!(end <= u32::MAX as usize, "extFields text over 4 GiB");
        (start as u32, end as u32)
    }

    /// Sets `key` to `value`, replacing an earlier value.
    pub fn insert(&mut self, key: impl AsRef<str>, value: impl AsRef<str>) {
        let key = key.as_ref();
        let value = value.as_ref();
        match self.position(key) {
            Some(index) => {
                let (value_start, value_end) = self.push_text(value);
                let entry = &mut self.entries[index];
                entry.value_start = value_start;
                entry.value_end = value_end;
                self.compact_if_sparse();
            }
            None => self.push(key, value),
        }
    }

    /// Adds a field without looking for an earlier one with the same key
    /// (the decoder's fast path; a later duplicate shadows nothing, so the
    /// decoder checks for duplicates itself).
    fn push(&mut self, key: &str, value: &str) {
        if self.entries.capacity() == 0 {
            self.entries.reserve(ENTRIES_INITIAL);
        }
        self.key_bits |= key_bit(key);
        let (key_start, key_end) = self.push_text(key);
        let (value_start, value_end) = self.push_text(value);
        self.entries.push(Entry {
            key_start,
            key_end,
            value_start,
            value_end,
        });
    }

    /// Adds a field decoded from a header: a repeated key replaces the
    /// earlier value, as `insert` does.
    pub(crate) fn insert_decoded(&mut self, key: &str, value: &str) {
        if self.position(key).is_some() {
            self.insert(key, value);
        } else {
            self.push(key, value);
        }
    }

    /// Rewrites the text without the bytes of replaced or removed values
    /// once they make up most of it.
    fn compact_if_sparse(&mut self) {
        let live: usize = self
            .entries
            .iter()
            .map(|e| (e.key_end - e.key_start + e.value_end - e.value_start) as usize)
            .sum();
        if self.text.len() <= 2 * live + 256 {
            return;
        }
        let old = std::mem::take(&mut self.text);
        let entries = std::mem::take(&mut self.entries);
        self.text = String::with_capacity(live);
        self.entries = Vec::with_capacity(entries.len());
        for entry in entries {
            let key = &old[entry.key_start as usize..entry.key_end as usize];
            let value = &old[entry.value_start as usize..entry.value_end as usize];
            self.push(key, value);
        }
    }

    /// Sets `key` to `value` in decimal, formatted without allocating.
    pub fn insert_int(&mut self, key: &str, value: i64) {
        let mut digits = [0u8; INT_TEXT_BYTES_MAX];
        self.insert(key, int_text(value, &mut digits));
    }

    /// Sets `key` only when `value` is present.
    pub fn insert_opt<V: ToString>(&mut self, key: &str, value: Option<V>) {
        if let Some(value) = value {
            self.insert(key, value.to_string());
        }
    }

    pub fn remove(&mut self, key: &str) -> Option<String> {
        let index = self.position(key)?;
        let entry = self.entries.remove(index);
        let value = self.value_of(&entry).to_owned();
        if self.entries.is_empty() {
            self.text.clear();
        }
        Some(value)
    }

    pub fn get(&self, key: &str) -> Option<&str> {
        let index = self.position(key)?;
        Some(self.value_of(&self.entries[index]))
    }

    /// The first key present among `keys` (V1 long name, V2 short name).
    pub fn get_any(&self, keys: &[&str]) -> Option<&str> {
        keys.iter().find_map(|key| self.get(key))
    }

    pub fn required(&self, key: &'static str) -> Result<&str, ProtocolError> {
        self.get(key).ok_or(ProtocolError::MissingField(key))
    }

    /// An integer field; `None` when absent or empty.
    pub fn get_i64(&self, key: &'static str) -> Result<Option<i64>, ProtocolError> {
        match self.get(key) {
            None => Ok(None),
            Some(value) => parse_i64(key, value),
        }
    }

    pub fn get_i32(&self, key: &'static str) -> Result<Option<i32>, ProtocolError> {
        match self.get_i64(key)? {
            None => Ok(None),
            Some(value) => {
                i32::try_from(value)
                    .map(Some)
                    .map_err(|_| ProtocolError::InvalidField {
                        field: key,
                        value: value.to_string(),
                    })
            }
        }
    }

    pub fn required_i64(&self, key: &'static str) -> Result<i64, ProtocolError> {
        self.get_i64(key)?.ok_or(ProtocolError::MissingField(key))
    }

    pub fn required_i32(&self, key: &'static str) -> Result<i32, ProtocolError> {
        self.get_i32(key)?.ok_or(ProtocolError::MissingField(key))
    }

    /// A boolean read as Java's `Boolean.parseBoolean` does: only "true" (any
    /// case) is true; "1", "0", "" and anything else are false.
    pub fn get_bool(&self, key: &str) -> Option<bool> {
        self.get(key)
            .map(|value| value.trim().eq_ignore_ascii_case("true"))
    }
}

/// Parses an integer the way clients write them: plain decimal, possibly with
/// surrounding whitespace, or a JSON float with no fraction ("4.0").
pub fn parse_i64(field: &'static str, value: &str) -> Result<Option<i64>, ProtocolError> {
    if let Some(number) = plain_decimal(value) {
        return Ok(Some(number));
    }
    let trimmed = value.trim();
    if trimmed.is_empty() || trimmed == "null" {
        return Ok(None);
    }
    if let Ok(number) = trimmed.parse::<i64>() {
        return Ok(Some(number));
    }
    match trimmed.parse::<f64>() {
        Ok(float) if float.fract() == 0.0 && float.abs() < 9.0e18 => Ok(Some(float as i64)),
        _ => Err(ProtocolError::InvalidField {
            field,
            value: value.to_string(),
        }),
    }
}

/// The value of a plain decimal of up to 18 digits with an optional minus
/// sign (what clients send for nearly every integer field), read without
/// the Unicode trim and general parse of [`parse_i64`]'s slow path, which
/// answers the same for such text.
fn plain_decimal(value: &str) -> Option<i64> {
    const DIGITS_MAX: usize = 18;
    let (negative, digits) = match value.as_bytes() {
        [b'-', rest @ ..] => (true, rest),
        all => (false, all),
    };
    if digits.is_empty() || digits.len() > DIGITS_MAX {
        return None;
    }
    let mut number: i64 = 0;
    for &digit in digits {
        if !digit.is_ascii_digit() {
            return None;
        }
        number = number * 10 + i64::from(digit - b'0');
    }
    Some(if negative { -number } else { number })
}

impl FromIterator<(String, String)> for ExtFields {
    fn from_iter<T: IntoIterator<Item = (String, String)>>(iter: T) -> Self {
        let mut fields = ExtFields::new();
        for (k, v) in iter {
            fields.insert(k, v);
        }
        fields
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn int_text_is_decimal_at_the_extremes() {
        for value in [0, 7, -7, 10, 1_700_000_000_000, i64::MAX, i64::MIN] {
            let mut digits = [0u8; INT_TEXT_BYTES_MAX];
            assert_eq!(int_text(value, &mut digits), value.to_string());
        }
        let mut fields = ExtFields::new();
        fields.insert_int("queueOffset", -42);
        assert_eq!(fields.get("queueOffset"), Some("-42"));
    }

    use super::*;

    /// Inserts, decoder inserts, removals and look-ups in a random order
    /// answer as a plain list of pairs does, with keys whose bits collide
    /// ("producerGroup" and "flag", "a" and "n") and keys never added.
    #[test]
    fn key_bits_never_hide_a_key() {
        let keys = [
            "producerGroup",
            "flag",
            "a",
            "n",
            "topic",
            "",
            "queueId",
            "absent",
        ];
        assert_eq!(key_bit("producerGroup"), key_bit("flag"));
        assert_eq!(key_bit("a"), key_bit("n"));
        let mut model: Vec<(String, String)> = Vec::new();
        let mut fields = ExtFields::new();
        let mut state = 0x2545_f491_4f6c_dd1du64;
        for step in 0..20_000u32 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let key = keys[(state % 7) as usize];
            let value = format!("v{step}");
            match (state >> 8) % 4 {
                0 => fields.insert(key, &value),
                1 => fields.insert_decoded(key, &value),
                2 => {
                    let expected = model.iter().position(|(k, _)| k == key);
                    let expected = expected.map(|index| model.remove(index).1);
                    assert_eq!(fields.remove(key), expected);
                    continue;
                }
                _ => {}
            }
            if (state >> 8) % 4 < 2 {
                match model.iter_mut().find(|(k, _)| k == key) {
                    Some(pair) => pair.1 = value,
                    None => model.push((key.to_string(), value)),
                }
            }
            for key in keys {
                let expected = model
                    .iter()
                    .find(|(k, _)| k == key)
                    .map(|(_, v)| v.as_str());
                assert_eq!(fields.get(key), expected, "step {step}, key {key:?}");
            }
            assert_eq!(fields.len(), model.len());
        }
    }

    #[test]
    fn lenient_getters() {
        let mut f = ExtFields::new();
        f.insert("queueId", "3");
        f.insert("flag", " 7 ");
        f.insert("batch", "0");
        f.insert("unitMode", "TRUE");
        f.insert("n", "4.0");
        f.insert("bad", "x1");
        assert_eq!(f.get_i32("queueId").unwrap(), Some(3));
        assert_eq!(f.get_i32("flag").unwrap(), Some(7));
        assert_eq!(f.get_i64("n").unwrap(), Some(4));
        assert_eq!(f.get_bool("batch"), Some(false));
        assert_eq!(f.get_bool("unitMode"), Some(true));
        assert!(f.get_i32("bad").is_err());
        assert_eq!(f.get_i32("missing").unwrap(), None);
        assert!(f.required("missing").is_err());
        f.insert("queueId", "5");
        assert_eq!(f.len(), 6);
        assert_eq!(f.get_any(&["e", "queueId"]), Some("5"));
    }

    #[test]
    fn plain_decimals_parse_as_the_general_path_does() {
        let cases = [
            "0",
            "7",
            "-7",
            "007",
            "-0",
            "123456789012345678",
            "-123456789012345678",
            "1234567890123456789",
            "9223372036854775807",
            "-9223372036854775808",
            "+5",
            " 5",
            "5 ",
            "-",
            "",
            "1-",
            "1.0",
            "1e3",
            "null",
            "x",
        ];
        for text in cases {
            if let Some(fast) = plain_decimal(text) {
                assert_eq!(text.trim().parse::<i64>().ok(), Some(fast), "{text:?}");
            }
            let general = parse_i64("f", text).ok().flatten();
            let slow = match text.trim() {
                "" | "null" => None,
                trimmed => trimmed
                    .parse::<i64>()
                    .ok()
                    .or_else(|| trimmed.parse::<f64>().ok().map(|f| f as i64)),
            };
            assert_eq!(general, slow, "{text:?}");
        }
    }

    #[test]
    fn replace_remove_and_compaction_keep_the_fields() {
        let mut f = ExtFields::new();
        f.insert("a", "1");
        f.insert("b", String::from("2"));
        for i in 0..1000 {
            f.insert("a", i.to_string());
        }
        assert_eq!(f.get("a"), Some("999"));
        assert_eq!(f.get("b"), Some("2"));
        assert!(f.text.len() < 1024, "replaced values are compacted away");
        assert_eq!(f.remove("a").as_deref(), Some("999"));
        assert_eq!(f.get("a"), None);
        assert_eq!(f.iter().collect::<Vec<_>>(), vec![("b", "2")]);
        let mut g = ExtFields::new();
        g.insert("b", "2");
        assert_eq!(f, g, "equality ignores the text layout");
        assert_eq!(format!("{g:?}"), r#"{"b": "2"}"#);
    }
}
