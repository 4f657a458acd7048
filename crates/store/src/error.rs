//! Typed store errors and the RocketMQ response code each maps to, plus
//! the one way every store error enum (this one, the IndexFile's and the
//! timer store's) records a failed I/O call: [`IoContext::io_context`].

use std::path::Path;

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
    /// The store's file system has no room for what a write needs (ENOSPC
    /// on allocating a segment or a queue file, or its used share above
    /// `diskSpaceWarningLevelRatio`). Nothing was written; writes resume by
    /// themselves once space is back.
    #[error("the broker's disk is full: {0}")]
    DiskFull(String),
    #[error("append of {size_bytes} bytes exceeds the limit of {max_bytes} bytes")]
    TooLarge { size_bytes: usize, max_bytes: usize },
    #[error("invalid record handed to the store: {0}")]
    InvalidRecord(String),
    #[error("corrupt store data: {0}")]
    Corrupt(String),
    /// An offloaded segment's object is definitely missing from object
    /// storage or damaged there (not a store that is down or slow).
    #[error("an offloaded segment's object is missing from object storage or damaged: {0}")]
    OffloadedGone(String),
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
    /// The RocketMQ response code a broker answers a send with.
    pub fn response_code(&self) -> i32 {
        match self {
            StoreError::Unavailable(_) | StoreError::DiskFull(_) => {
                response_code::SERVICE_NOT_AVAILABLE
            }
            StoreError::TooLarge { .. } | StoreError::InvalidRecord(_) => {
                response_code::MESSAGE_ILLEGAL
            }
            _ => response_code::SYSTEM_ERROR,
        }
    }
}

impl StoreError {
    /// Whether this failure is a lack of disk space (and passes when space
    /// is freed), as opposed to a broken file or device.
    pub fn is_disk_full(&self) -> bool {
        match self {
            StoreError::DiskFull(_) => true,
            StoreError::Io { kind, .. } => is_no_space(*kind),
            _ => false,
        }
    }
}

/// Whether an I/O error means the file system has no room left (ENOSPC,
/// or the user's quota).
pub(crate) fn is_no_space(kind: std::io::ErrorKind) -> bool {
    matches!(
        kind,
        std::io::ErrorKind::StorageFull | std::io::ErrorKind::QuotaExceeded
    )
}

/// A failed I/O call with what the store was doing and on which file. The
/// three store error enums have the same `Io` variant and take this one
/// value, so the mapping from `std::io::Error` is written once.
#[derive(Debug)]
pub(crate) struct IoFailure {
    op: &'static str,
    path: String,
    kind: std::io::ErrorKind,
    message: String,
}

impl IoFailure {
    /// `err` while doing `op` on `path` (a file, or a name like `segment 0`).
    pub(crate) fn new(op: &'static str, path: impl AsRef<Path>, err: std::io::Error) -> Self {
        IoFailure {
            op,
            path: path.as_ref().display().to_string(),
            kind: err.kind(),
            message: err.to_string(),
        }
    }

    /// The fields of an `Io` variant: `(op, path, kind, message)`.
    pub(crate) fn into_parts(self) -> (&'static str, String, std::io::ErrorKind, String) {
        (self.op, self.path, self.kind, self.message)
    }
}

/// Attaches the operation and the path to an I/O result, for `?` in a
/// function returning any store error enum:
/// `fs::File::open(&path).io_context("open segment", &path)?`.
pub(crate) trait IoContext<T> {
    fn io_context(self, op: &'static str, path: impl AsRef<Path>) -> Result<T, IoFailure>;
}

impl<T> IoContext<T> for std::io::Result<T> {
    fn io_context(self, op: &'static str, path: impl AsRef<Path>) -> Result<T, IoFailure> {
        self.map_err(|err| IoFailure::new(op, path, err))
    }
}

/// `From<IoFailure>` for a store error enum with the shared
/// `Io { op, path, kind, message }` variant.
macro_rules! from_io_failure {
    ($error:ident) => {
        impl From<$crate::error::IoFailure> for $error {
            fn from(failure: $crate::error::IoFailure) -> Self {
                let (op, path, kind, message) = failure.into_parts();
                $error::Io {
                    op,
                    path,
                    kind,
                    message,
                }
            }
        }
    };
}
pub(crate) use from_io_failure;

from_io_failure!(StoreError);
