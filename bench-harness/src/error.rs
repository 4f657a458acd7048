//! The harness's error type.

use ferrocket_client::ClientError;
use ferrocket_protocol::ProtocolError;

/// Everything that can stop a benchmark run.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// A client call (connect, route lookup, admin) failed.
    #[error(transparent)]
    Client(#[from] ClientError),
    /// The server sent something we could not decode.
    #[error(transparent)]
    Protocol(#[from] ProtocolError),
    /// A file or /proc read or write failed.
    #[error("{path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    /// The target is not usable (no broker, no route, ...).
    #[error("{0}")]
    Setup(String),
    /// The options contradict each other or are out of range.
    #[error("invalid options: {0}")]
    Options(String),
}

impl BenchError {
    pub fn io(path: impl Into<String>, source: std::io::Error) -> Self {
        BenchError::Io {
            path: path.into(),
            source,
        }
    }
}
