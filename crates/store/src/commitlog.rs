//! The CommitLog's shared, read-only side: the published segment maps, the
//! written (readable) and durable (flushed) positions, and the Direct-mode
//! hot tail. [`CommitLogReader`] is `Send + Sync`; every shard reads through
//! it while the single appender (on its own thread) writes.
//!
//! Reads are served from a read-only memmap2 map per segment (shared by all
//! shards), and in Direct mode first from the hot tail: the most recent
//! batches kept in memory, so a consumer that keeps up never waits on the disk
//! even though O_DIRECT writes bypass the page cache. Buffered mode writes go
//! through the page cache the maps read, so recent data is in memory anyway.

use std::collections::VecDeque;
use std::fs;
use std::path::Path;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use bytes::Bytes;

use crate::damage::DamagedRange;
use crate::error::{IoContext, StoreError};

/// One CommitLog segment mapped read-only.
pub(crate) struct SegmentMap {
    pub(crate) start: i64,
    map: memmap2::Mmap,
    /// Its file, for recovery's search past a bad record (which reads only
    /// the file's data extents).
    pub(crate) path: std::path::PathBuf,
}

impl SegmentMap {
    /// Maps the whole (preallocated) segment file.
    pub(crate) fn open(path: &Path, start: i64, segment_bytes: u64) -> Result<Self, StoreError> {
        let file = fs::File::open(path).io_context("open segment", path)?;
        let len = file.metadata().io_context("stat segment", path)?.len();
        if len != segment_bytes {
            return Err(StoreError::Corrupt(format!(
                "segment {} has {len} bytes, expected {segment_bytes}",
                path.display()
            )));
        }
        // SAFETY: segment files are never truncated while the store is open
        // (recovery finishes before any map is made); bytes past the written
        // position are never handed out.
        let map = unsafe { memmap2::Mmap::map(&file) }.io_context("mmap segment", path)?;
        Ok(Self {
            start,
            map,
            path: path.to_path_buf(),
        })
    }

    pub(crate) fn bytes(&self) -> &[u8] {
        &self.map
    }
}

/// An owner that lets a [`Bytes`] point into a segment map without copying.
struct MappedSlice {
    segment: Arc<SegmentMap>,
    from: usize,
    to: usize,
}

impl AsRef<[u8]> for MappedSlice {
    fn as_ref(&self) -> &[u8] {
        &self.segment.map[self.from..self.to]
    }
}

/// Recently written batches (Direct mode), oldest first, bounded in bytes.
struct HotTail {
    chunks: VecDeque<(i64, Bytes)>,
    bytes: usize,
    bytes_max: usize,
}

/// The list of segments in offset order, contiguous.
pub(crate) type SegmentList = Arc<Vec<Arc<SegmentMap>>>;

/// State shared by the appender (writer) and every reader.
pub(crate) struct CommitLogShared {
    pub(crate) segment_bytes: u64,
    /// Ranges recovery quarantined (now and at earlier starts).
    damaged: Vec<DamagedRange>,
    segments: RwLock<SegmentList>,
    /// Bumped whenever `segments` changes, so shard-local caches can refresh.
    generation: AtomicU64,
    /// Everything below is written and readable.
    written: AtomicI64,
    /// Everything below is on disk (fdatasync'ed).
    durable: AtomicI64,
    hot: Option<Mutex<HotTail>>,
    /// Whether writes are stopped for lack of disk space.
    pub(crate) disk: crate::disk::DiskState,
    /// Whether this CommitLog is a slave's copy (takes only the master's
    /// bytes); a role change in place flips it.
    pub(crate) replica: std::sync::atomic::AtomicBool,
    /// What topics with a longer retention than the broker's keep.
    pub(crate) topic_keep: crate::topic_retention::KeepFloors,
    /// Tiered storage, when on: segments below the local start may still
    /// be readable from object storage.
    pub(crate) tier: std::sync::OnceLock<Arc<crate::tier::TierShared>>,
}

