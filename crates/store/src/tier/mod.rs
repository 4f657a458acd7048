//! Tiered storage, the store's side: the settings, the manifest of
//! offloaded segments, the read-through cache, the uploader's status, and
//! the door to the fetcher (`ferrocket-tier` uploads and fetches on its own
//! thread; see that crate). Sealed segments leave the disk only through
//! [`Offloaded::may_drop_locally`] (appender, `appender::retention`).

mod cache;
mod config;
mod expiry;
mod lineage;
mod manifest;
mod uploader;

use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use bytes::Bytes;
use futures_channel::{mpsc, oneshot};

pub use config::*;
pub use expiry::REMOTE_DELETE_PER_PASS_MAX;
pub use lineage::{agreed_point, consistent_point, Lineage, LineageEpoch};
pub use manifest::{Adopted, OffloadEntry, Offloaded, MANIFEST_FILE};
pub use uploader::UPLOADER_FILE;

/// Directory of the tier's files under the store root.
pub const TIER_DIR: &str = "tier";

/// Left in [`TIER_DIR`] by an empty start that could not read the object
/// store's manifest (`ferrocket_tier::restore_lost_store`): the store takes
/// no writes, and the tier uploads and deletes nothing, until the master
/// has read that manifest and found nothing of its set there.
pub const UNRESTORED_MARKER: &str = "unrestored";

/// Why writes are held while [`UNRESTORED_MARKER`] is present.
pub const UNRESTORED_REASON: &str =
    "tiered storage: this broker's store was empty at start and the \
     object store could not be read; it takes writes once the object store's manifest is read and \
     names nothing of this broker (a lost disk is restored at the next start)";

/// The CommitLog of the store at `root` now ends at `end` (cut back, the
/// store closed: a fork point, or recovery cutting a torn tail): the
/// manifest, when there is one, durably forgets every remote copy reaching
/// past it (whether or not tiering is on now: a replica keeps the manifest
/// of its time as master). Returns how many copies were forgotten.
pub fn forget_past(
    root: &std::path::Path,
    segment_bytes: u64,
    end: i64,
) -> Result<usize, crate::StoreError> {
    let dir = root.join(TIER_DIR);
    if !dir.exists() {
        return Ok(0);
    }
    let manifest = Offloaded::load(&dir, segment_bytes)?;
    let forgotten = manifest.forget_from(end)?;
    if !forgotten.is_empty() {
        tracing::warn!(
            end,
            segments = forgotten.len(),
            "tiered storage: the CommitLog was cut back; remote copies past the cut are forgotten"
        );
    }
    Ok(forgotten.len())
}

/// A shard asks the fetcher for one chunk of an offloaded segment.
pub struct FetchRequest {
    /// Start of the chunk (CommitLog offset).
    pub chunk_start: i64,
    pub chunk_len: usize,
    /// The segment's verified remote copy.
    pub entry: OffloadEntry,
    /// `Ok` once the chunk is in the cache.
    pub reply: oneshot::Sender<Result<(), FetchFailure>>,
}

/// Why a chunk of an offloaded segment was not fetched.
#[derive(Clone, Debug)]
pub enum FetchFailure {
    /// The object is definitely missing (the store answered not found) or
    /// damaged (it holds fewer bytes than the segment): retrying cannot help.
    Gone(String),
    /// Anything else (store unreachable, a timeout, a 5xx, a permission):
    /// the bytes may well still be there.
    Failed(String),
}

/// What the uploader tells the broker (runtime info, metrics, logs).
#[derive(Default)]
pub struct TierStatus {
    pub uploaded_segments: AtomicU64,
    pub uploaded_bytes: AtomicU64,
    pub upload_failures: AtomicU64,
    pub dropped_segments: AtomicU64,
    /// Segments deleted from object storage by remote retention.
    pub remote_deleted_segments: AtomicU64,
    pub remote_reads: AtomicU64,
    pub remote_read_bytes: AtomicU64,
    pub remote_read_failures: AtomicU64,
    /// The last error talking to the store, empty when the last try worked.
    pub last_error: Mutex<String>,
    /// The S3-compatible store refused a conditional write (`If-Match` /
    /// `If-None-Match`): the manifest is written plainly after a read's
    /// check, as in a directory (said once in the log, and in the status).
    pub conditional_writes_unsupported: std::sync::atomic::AtomicBool,
}

impl TierStatus {
    pub fn set_error(&self, error: Option<String>) {
        let mut last = self.last_error.lock().unwrap_or_else(|p| p.into_inner());
        *last = error.unwrap_or_default();
    }

    pub fn last_error(&self) -> String {
        self.last_error
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    pub fn get(counter: &AtomicU64) -> u64 {
        counter.load(Ordering::Relaxed)
    }
}

/// Everything of the tier the store and the broker share. `Send + Sync`.
pub struct TierShared {
    pub config: TierConfig,
    pub offloaded: Offloaded,
    /// This store's uploader id (`uploader` module): the suffix of every
    /// object key it uploads.
    pub uploader: String,
    pub status: TierStatus,
    /// The controller epoch this broker is master of (0 outside controller
    /// mode, and on a slave): what it publishes its manifest under.
    master_epoch: AtomicI32,
    /// Controller mode: this broker's epoch file (the lineage it publishes
    /// and adopts by).
    epoch_file: OnceLock<std::path::PathBuf>,
    cache: Mutex<cache::ChunkCache>,
    fetcher: OnceLock<mpsc::UnboundedSender<FetchRequest>>,
}

impl TierShared {
    pub(crate) fn open(
        config: TierConfig,
        root: &std::path::Path,
        segment_bytes: u64,
    ) -> Result<Self, crate::StoreError> {
        let offloaded = Offloaded::load(&root.join(TIER_DIR), segment_bytes)?;
        let uploader = uploader::load_or_create(&root.join(TIER_DIR))?;
        Ok(Self {
            uploader,
            cache: Mutex::new(cache::ChunkCache::new(config.read_cache_bytes)),
            config,
            offloaded,
            status: TierStatus::default(),
            master_epoch: AtomicI32::new(0),
            epoch_file: OnceLock::new(),
            fetcher: OnceLock::new(),
        })
    }

