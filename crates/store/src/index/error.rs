//! Typed errors of the IndexFile service.

use crate::error::StoreError;

/// Everything [`super::IndexService`] can fail with. Nothing here panics on
/// bad file contents: a damaged file is reported, never trusted blindly.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IndexError {
    #[error("invalid index configuration: {0}")]
    Config(String),
    #[error("I/O error during {op} on {path}: {message}")]
    Io {
        op: &'static str,
        path: String,
        kind: std::io::ErrorKind,
        message: String,
    },
    #[error("index file {path} has {actual_bytes} bytes, expected {expected_bytes} (slot/entry counts changed?)")]
    SizeMismatch {
        path: String,
        expected_bytes: u64,
        actual_bytes: u64,
    },
    #[error("corrupt index file {path}: {reason}")]
    Corrupt { path: String, reason: String },
    #[error("physical offset {physical_offset} must not be negative")]
    InvalidOffset { physical_offset: i64 },
}

impl IndexError {
    pub(crate) fn corrupt(path: &std::path::Path, reason: impl Into<String>) -> Self {
        IndexError::Corrupt {
            path: path.display().to_string(),
            reason: reason.into(),
        }
    }
}

crate::error::from_io_failure!(IndexError);

impl From<IndexError> for StoreError {
    fn from(err: IndexError) -> Self {
        match err {
            IndexError::Config(reason) => StoreError::Config(reason),
            IndexError::Io {
                op,
                path,
                kind,
                message,
            } => StoreError::Io {
                op,
                path,
                kind,
                message,
            },
            other => StoreError::Corrupt(other.to_string()),
        }
    }
}
