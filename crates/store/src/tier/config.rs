//! Tiered-storage settings (RocketMQ's tiered store keys where they exist;
//! see the README's "Tiered storage").

use std::path::PathBuf;

/// Default bytes fetched from object storage per read (read-ahead unit).
pub const READ_AHEAD_BYTES_DEFAULT: usize = 4 << 20;
/// Default bound of the read-through cache.
pub const READ_CACHE_BYTES_DEFAULT: usize = 256 << 20;
/// Default pause between upload passes.
pub const UPLOAD_INTERVAL_MS_DEFAULT: u64 = 10_000;
/// Default local budget: 0 keeps every segment until retention (offload
/// only copies).
pub const LOCAL_MAX_BYTES_DEFAULT: u64 = 0;
/// Default age after which offloaded segments leave object storage
/// (RocketMQ's `tieredStoreFileReservedTime`, 72 hours).
pub const REMOTE_RESERVED_MS_DEFAULT: u64 = 72 * 3_600_000;
// The cache holds at least one read-ahead unit.
const _: () =
    assert!(READ_AHEAD_BYTES_DEFAULT > 0 && READ_AHEAD_BYTES_DEFAULT <= READ_CACHE_BYTES_DEFAULT);

/// Where segments go (`tieredBackendServiceProvider`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TierBackend {
    /// A local (or mounted) directory (`PosixFileSegment`): `tieredStoreFilePath`.
    Posix { path: PathBuf },
    /// S3 or an S3-compatible server (`objectStoreEndpoint`, `objectStoreBucket`, ...).
    S3(S3Settings),
}

/// An S3 bucket and how to reach it.
#[derive(Clone, PartialEq, Eq)]
pub struct S3Settings {
    /// Empty: AWS's regional endpoint; else e.g. `http://127.0.0.1:9000`.
    pub endpoint: String,
    pub bucket: String,
    pub region: String,
    pub access_key: String,
    pub secret_key: String,
    /// Key prefix inside the bucket (`tieredStoreFilePath` with S3).
    pub prefix: String,
}

impl std::fmt::Debug for S3Settings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("S3Settings")
            .field("endpoint", &self.endpoint)
            .field("bucket", &self.bucket)
            .field("region", &self.region)
            .field("prefix", &self.prefix)
            .finish_non_exhaustive()
    }
}

/// Tiered storage, part of [`crate::StoreConfig`]; `None` there: off.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TierConfig {
    pub backend: TierBackend,
    /// The replica set's own sub-prefix (`cluster/brokerName`, as RocketMQ's
    /// tiered store keys by cluster and broker): its objects go under it,
    /// and clean-up never looks outside it. Empty: the layout before it
    /// (tests of the store alone).
    pub owner: String,
    /// Local CommitLog bytes kept once segments are offloaded: the oldest
    /// offloaded segments beyond it are dropped locally; 0: no size budget.
    pub local_max_bytes: u64,
    /// Offloaded segments older than this (since last modification) are
    /// dropped locally; 0: no time budget.
    pub local_reserved_ms: u64,
    /// Offloaded segments older than this (since their last write) are
    /// deleted from object storage, oldest first; 0: kept forever.
    pub remote_reserved_ms: u64,
    pub upload_interval_ms: u64,
    pub read_ahead_bytes: usize,
    pub read_cache_bytes: usize,
    /// `tieredStoreEpochBase`: added to the controller epoch a master
    /// publishes and fences by. 0 normally; after the controller's metadata
    /// was lost (its epochs start again at 1) the operator sets it, on every
    /// broker of the set, to the epoch the set's published manifest carries
    /// (README, "Tiered storage").
    pub epoch_base: i32,
}

impl TierConfig {
    pub fn new(backend: TierBackend) -> Self {
        Self {
            backend,
            owner: String::new(),
            local_max_bytes: LOCAL_MAX_BYTES_DEFAULT,
            local_reserved_ms: 0,
            remote_reserved_ms: REMOTE_RESERVED_MS_DEFAULT,
            upload_interval_ms: UPLOAD_INTERVAL_MS_DEFAULT,
            read_ahead_bytes: READ_AHEAD_BYTES_DEFAULT,
            read_cache_bytes: READ_CACHE_BYTES_DEFAULT,
            epoch_base: 0,
        }
    }

    /// Whether sealed segments `mtimes` (oldest first) may leave the disk
    /// by the local budget: how many from the front are over it. The
    /// caller still asks [`super::Offloaded::may_drop_locally`] for each.
    pub(crate) fn over_budget(
        &self,
        sealed: &[(u64, std::time::SystemTime)],
        local_total: u64,
        now: std::time::SystemTime,
    ) -> usize {
        let mut total = local_total;
        let mut count = 0;
        for (bytes, mtime) in sealed {
            let over_size = self.local_max_bytes > 0 && total > self.local_max_bytes;
            let age_ms = now.duration_since(*mtime).map_or(0, |d| d.as_millis());
            let too_old =
                self.local_reserved_ms > 0 && age_ms >= u128::from(self.local_reserved_ms);
            if !over_size && !too_old {
                break;
            }
            total = total.saturating_sub(*bytes);
            count += 1;
        }
        count
    }
}