    fn cache(&self) -> std::sync::MutexGuard<'_, cache::ChunkCache> {
        self.cache.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Controller mode: this broker is now master of `epoch` (set before
    /// the CommitLog takes appends, so no pass publishes under an older one).
    pub fn set_master_epoch(&self, epoch: i32) {
        self.master_epoch.store(epoch, Ordering::Release);
    }

    /// The epoch this broker publishes its manifest under, fences by and
    /// names its uploads with: the controller epoch it is master of plus
    /// [`TierConfig::epoch_base`] (0 outside controller mode and on a slave).
    pub fn master_epoch(&self) -> i32 {
        match self.master_epoch.load(Ordering::Acquire) {
            0 => 0,
            epoch => epoch.saturating_add(self.config.epoch_base.max(0)),
        }
    }

    /// Controller mode: where this broker's epoch file is (once, at start).
    pub fn set_epoch_file(&self, path: std::path::PathBuf) {
        let _ = self.epoch_file.set(path);
    }

    /// This broker's epochs (empty outside controller mode).
    pub fn epochs(&self) -> Result<crate::epoch::EpochCache, crate::StoreError> {
        match self.epoch_file.get() {
            Some(path) => crate::epoch::file::EpochFile::at(path.clone()).read(),
            None => Ok(crate::epoch::EpochCache::new()),
        }
    }

    /// Connects the fetcher (once, at start).
    pub fn set_fetcher(&self, sender: mpsc::UnboundedSender<FetchRequest>) {
        let _ = self.fetcher.set(sender);
    }

    /// Keeps a fetched chunk.
    pub fn insert_chunk(&self, start: i64, bytes: Bytes) {
        self.cache().insert(start, bytes);
    }

    pub fn has_chunk(&self, start: i64) -> bool {
        self.cache().contains(start)
    }

    /// Bytes of an offloaded segment from the cache, or the start of the
    /// chunk to fetch first.
    pub(crate) fn read_cached(&self, offset: i64, size: usize) -> Result<Bytes, i64> {
        let segment = self.offloaded.segment_bytes();
        self.cache()
            .read(offset, size, self.config.read_ahead_bytes, segment)
    }

    /// The chunk (start, length) holding `offset`.
    pub fn chunk_at(&self, offset: i64) -> (i64, usize) {
        let segment = self.offloaded.segment_bytes();
        cache::chunks_of(offset, 1, self.config.read_ahead_bytes, segment)[0]
    }

    /// Brings `[offset, offset + size)` of an offloaded segment into the
    /// cache: asks the fetcher for each missing chunk and waits for it.
    pub async fn fetch(&self, offset: i64, size: usize) -> Result<(), crate::StoreError> {
        let segment = self.offloaded.segment_bytes();
        let chunks = cache::chunks_of(offset, size, self.config.read_ahead_bytes, segment).len();
        for _ in 0..chunks {
            match self.read_cached(offset, size) {
                Ok(_) => return Ok(()),
                Err(missing) => self.fetch_chunk(missing).await?,
            }
        }
        Ok(())
    }

    /// Asks the fetcher for the chunk starting at `chunk_start`.
    async fn fetch_chunk(&self, chunk_start: i64) -> Result<(), crate::StoreError> {
        let unavailable = |why: String| crate::StoreError::Unavailable(why);
        let segment = self.offloaded.segment_bytes() as i64;
        let seg_start = chunk_start - chunk_start.rem_euclid(segment);
        let Some(entry) = self.offloaded.get(seg_start) else {
            return Err(unavailable(format!(
                "CommitLog offset {chunk_start} is neither local nor offloaded"
            )));
        };
        let Some(sender) = self.fetcher.get() else {
            return Err(unavailable("the tier fetcher is not running".into()));
        };
        let (chunk_start, chunk_len) = self.chunk_at(chunk_start);
        let (reply, answer) = oneshot::channel();
        let request = FetchRequest {
            chunk_start,
            chunk_len,
            entry,
            reply,
        };
        sender
            .unbounded_send(request)
            .map_err(|_| unavailable("the tier fetcher stopped".into()))?;
        match answer.await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(FetchFailure::Gone(why))) => Err(crate::StoreError::OffloadedGone(format!(
                "offloaded CommitLog offset {chunk_start}: {why}"
            ))),
            Ok(Err(FetchFailure::Failed(why))) => Err(unavailable(format!(
                "reading offloaded CommitLog offset {chunk_start} from object storage failed: {why}"
            ))),
            Err(_) => Err(unavailable("the tier fetcher stopped".into())),
        }
    }

    /// Bytes in the read-through cache.
    pub fn cached_bytes(&self) -> usize {
        self.cache().bytes()
    }
}

/// The handle the broker keeps: cheap to clone.
pub type TierHandle = Arc<TierShared>;

/// Tests: an epoch list of `(epoch, start offset)` pairs.
#[cfg(test)]
pub(crate) fn test_epochs(entries: &[(i32, i64)]) -> crate::epoch::EpochCache {
    let entries: Vec<crate::epoch::EpochEntry> = entries
        .iter()
        .map(|&(epoch, start_offset)| crate::epoch::EpochEntry {
            epoch,
            start_offset,
        })
        .collect();
    crate::epoch::EpochCache::from_entries(&entries).unwrap()
}
