//! How each type of header field is read from and written to `extFields`:
//! the forms real clients send, and what the Java client writes.

use crate::{ExtFields, ProtocolError};

/// One header field's type: how it is read from and written to `extFields`.
/// `'a` is the life of the `extFields` read: a `&'a str` field borrows its
/// text from them.
pub trait HeaderField<'a>: Sized {
    /// Builds the field from what was found under its names: the name that
    /// matched and its value, or `None`. `key` names the field in errors.
    fn from_found(
        found: Option<(&'static str, &'a str)>,
        key: &'static str,
    ) -> Result<Self, ProtocolError>;
    /// Writes the field under `key` (omitted when absent).
    fn write(&self, key: &'static str, out: &mut ExtFields);

    /// Reads the field from the first present key among `keys`.
    fn read(fields: &'a ExtFields, keys: &[&'static str]) -> Result<Self, ProtocolError> {
        Self::from_found(raw(fields, keys), keys[0])
    }
}

fn raw<'a>(fields: &'a ExtFields, keys: &[&'static str]) -> Option<(&'static str, &'a str)> {
    keys.iter()
        .find_map(|key| fields.get(key).map(|value| (*key, value)))
}

fn parse_int(key: &'static str, value: &str) -> Result<Option<i64>, ProtocolError> {
    crate::ext::parse_i64(key, value)
}

impl<'a> HeaderField<'a> for String {
    fn from_found(
        found: Option<(&'static str, &'a str)>,
        key: &'static str,
    ) -> Result<Self, ProtocolError> {
        found
            .map(|(_, v)| v.to_string())
            .ok_or(ProtocolError::MissingField(key))
    }
    fn write(&self, key: &'static str, out: &mut ExtFields) {
        out.insert(key, self);
    }
}

impl<'a> HeaderField<'a> for Option<String> {
    fn from_found(
        found: Option<(&'static str, &'a str)>,
        _key: &'static str,
    ) -> Result<Self, ProtocolError> {
        Ok(found.map(|(_, v)| v.to_string()))
    }
    fn write(&self, key: &'static str, out: &mut ExtFields) {
        if let Some(value) = self {
            out.insert(key, value);
        }
    }
}

impl<'a> HeaderField<'a> for Option<i64> {
    fn from_found(
        found: Option<(&'static str, &'a str)>,
        _key: &'static str,
    ) -> Result<Self, ProtocolError> {
        match found {
            None => Ok(None),
            Some((name, value)) => parse_int(name, value),
        }
    }
    fn write(&self, key: &'static str, out: &mut ExtFields) {
        if let Some(value) = self {
            out.insert_int(key, *value);
        }
    }
}

impl<'a> HeaderField<'a> for i64 {
    fn from_found(
        found: Option<(&'static str, &'a str)>,
        key: &'static str,
    ) -> Result<Self, ProtocolError> {
        <Option<i64> as HeaderField<'a>>::from_found(found, key)?
            .ok_or(ProtocolError::MissingField(key))
    }
    fn write(&self, key: &'static str, out: &mut ExtFields) {
        out.insert_int(key, *self);
    }
}

impl<'a> HeaderField<'a> for Option<i32> {
    fn from_found(
        found: Option<(&'static str, &'a str)>,
        key: &'static str,
    ) -> Result<Self, ProtocolError> {
        match <Option<i64> as HeaderField<'a>>::from_found(found, key)? {
            None => Ok(None),
            Some(wide) => i32::try_from(wide)
                .map(Some)
                .map_err(|_| ProtocolError::InvalidField {
                    field: key,
                    value: wide.to_string(),
                }),
        }
    }
    fn write(&self, key: &'static str, out: &mut ExtFields) {
        if let Some(value) = self {
            out.insert_int(key, i64::from(*value));
        }
    }
}

impl<'a> HeaderField<'a> for i32 {
    fn from_found(
        found: Option<(&'static str, &'a str)>,
        key: &'static str,
    ) -> Result<Self, ProtocolError> {
        <Option<i32> as HeaderField<'a>>::from_found(found, key)?
            .ok_or(ProtocolError::MissingField(key))
    }
    fn write(&self, key: &'static str, out: &mut ExtFields) {
        out.insert_int(key, i64::from(*self));
    }
}

impl<'a> HeaderField<'a> for bool {
    fn from_found(
        found: Option<(&'static str, &'a str)>,
        _key: &'static str,
    ) -> Result<Self, ProtocolError> {
        Ok(found.is_some_and(|(_, v)| v.trim().eq_ignore_ascii_case("true")))
    }
    fn write(&self, key: &'static str, out: &mut ExtFields) {
        out.insert(key, if *self { "true" } else { "false" });
    }
}

/// A flag that may be absent (an older sender): `None` then, as Java's
/// `Boolean` reads it; present, `true` only when it says so.
impl<'a> HeaderField<'a> for Option<bool> {
    fn from_found(
        found: Option<(&'static str, &'a str)>,
        _key: &'static str,
    ) -> Result<Self, ProtocolError> {
        Ok(found.map(|(_, v)| v.trim().eq_ignore_ascii_case("true")))
    }
    fn write(&self, key: &'static str, out: &mut ExtFields) {
        if let Some(flag) = self {
            out.insert(key, if *flag { "true" } else { "false" });
        }
    }
}

impl<'a> HeaderField<'a> for &'a str {
    fn from_found(
        found: Option<(&'static str, &'a str)>,
        key: &'static str,
    ) -> Result<Self, ProtocolError> {
        found
            .map(|(_, v)| v)
            .ok_or(ProtocolError::MissingField(key))
    }
    fn write(&self, key: &'static str, out: &mut ExtFields) {
        out.insert(key, self);
    }
}

impl<'a> HeaderField<'a> for Option<&'a str> {
    fn from_found(
        found: Option<(&'static str, &'a str)>,
        _key: &'static str,
    ) -> Result<Self, ProtocolError> {
        Ok(found.map(|(_, v)| v))
    }
    fn write(&self, key: &'static str, out: &mut ExtFields) {
        if let Some(value) = self {
            out.insert(key, value);
        }
    }
}
