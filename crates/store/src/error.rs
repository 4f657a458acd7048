//! Typed store errors and the RocketMQ response code each maps to.

use ferrocket_protocol::codes::response_code;

/// Everything the store can answer instead of success. Cloneable so one
/// failure can answer every request of a batch.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    #[error("invalid store configuration: {0}")]
    Config(String),
    #[error("I/O error during {op} on {path}: {message}")]
    Io {
        op: &'static str,
        path: String,
        kind: std::io::ErrorKind,
        message: String,
    },
    #[error("flushing the CommitLog failed: {0}")]
    FlushFailed(String),
    #[error("the store is not accepting writes: {0}")]
    Unavailable(String),
    #[error("append of {size_bytes} bytes exceeds the limit of {max_bytes} bytes")]
    TooLarge { size_bytes: usize, max_bytes: usize },
    #[error("invalid record handed to the store: {0}")]
    InvalidRecord(String),
    #[error("corrupt store data: {0}")]
    Corrupt(String),
    #[error("queue {topic}/{queue_id} is owned by shard {owner}, not shard {shard}")]
    NotOwner {
        topic: String,
        queue_id: i32,
        owner: usize,
        shard: usize,
    },
    #[error("invalid config file {path}: {message}")]
    ConfigFile { path: String, message: String },
}

impl StoreError {
    pub(crate) fn io(
        op: &'static str,
        path: impl AsRef<std::path::Path>,
        err: std::io::Error,
    ) -> Self {
        StoreError::Io {
            op,
            path: path.as_ref().display().to_string(),
            kind: err.kind(),
            message: err.to_string(),
        }
    }

    /// The RocketMQ response code a broker answers a send with.
    pub fn response_code(&self) -> i32 {
        match self {
            StoreError::Unavailable(_) => response_code::SERVICE_NOT_AVAILABLE,
            StoreError::TooLarge { .. } | StoreError::InvalidRecord(_) => {
                response_code::MESSAGE_ILLEGAL
            }
            _ => response_code::SYSTEM_ERROR,
        }
    }
}
