//! `extFields`: the string map every typed header travels in.
//!
//! Java clients send every value as a string; the Apache C++ client sends some
//! as JSON numbers and booleans as "0"/"1". Decoding normalises all of them to
//! strings, and the typed getters here accept every form a real client sends.

use crate::ProtocolError;

/// The header fields of one command, in arrival order. Small and linear:
/// a header has a dozen fields, so a vector beats a hash map.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExtFields {
    entries: Vec<(String, String)>,
}

impl ExtFields {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn with_capacity(count: usize) -> Self {
        Self {
            entries: Vec::with_capacity(count),
        }
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.entries.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// Sets `key` to `value`, replacing an earlier value.
    pub fn insert(&mut self, key: impl Into<String>, value: impl Into<String>) {
        let key = key.into();
        let value = value.into();
        match self.entries.iter_mut().find(|(k, _)| *k == key) {
            Some(entry) => entry.1 = value,
            None => self.entries.push((key, value)),
        }
    }

    /// Sets `key` only when `value` is present.
    pub fn insert_opt<V: ToString>(&mut self, key: &str, value: Option<V>) {
        if let Some(value) = value {
            self.insert(key, value.to_string());
        }
    }

    pub fn remove(&mut self, key: &str) -> Option<String> {
        let index = self.entries.iter().position(|(k, _)| k == key)?;
        Some(self.entries.remove(index).1)
    }

    pub fn get(&self, key: &str) -> Option<&str> {
        self.entries
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
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
    use super::*;

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
}
