//! Typed decode/validation errors. Each maps to a RocketMQ response code so a
//! processor can answer a bad request instead of dropping the connection.

use crate::codes::response_code;

/// Everything that can be wrong with bytes or fields from the network or disk.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProtocolError {
    #[error("frame length {length_bytes} is outside 4..={max_bytes} bytes")]
    FrameLength { length_bytes: i64, max_bytes: usize },
    #[error("header length {header_bytes} exceeds frame length {frame_bytes}")]
    HeaderLength {
        header_bytes: usize,
        frame_bytes: usize,
    },
    #[error("unknown header serialize type {0}")]
    SerializeType(u8),
    #[error("invalid JSON header: {0}")]
    JsonHeader(String),
    #[error("truncated {what}: need {need_bytes} bytes, have {have_bytes}")]
    Truncated {
        what: &'static str,
        need_bytes: usize,
        have_bytes: usize,
    },
    #[error("invalid UTF-8 in {0}")]
    Utf8(&'static str),
    #[error("missing required header field `{0}`")]
    MissingField(&'static str),
    #[error("header field `{field}` has invalid value `{value}`")]
    InvalidField { field: &'static str, value: String },
    #[error("invalid topic name `{topic}`: {reason}")]
    InvalidTopic { topic: String, reason: &'static str },
    #[error("message body of {size_bytes} bytes exceeds the limit of {max_bytes} bytes")]
    MessageTooLarge { size_bytes: usize, max_bytes: usize },
    #[error("invalid record: {0}")]
    Record(String),
    #[error("invalid message id `{0}`")]
    MessageId(String),
    #[error("invalid body: {0}")]
    Body(String),
}

impl ProtocolError {
    /// The RocketMQ response code a broker or name server answers with.
    pub fn response_code(&self) -> i32 {
        match self {
            ProtocolError::InvalidTopic { .. }
            | ProtocolError::MessageTooLarge { .. }
            | ProtocolError::Record(_) => response_code::MESSAGE_ILLEGAL,
            ProtocolError::MissingField(_) | ProtocolError::InvalidField { .. } => {
                response_code::INVALID_PARAMETER
            }
            _ => response_code::SYSTEM_ERROR,
        }
    }
}
