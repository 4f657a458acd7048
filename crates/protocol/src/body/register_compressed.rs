//! The compressed REGISTER_BROKER body (header `compressed=true`, RocketMQ
//! `RegisterBrokerBody.encode(true)` / `decode`): a zlib stream holding,
//! with every length and count a big-endian `i32`:
//!
//! ```text
//! len, DataVersion JSON
//! topic count, then per topic: len, "name read write perm filterType attrsJson"
//! len, filter server list JSON (array of strings)
//! [brokers >= 5.0] mapping count, then per mapping: len, TopicQueueMappingInfo JSON
//! ```
//!
//! The topic line carries no `topicSysFlag` or `order`: they decode as 0 and
//! false, as in RocketMQ. Everything is bounded: the inflated size, each
//! length and each count; bad input is a [`CompressedBodyError`].

use std::collections::BTreeMap;
use std::io::Read;

use super::{DataVersion, RegisterBrokerBody, TopicConfig};

/// Largest inflated body accepted.
pub const INFLATED_BYTES_MAX: usize = 64 * 1024 * 1024;
/// Most topic configs in one registration.
pub const TOPIC_COUNT_MAX: usize = 1_000_000;
/// Most topic queue mapping entries in one registration.
pub const QUEUE_MAPPING_COUNT_MAX: usize = 1_000_000;
/// Longest single length-prefixed item (DataVersion, topic line, mapping).
pub const ITEM_BYTES_MAX: usize = 1024 * 1024;
/// Longest filter server list JSON.
pub const FILTER_SERVERS_BYTES_MAX: usize = 4 * 1024 * 1024;

