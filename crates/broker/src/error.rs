//! Why a broker could not start or stopped badly.

use ferrocket_runtime::lock::LockError;
use ferrocket_runtime::shard::{MeshError, ShardError};
use ferrocket_store::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum BrokerError {
    #[error("invalid broker configuration: {0}")]
    Config(String),
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: std::net::SocketAddr,
        source: std::io::Error,
    },
    #[error("store directory: {0}")]
    Lock(#[from] LockError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Shard(#[from] ShardError),
    #[error(transparent)]
    Mesh(#[from] MeshError),
    #[error("shard {shard} failed: {reason}")]
    ShardFailed { shard: usize, reason: String },
}