impl CommitLogShared {
    pub(crate) fn new(
        segment_bytes: u64,
        segments: Vec<Arc<SegmentMap>>,
        end: i64,
        hot_tail_bytes: Option<usize>,
        damaged: Vec<DamagedRange>,
    ) -> Self {
        Self {
            damaged,
            segment_bytes,
            segments: RwLock::new(Arc::new(segments)),
            generation: AtomicU64::new(1),
            written: AtomicI64::new(end),
            durable: AtomicI64::new(end),
            hot: hot_tail_bytes.map(|bytes_max| {
                Mutex::new(HotTail {
                    chunks: VecDeque::new(),
                    bytes: 0,
                    bytes_max,
                })
            }),
            disk: crate::disk::DiskState::default(),
            replica: std::sync::atomic::AtomicBool::new(false),
            topic_keep: Default::default(),
            tier: std::sync::OnceLock::new(),
        }
    }

    pub(crate) fn is_replica(&self) -> bool {
        self.replica.load(Ordering::Acquire)
    }

    pub(crate) fn written(&self) -> i64 {
        self.written.load(Ordering::Acquire)
    }

    pub(crate) fn durable(&self) -> i64 {
        self.durable.load(Ordering::Acquire)
    }

    /// Publishes a new written position (appender only; only grows).
    pub(crate) fn publish_written(&self, end: i64) {
        assert!(end >= 0, "a written position below zero");
        let old = self.written.swap(end, Ordering::AcqRel);
        assert!(old <= end, "written position went back from {old} to {end}");
        debug_assert!(
            self.durable() <= end,
            "durable beyond the new written position"
        );
    }

    /// Publishes a new durable position; never beyond written, never back.
    pub(crate) fn publish_durable(&self, end: i64) {
        assert!(end >= 0, "a durable position below zero");
        assert!(end <= self.written(), "durable {end} beyond written");
        let old = self.durable.fetch_max(end, Ordering::AcqRel);
        debug_assert!(old <= self.written(), "durable was beyond written");
    }

    pub(crate) fn segment_list(&self) -> SegmentList {
        match self.segments.read() {
            Ok(list) => Arc::clone(&list),
            Err(poisoned) => Arc::clone(&poisoned.into_inner()),
        }
    }