/// The filter types a topic line may name (`TopicFilterType`).
const TOPIC_FILTER_TYPES: [&str; 2] = ["SINGLE_TAG", "MULTI_TAG"];
/// Separator of a topic line's fields (`TopicConfig.SEPARATOR`).
const TOPIC_FIELD_SEPARATOR: char = ' ';
/// Fields of a topic line before the optional attributes JSON.
const TOPIC_FIELDS_REQUIRED: usize = 5;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum CompressedBodyError {
    #[error("not a valid zlib stream: {0}")]
    Inflate(String),
    #[error("inflates to more than {INFLATED_BYTES_MAX} bytes")]
    TooLarge,
    #[error("ends early while reading the {0}")]
    Truncated(&'static str),
    #[error("{what} length {len} is negative or above {max}")]
    BadLength {
        what: &'static str,
        len: i32,
        max: usize,
    },
    #[error("{what} count {count} is negative or above {max}")]
    BadCount {
        what: &'static str,
        count: i32,
        max: usize,
    },
    #[error("invalid data version JSON: {0}")]
    DataVersion(String),
    #[error("invalid topic config `{line}`: {reason}")]
    TopicConfig { line: String, reason: String },
}

/// Encodes `body` in the compressed form, as a Java broker's
/// `RegisterBrokerBody.encode(true)` does (no topic queue mappings: an
/// empty count). A registration of many topics stays far below the frame
/// limit this way: the JSON form of 100,000 topics is about 20 MiB.
pub fn encode_compressed(body: &RegisterBrokerBody) -> Vec<u8> {
    let mut plain = Vec::new();
    let item = |plain: &mut Vec<u8>, bytes: &[u8]| {
        plain.extend_from_slice(&(bytes.len() as i32).to_be_bytes());
        plain.extend_from_slice(bytes);
    };
    let wrapper = &body.topic_config_serialize_wrapper;
    let version = serde_json::to_vec(&wrapper.data_version).unwrap_or_default();
    item(&mut plain, &version);
    plain.extend_from_slice(&(wrapper.topic_config_table.len() as i32).to_be_bytes());
    for topic in wrapper.topic_config_table.values() {
        item(&mut plain, topic_line(topic).as_bytes());
    }
    let filters = serde_json::to_vec(&body.filter_server_list).unwrap_or_default();
    item(&mut plain, &filters);
    plain.extend_from_slice(&0i32.to_be_bytes());
    let mut encoder = flate2::write::ZlibEncoder::new(
        Vec::with_capacity(plain.len() / 4),
        flate2::Compression::default(),
    );
    // Writing into a Vec cannot fail.
    let _ = std::io::Write::write_all(&mut encoder, &plain);
    encoder.finish().unwrap_or_default()
}

/// `TopicConfig.encode`: `name read write perm filterType [attributesJson]`.
fn topic_line(topic: &TopicConfig) -> String {
    // A filter type the decoder (ours and Java's `TopicFilterType.valueOf`)
    // refuses would fail the whole registration: send the default instead.
    let filter_type = if TOPIC_FILTER_TYPES.contains(&topic.topic_filter_type.as_str()) {
        topic.topic_filter_type.as_str()
    } else {
        TOPIC_FILTER_TYPES[0]
    };
    let mut line = format!(
        "{} {} {} {} {}",
        topic.topic_name, topic.read_queue_nums, topic.write_queue_nums, topic.perm, filter_type
    );
    if !topic.attributes.is_empty() {
        line.push(TOPIC_FIELD_SEPARATOR);
        line.push_str(&serde_json::to_string(&topic.attributes).unwrap_or_default());
    }
    line
}

/// Decodes a compressed REGISTER_BROKER body.
pub fn decode_compressed(body: &[u8]) -> Result<RegisterBrokerBody, CompressedBodyError> {
    let inflated = inflate(body)?;
    let mut reader = Reader { rest: &inflated };

    let version_bytes = reader.item("data version", ITEM_BYTES_MAX)?;
    let data_version: DataVersion = serde_json::from_slice(version_bytes)
        .map_err(|e| CompressedBodyError::DataVersion(e.to_string()))?;

    let mut result = RegisterBrokerBody::default();
    let wrapper = &mut result.topic_config_serialize_wrapper;
    wrapper.data_version = data_version;
    let topics = reader.count("topic", TOPIC_COUNT_MAX)?;
    for _ in 0..topics {
        let line = reader.item("topic config", ITEM_BYTES_MAX)?;
        let config = parse_topic_line(line)?;
        wrapper
            .topic_config_table
            .insert(config.topic_name.clone(), config);
    }

    let filter_json = reader.item("filter server list", FILTER_SERVERS_BYTES_MAX)?;
    // RocketMQ logs an unreadable list and carries on with none.
    result.filter_server_list = serde_json::from_slice::<Option<Vec<String>>>(filter_json)
        .ok()
        .flatten()
        .unwrap_or_default();

    // Brokers from 5.0 on append their topic queue mappings, which this name
    // server does not use; check the framing and skip them.
    if !reader.rest.is_empty() {
        let mappings = reader.count("topic queue mapping", QUEUE_MAPPING_COUNT_MAX)?;
        for _ in 0..mappings {
            reader.item("topic queue mapping", ITEM_BYTES_MAX)?;
        }
    }
    Ok(result)
}

fn inflate(body: &[u8]) -> Result<Vec<u8>, CompressedBodyError> {
    let mut inflated = Vec::new();
    flate2::read::ZlibDecoder::new(body)
        .take(INFLATED_BYTES_MAX as u64 + 1)
        .read_to_end(&mut inflated)
        .map_err(|e| CompressedBodyError::Inflate(e.to_string()))?;
    if inflated.len() > INFLATED_BYTES_MAX {
        return Err(CompressedBodyError::TooLarge);
    }
    Ok(inflated)
}

/// `name read write perm filterType [attributesJson]`, as
/// `TopicConfig.encode` writes it.
fn parse_topic_line(bytes: &[u8]) -> Result<TopicConfig, CompressedBodyError> {
    let line = String::from_utf8_lossy(bytes);
    let bad = |reason: String| CompressedBodyError::TopicConfig {
        line: line.chars().take(200).collect(),
        reason,
    };
    let fields: Vec<&str> = line
        .splitn(TOPIC_FIELDS_REQUIRED + 1, TOPIC_FIELD_SEPARATOR)
        .collect();
    if fields.len() < TOPIC_FIELDS_REQUIRED {
        return Err(bad(format!(
            "expected at least {TOPIC_FIELDS_REQUIRED} space-separated fields"
        )));
    }
    let number = |index: usize, name: &str| {
        fields[index]
            .parse::<i32>()
            .map_err(|e| bad(format!("{name}: {e}")))
    };
    let topic_name = fields[0];
    if topic_name.is_empty() {
        return Err(bad("empty topic name".into()));
    }
    let filter_type = fields[4];
    if !TOPIC_FILTER_TYPES.contains(&filter_type) {
        return Err(bad(format!("unknown topic filter type `{filter_type}`")));
    }
    // Like RocketMQ, attributes that do not parse are dropped.
    let attributes = fields
        .get(TOPIC_FIELDS_REQUIRED)
        .filter(|json| !json.is_empty())
        .and_then(|json| serde_json::from_str::<BTreeMap<String, String>>(json).ok())
        .unwrap_or_default();
    Ok(TopicConfig {
        topic_name: topic_name.to_string(),
        read_queue_nums: number(1, "readQueueNums")?,
        write_queue_nums: number(2, "writeQueueNums")?,
        perm: number(3, "perm")?,
        topic_filter_type: filter_type.to_string(),
        topic_sys_flag: 0,
        order: false,
        attributes,
    })
}

/// A cursor over the inflated bytes.
struct Reader<'a> {
    rest: &'a [u8],
}

impl<'a> Reader<'a> {
    fn i32(&mut self, what: &'static str) -> Result<i32, CompressedBodyError> {
        let (head, rest) = self
            .rest
            .split_first_chunk::<4>()
            .ok_or(CompressedBodyError::Truncated(what))?;
        self.rest = rest;
        Ok(i32::from_be_bytes(*head))
    }

    /// A length-prefixed item of at most `max` bytes.
    fn item(&mut self, what: &'static str, max: usize) -> Result<&'a [u8], CompressedBodyError> {
        let len = self.i32(what)?;
        let size = usize::try_from(len)
            .ok()
            .filter(|size| *size <= max)
            .ok_or(CompressedBodyError::BadLength { what, len, max })?;
        if size > self.rest.len() {
            return Err(CompressedBodyError::Truncated(what));
        }
        let (item, rest) = self.rest.split_at(size);
        self.rest = rest;
        Ok(item)
    }

    /// A count of at most `max` items, each at least a 4-byte length.
    fn count(&mut self, what: &'static str, max: usize) -> Result<usize, CompressedBodyError> {
        let count = self.i32(what)?;
        let n = usize::try_from(count)
            .ok()
            .filter(|n| *n <= max)
            .ok_or(CompressedBodyError::BadCount { what, count, max })?;
        if n.saturating_mul(4) > self.rest.len() {
            return Err(CompressedBodyError::Truncated(what));
        }
        Ok(n)
    }
}

#[cfg(test)]
#[path = "register_compressed_tests.rs"]
mod tests;
