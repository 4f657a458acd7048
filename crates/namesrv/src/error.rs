//! Why the name server could not start or run.

use std::net::SocketAddr;

#[derive(Debug, thiserror::Error)]
pub enum NamesrvError {
    #[error(
        "cannot listen on {addr}: {source}{}",
        ferrocket_runtime::server::in_use_hint(source, "listenPort")
    )]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("cannot start the name server executor: {0}")]
    Executor(String),
    #[error("invalid name server config: {0}")]
    Config(String),
    #[error("cannot load the KV config: {0}")]
    KvConfig(#[from] crate::kv_file::KvFileError),
    #[error("the name server thread panicked")]
    Panicked,
}
