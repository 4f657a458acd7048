//! The broker's modes of operation: how the CommitLog is flushed and
//! written, and how the in-broker gRPC endpoint reaches the broker.

/// When the CommitLog is flushed (`flushDiskType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FlushDiskType {
    /// `ASYNC_FLUSH`: acknowledge once written; fdatasync periodically.
    #[default]
    AsyncFlush,
    /// `SYNC_FLUSH`: acknowledge after the fdatasync (group commit).
    SyncFlush,
}

impl FlushDiskType {
    /// Parses `ASYNC_FLUSH` / `SYNC_FLUSH` (any case).
    pub fn parse(text: &str) -> Option<Self> {
        match text.trim().to_ascii_uppercase().as_str() {
            "ASYNC_FLUSH" | "ASYNC" => Some(Self::AsyncFlush),
            "SYNC_FLUSH" | "SYNC" => Some(Self::SyncFlush),
            _ => None,
        }
    }
}

/// How the CommitLog is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CommitLogWriteMode {
    /// Through the page cache.
    #[default]
    Buffered,
    /// O_DIRECT, with a hot tail kept in memory for readers.
    Direct,
}

impl CommitLogWriteMode {
    pub fn parse(text: &str) -> Option<Self> {
        match text.trim().to_ascii_lowercase().as_str() {
            "buffered" => Some(Self::Buffered),
            "direct" => Some(Self::Direct),
            _ => None,
        }
    }
}

/// How the in-broker gRPC endpoint calls the broker (`proxyMode`, RocketMQ
/// proxy's names).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ProxyMode {
    /// In process, straight to the shards' request handler.
    #[default]
    Local,
    /// Remoting over loopback through the name server's routes.
    Cluster,
}

impl ProxyMode {
    /// Parses `local` / `cluster` (any case).
    pub fn parse(text: &str) -> Option<Self> {
        match text.trim().to_ascii_lowercase().as_str() {
            "local" => Some(Self::Local),
            "cluster" => Some(Self::Cluster),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::Local => "local",
            Self::Cluster => "cluster",
        }
    }
}
