//! Lite topics (RocketMQ 5.5, RIP-83) in the broker. Messages of a lite
//! parent topic are stored in the parent's queues with their lite topic in
//! the `__LITE_TOPIC` property. A lite consumer's pops (made by the gRPC
//! endpoint, one consumer group per group and lite topic) carry Ferrocket's
//! `LITE` expression type: the pop passes only the messages of that lite
//! topic, and skips the rest, as a tag filter does. POP_LITE_MESSAGE (a
//! proxy in cluster mode) pops a client's lite topics the same way, with
//! the subscriptions LITE_SUBSCRIPTION_CTL left in [`registry`].

pub(crate) mod registry;

use std::sync::Arc;

use bytes::BytesMut;
use ferrocket_protocol::codes::response_code;
use ferrocket_protocol::lite::check_lite_topic;
use ferrocket_protocol::properties::{INNER_MULTI_DISPATCH, INNER_MULTI_QUEUE_OFFSET, LITE_TOPIC};
use ferrocket_protocol::record::{decode_record, NewRecord};

use crate::error::Reject;

/// A pop's lite filter: the messages of one lite topic. `Send + Sync`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiteFilter {
    lite_topic: Arc<str>,
}

impl LiteFilter {
    /// The filter of a pop whose expression is `lite_topic`, refused
    /// (SUBSCRIPTION_PARSE_FAILED) when that is no legal lite topic.
    pub fn parse(lite_topic: &str) -> Result<Self, Reject> {
        check_lite_topic(lite_topic)
            .map_err(|why| Reject::new(response_code::SUBSCRIPTION_PARSE_FAILED, why))?;
        Ok(Self {
            lite_topic: Arc::from(lite_topic),
        })
    }

    /// Whether the stored record (one whole record) is a message of this
    /// lite topic. A record that does not decode does not pass.
    pub fn matches_record(&self, record: &[u8]) -> bool {
        let Ok(view) = decode_record(record, false) else {
            return false;
        };
        view.properties().get(LITE_TOPIC) == Some(&*self.lite_topic)
    }
}

/// Bits of a lite position that hold the queue offset; the queue id is
/// above them.
const POSITION_OFFSET_BITS: u32 = 47;
/// Queues a lite position can name (ids below this).
pub const POSITION_QUEUES_MAX: i32 = 1 << 15;

/// Java's name for the light message queue of a lite topic
/// (`LiteUtil.toLmqName`): `%LMQ%$parent$lite`.
pub fn lmq_name(parent: &str, lite: &str) -> String {
    format!("%LMQ%${parent}${lite}")
}

/// Where a lite message lies, as one number: Java's client takes a lite
/// message's offset from `INNER_MULTI_QUEUE_OFFSET` and its queue as 0
/// (Java keeps one queue per lite topic), and hands both back in the ack.
/// Ferrocket keeps lite messages in the parent's queues, so the number
/// carries the queue id above the queue offset. `None` when either does
/// not fit.
pub fn pack_position(queue_id: i32, offset: i64) -> Option<i64> {
    let fits = (0..POSITION_QUEUES_MAX).contains(&queue_id)
        && (0..1i64 << POSITION_OFFSET_BITS).contains(&offset);
    fits.then(|| (i64::from(queue_id) << POSITION_OFFSET_BITS) | offset)
}

/// The (queue id, queue offset) of a [`pack_position`] number.
pub fn unpack_position(position: i64) -> Option<(i32, i64)> {
    if position < 0 {
        return None;
    }
    let queue_id = (position >> POSITION_OFFSET_BITS) as i32;
    let offset = position & ((1i64 << POSITION_OFFSET_BITS) - 1);
    (queue_id < POSITION_QUEUES_MAX).then_some((queue_id, offset))
}

/// Appends the stored `record` to `out` with the properties Java's client
/// reads a lite message's position from: `INNER_MULTI_DISPATCH` (its
/// light queue) and `INNER_MULTI_QUEUE_OFFSET` (`position`). False, with
/// nothing written, when the record does not decode or grows too long.
pub fn append_with_position(record: &[u8], lmq: &str, position: i64, out: &mut BytesMut) -> bool {
    let Ok(view) = decode_record(record, false) else {
        return false;
    };
    let mut properties = view.properties.to_vec();
    if !properties.is_empty() && properties.last() != Some(&2) {
        properties.push(2);
    }
    for (name, value) in [
        (INNER_MULTI_DISPATCH, lmq.to_string()),
        (INNER_MULTI_QUEUE_OFFSET, position.to_string()),
    ] {
        properties.extend_from_slice(name.as_bytes());
        properties.push(1);
        properties.extend_from_slice(value.as_bytes());
        properties.push(2);
    }
    let again = NewRecord {
        topic: view.topic,
        queue_id: view.queue_id,
        flag: view.flag,
        sys_flag: view.sys_flag,
        born_timestamp_ms: view.born_timestamp_ms,
        born_host: view.born_host,
        store_timestamp_ms: view.store_timestamp_ms,
        store_host: view.store_host,
        reconsume_times: view.reconsume_times,
        prepared_transaction_offset: view.prepared_transaction_offset,
        body: view.body,
        properties: &properties,
    };
    again
        .encode(view.queue_offset, view.physical_offset, out)
        .is_ok()
}

#[cfg(test)]
mod tests;
