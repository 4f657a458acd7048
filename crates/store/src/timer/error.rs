//! Typed errors of the timer store.

use crate::error::StoreError;

/// Everything [`super::TimerStore`] can fail with.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TimerError {
    #[error("invalid timer configuration: {0}")]
    Config(String),
    #[error("I/O error during {op} on {path}: {message}")]
    Io {
        op: &'static str,
        path: String,
        kind: std::io::ErrorKind,
        message: String,
    },
    #[error("corrupt timer data in {path}: {reason}")]
    Corrupt { path: String, reason: String },
    /// `TIMER_DELIVER_MS` further ahead than the configured maximum delay.
    #[error("deliver time {deliver_at_ms} is more than {max_delay_ms} ms after {now_ms}")]
    TooFarInFuture {
        deliver_at_ms: i64,
        now_ms: i64,
        max_delay_ms: u64,
    },
    /// The wheel slot for this second still holds undelivered timers of
    /// another second: delivery lags `now` by more than the wheel allows.
    /// Retry once `due`/`mark_delivered` have caught up.
    #[error("timer wheel slot for second {second} still holds undelivered second {held_second}")]
    Backlogged { second: i64, held_second: i64 },
    #[error("invalid timer: {0}")]
    InvalidTimer(String),
    /// `mark_delivered` for an entry `due` never returned.
    #[error("timer entry at {deliver_at_ms} ms for offset {physical_offset} is not loaded")]
    UnknownEntry {
        deliver_at_ms: i64,
        physical_offset: i64,
    },
}

impl TimerError {
    pub(crate) fn corrupt(path: &std::path::Path, reason: impl Into<String>) -> Self {
        TimerError::Corrupt {
            path: path.display().to_string(),
            reason: reason.into(),
        }
    }
}

crate::error::from_io_failure!(TimerError);

impl From<TimerError> for StoreError {
    fn from(err: TimerError) -> Self {
        match err {
            TimerError::Config(reason) => StoreError::Config(reason),
            TimerError::Io {
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
            TimerError::Corrupt { .. } => StoreError::Corrupt(err.to_string()),
            TimerError::Backlogged { .. } => StoreError::Unavailable(err.to_string()),
            other => StoreError::InvalidRecord(other.to_string()),
        }
    }
}