    pub(crate) fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// Adds a freshly created segment at the end (appender only).
    pub(crate) fn push_segment(&self, segment: Arc<SegmentMap>) {
        assert!(segment.start >= 0, "a segment below zero");
        assert_eq!(
            segment.start % self.segment_bytes as i64,
            0,
            "segments start at a multiple of the segment size"
        );
        let mut guard = match self.segments.write() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        };
        if let Some(last) = guard.last() {
            assert_eq!(
                last.start + self.segment_bytes as i64,
                segment.start,
                "segments must be contiguous"
            );
        }
        let mut list = Vec::clone(&guard);
        list.push(segment);
        *guard = Arc::new(list);
        self.generation.fetch_add(1, Ordering::AcqRel);
    }

    /// Replaces an empty CommitLog's only segment by `segment` (a new
    /// slave starting at its master's offset; appender only).
    pub(crate) fn replace_only(&self, segment: Arc<SegmentMap>) {
        let mut guard = match self.segments.write() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        };
        assert!(guard.len() <= 1, "only an empty CommitLog moves");
        assert_eq!(
            segment.start % self.segment_bytes as i64,
            0,
            "segments start at a multiple of the segment size"
        );
        assert!(
            !guard.first().is_some_and(|old| old.start >= segment.start),
            "an empty CommitLog only moves forward"
        );
        *guard = Arc::new(vec![segment]);
        self.generation.fetch_add(1, Ordering::AcqRel);
    }

    /// Removes the `count` oldest segments (retention; appender only) and
    /// returns them. The active (last) segment always stays. Readers that
    /// still hold the old list or a slice keep their maps until they drop
    /// them; the next read through a shard's cache refreshes it.
    pub(crate) fn remove_front(&self, count: usize) -> Vec<Arc<SegmentMap>> {
        let mut guard = match self.segments.write() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        };
        let count = count.min(guard.len().saturating_sub(1));
        if count == 0 {
            return Vec::new();
        }
        assert!(count < guard.len(), "the active segment always stays");
        let removed = guard[..count].to_vec();
        *guard = Arc::new(guard[count..].to_vec());
        debug_assert!(
            removed.last().map(|s| s.start) < guard.first().map(|s| s.start),
            "only the oldest segments go"
        );
        self.generation.fetch_add(1, Ordering::AcqRel);
        removed
    }

    /// Start of the first segment (`getMinOffset`), 0 when there is none.
    pub(crate) fn min_offset(&self) -> i64 {
        self.segment_list()
            .first()
            .map(|segment| segment.start)
            .unwrap_or(0)
    }

    /// The lowest offset still held anywhere: the local start, or below it
    /// the start of the offloaded segments that reach up to it. What
    /// ConsumeQueue retention and readers treat as the CommitLog's start.
    pub(crate) fn logical_min(&self) -> i64 {
        let local = self.min_offset();
        self.tier
            .get()
            .and_then(|tier| tier.offloaded.remote_floor(local))
            .map_or(local, |floor| floor.min(local))
    }

    /// Bytes of an offloaded segment below the local start, from the
    /// read-through cache (`None`: not offloaded, or not cached yet).
    pub(crate) fn read_offloaded(&self, offset: i64, size: usize) -> Option<Bytes> {
        let tier = self.tier.get()?;
        if offset >= self.min_offset() || offset < self.logical_min() {
            return None;
        }
        tier.read_cached(offset, size).ok()
    }

    /// Keeps a copy of a just-written batch readable from memory (Direct mode).
    pub(crate) fn push_hot(&self, start: i64, bytes: Bytes) {
        let Some(hot) = &self.hot else { return };
        let mut hot = match hot.lock() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        };
        if let Some((last_start, last)) = hot.chunks.back() {
            assert!(
                last_start + last.len() as i64 <= start,
                "hot tail chunks must follow one another"
            );
        }
        assert!(start >= 0, "a hot tail chunk below zero");
        hot.bytes += bytes.len();
        hot.chunks.push_back((start, bytes));
        while hot.bytes > hot.bytes_max && hot.chunks.len() > 1 {
            if let Some((_, old)) = hot.chunks.pop_front() {
                hot.bytes -= old.len();
            }
        }
        debug_assert!(!hot.chunks.is_empty(), "the newest chunk stays");
    }

    fn read_hot(&self, offset: i64, size: usize) -> Option<Bytes> {
        let hot = self.hot.as_ref()?;
        let hot = match hot.lock() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        };
        let end = offset + size as i64;
        // Recent data is what is read most: search from the newest chunk.
        for (start, chunk) in hot.chunks.iter().rev() {
            if *start <= offset && end <= start + chunk.len() as i64 {
                let from = (offset - start) as usize;
                return Some(chunk.slice(from..from + size));
            }
            if start + (chunk.len() as i64) <= offset {
                break;
            }
        }
        None
    }

    /// Reads `[offset, offset + size)` when it is written and lies in one
    /// segment; zero-copy from the hot tail or the segment map.
    pub(crate) fn read_in(
        &self,
        segments: &SegmentList,
        offset: i64,
        size: usize,
    ) -> Option<Bytes> {
        if size == 0 || offset < 0 {
            return None;
        }
        let end = offset.checked_add(i64::try_from(size).ok()?)?;
        if end > self.written() {
            return None;
        }
        if let Some(bytes) = self.read_hot(offset, size) {
            return Some(bytes);
        }
        let first = segments.first()?;
        if offset < first.start {
            return None;
        }
        let index = ((offset - first.start) as u64 / self.segment_bytes) as usize;
        let segment = segments.get(index)?;
        debug_assert!(segment.start <= offset);
        let from = (offset - segment.start) as usize;
        let to = from + size;
        if to as u64 > self.segment_bytes {
            return None;
        }
        Some(Bytes::from_owner(MappedSlice {
            segment: Arc::clone(segment),
            from,
            to,
        }))
    }
}

/// Reads CommitLog records from any thread. Cheap to clone.
#[derive(Clone)]
pub struct CommitLogReader {
    pub(crate) shared: Arc<CommitLogShared>,
}

impl CommitLogReader {
    /// Lets writes in again after the store held them for an unread
    /// object-store manifest (`tier::UNRESTORED_MARKER`).
    pub fn release_writes(&self) {
        self.shared.disk.release();
    }

    /// The bytes `[physical_offset, physical_offset + size)`, when they are
    /// written and lie within one segment (one record always does, and so do
    /// the records of one segment read together). Zero-copy: the `Bytes`
    /// points into the segment map or the hot tail.
    pub fn read(&self, physical_offset: i64, size: usize) -> Option<Bytes> {
        let segments = self.shared.segment_list();
        self.shared
            .read_in(&segments, physical_offset, size)
            .or_else(|| self.shared.read_offloaded(physical_offset, size))
    }

    /// End of the readable CommitLog (`getMaxOffset`).
    pub fn written_offset(&self) -> i64 {
        self.shared.written()
    }

