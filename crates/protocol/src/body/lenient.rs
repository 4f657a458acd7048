//! Serde helpers that accept every scalar form real clients send.

use serde::{Deserialize, Deserializer};
use serde_json::Value;

fn scalar_text(value: Value) -> Option<String> {
    match value {
        Value::Null => None,
        Value::String(s) => Some(s),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        other => Some(other.to_string()),
    }
}

/// An integer given as a number or a numeric string; null means 0.
pub fn de_i64<'de, D: Deserializer<'de>>(deserializer: D) -> Result<i64, D::Error> {
    let value = Value::deserialize(deserializer)?;
    match scalar_text(value) {
        None => Ok(0),
        Some(text) => crate::ext::parse_i64("number", &text)
            .map(|n| n.unwrap_or(0))
            .map_err(serde::de::Error::custom),
    }
}

pub fn de_i32<'de, D: Deserializer<'de>>(deserializer: D) -> Result<i32, D::Error> {
    let wide = de_i64(deserializer)?;
    i32::try_from(wide).map_err(|_| serde::de::Error::custom(format!("{wide} is out of range")))
}

/// A boolean given as true/false, "true"/"false" or 1/0.
pub fn de_bool<'de, D: Deserializer<'de>>(deserializer: D) -> Result<bool, D::Error> {
    let value = Value::deserialize(deserializer)?;
    Ok(match value {
        Value::Bool(b) => b,
        Value::Number(n) => n.as_i64().is_some_and(|n| n != 0),
        Value::String(s) => s.trim().eq_ignore_ascii_case("true") || s.trim() == "1",
        _ => false,
    })
}

/// Any scalar as a string; null means empty.
pub fn de_string<'de, D: Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
    let value = Value::deserialize(deserializer)?;
    Ok(scalar_text(value).unwrap_or_default())
}
