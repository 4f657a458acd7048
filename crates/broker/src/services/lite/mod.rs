//! Lite topics (RocketMQ 5.5, RIP-83) in the broker. Messages of a lite
//! parent topic are stored in the parent's queues with their lite topic in
//! the `__LITE_TOPIC` property. A lite consumer's pops (made by the gRPC
//! endpoint, one consumer group per group and lite topic) carry Ferrocket's
//! `LITE` expression type: the pop passes only the messages of that lite
//! topic, and skips the rest, as a tag filter does.

use std::sync::Arc;

use ferrocket_protocol::codes::response_code;
use ferrocket_protocol::lite::check_lite_topic;
use ferrocket_protocol::properties::LITE_TOPIC;
use ferrocket_protocol::record::decode_record;

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

#[cfg(test)]
mod tests;