    /// End of the flushed CommitLog (`getFlushedWhere`).
    pub fn durable_offset(&self) -> i64 {
        self.shared.durable()
    }

    /// Start of the first local segment (`getMinOffset`).
    pub fn min_offset(&self) -> i64 {
        self.shared.min_offset()
    }

    /// Start of the CommitLog counting offloaded segments (tiered
    /// storage); the local start without it.
    pub fn logical_min_offset(&self) -> i64 {
        self.shared.logical_min()
    }

    /// Whether `offset` lies in a segment that only object storage holds.
    pub fn is_offloaded(&self, offset: i64) -> bool {
        offset < self.shared.min_offset() && offset >= self.shared.logical_min()
    }

    /// Whether the store is a replica now (a slave: the tier uploads
    /// nothing and follows the set's published manifest).
    pub fn is_replica(&self) -> bool {
        self.shared.is_replica()
    }

    /// Tiered storage's shared state, when on.
    pub fn tier(&self) -> Option<Arc<crate::tier::TierShared>> {
        self.shared.tier.get().cloned()
    }

    /// Start offset and file of every sealed local segment, oldest first:
    /// never the active (last) one, and only those wholly flushed (the
    /// durable position is past their end, so their BLANK filler and every
    /// record in them are on disk). Sealed segments never change.
    pub fn sealed_segments(&self) -> Vec<(i64, std::path::PathBuf)> {
        let list = self.shared.segment_list();
        let durable = self.shared.durable();
        let seg = self.shared.segment_bytes as i64;
        let sealed = list.len().saturating_sub(1);
        list[..sealed]
            .iter()
            .filter(|segment| segment.start + seg <= durable)
            .map(|segment| (segment.start, segment.path.clone()))
            .collect()
    }

    /// Segment size in bytes.
    pub fn segment_bytes(&self) -> u64 {
        self.shared.segment_bytes
    }

    /// Start of the segment after the one holding `physical_offset`
    /// (`rollNextFile`): where a reader continues after a blank record.
    /// The quarantined damaged range holding `physical_offset`, if any: a
    /// sequential reader that finds no record there resumes at its end.
    pub fn damaged_range_at(&self, physical_offset: i64) -> Option<DamagedRange> {
        self.shared
            .damaged
            .iter()
            .find(|r| r.start <= physical_offset && physical_offset < r.end)
            .copied()
    }

    /// Start of the first quarantined damaged range after
    /// `physical_offset`, if any: where a sequential reader's window must
    /// end so that it never reads into one.
    pub fn next_damage_start(&self, physical_offset: i64) -> Option<i64> {
        self.shared
            .damaged
            .iter()
            .map(|r| r.start)
            .filter(|start| *start > physical_offset)
            .min()
    }

    pub fn next_segment_start(&self, physical_offset: i64) -> i64 {
        let size = self.shared.segment_bytes as i64;
        physical_offset - physical_offset.rem_euclid(size) + size
    }
}

/// A shard-local reader that caches the segment list and refreshes it only
/// when the appender adds a segment: no lock on the read path.
pub(crate) struct LocalReader {
    shared: Arc<CommitLogShared>,
    generation: std::cell::Cell<u64>,
    segments: std::cell::RefCell<SegmentList>,
}

impl LocalReader {
    pub(crate) fn new(shared: Arc<CommitLogShared>) -> Self {
        let generation = shared.generation();
        let segments = shared.segment_list();
        Self {
            shared,
            generation: std::cell::Cell::new(generation),
            segments: std::cell::RefCell::new(segments),
        }
    }

    pub(crate) fn read(&self, offset: i64, size: usize) -> Option<Bytes> {
        self.refresh();
        let segments = Arc::clone(&self.segments.borrow());
        let found = self.shared.read_in(&segments, offset, size);
        if found.is_none() && self.refresh() {
            // A segment was added while we read: try once more.
            let segments = Arc::clone(&self.segments.borrow());
            return self.shared.read_in(&segments, offset, size);
        }
        found.or_else(|| self.shared.read_offloaded(offset, size))
    }

    /// Reloads the segment list if it changed; true when it did (also
    /// called periodically so an idle shard lets go of deleted segments).
    pub(crate) fn refresh(&self) -> bool {
        let generation = self.shared.generation();
        if generation == self.generation.get() {
            return false;
        }
        *self.segments.borrow_mut() = self.shared.segment_list();
        self.generation.set(generation);
        true
    }
}
