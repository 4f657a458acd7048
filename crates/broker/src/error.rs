//! The broker's two error types: [`Reject`], the typed answer a request
//! gets instead of SUCCESS (a RocketMQ response code and remark), and
//! [`BrokerError`], why a broker could not start or stopped badly.

use ferrocket_protocol::codes::response_code;
use ferrocket_protocol::{ProtocolError, RemotingCommand};
use ferrocket_runtime::lock::LockError;
use ferrocket_runtime::shard::{MeshError, ShardError};
use ferrocket_store::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum BrokerError {
    #[error("invalid broker configuration: {0}")]
    Config(String),
    #[error(
        "cannot listen on {addr}: {source}{}",
        ferrocket_runtime::server::in_use_hint(source, port_key)
    )]
    Bind {
        addr: std::net::SocketAddr,
        source: std::io::Error,
        /// The setting that chose the port, for the hint.
        port_key: &'static str,
    },
    #[error("store directory: {0}")]
    Lock(#[from] LockError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Shard(#[from] ShardError),
    #[error(transparent)]
    Mesh(#[from] MeshError),
    #[error("cannot open the {service}: {reason}")]
    Service {
        service: &'static str,
        reason: String,
    },
    #[error("a shard ended before every shard served (see the shard errors logged above)")]
    ShardEnded,
    #[error("shard {shard} failed: {source}")]
    ShardFailed {
        shard: usize,
        source: Box<BrokerError>,
    },
}

/// A request answered with an error code and remark.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Reject {
    pub code: i32,
    pub remark: String,
}

impl Reject {
    pub fn new(code: i32, remark: impl Into<String>) -> Self {
        Self {
            code,
            remark: remark.into(),
        }
    }

    pub fn system(remark: impl Into<String>) -> Self {
        Self::new(response_code::SYSTEM_ERROR, remark)
    }

    /// The response to `request`.
    pub fn to_response(&self, request: &RemotingCommand) -> RemotingCommand {
        RemotingCommand::response_to(request, self.code, Some(self.remark.clone()))
    }
}

impl From<ProtocolError> for Reject {
    fn from(err: ProtocolError) -> Self {
        Self::new(err.response_code(), err.to_string())
    }
}

impl From<StoreError> for Reject {
    fn from(err: StoreError) -> Self {
        Self::new(err.response_code(), err.to_string())
    }
}

impl From<MeshError> for Reject {
    fn from(err: MeshError) -> Self {
        Self::new(
            response_code::SYSTEM_BUSY,
            format!("broker is busy or stopping: {err}"),
        )
    }
}
