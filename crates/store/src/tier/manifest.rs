//! The durable record of offloaded segments (`tier/manifest.json` under the
//! store root): a segment is listed only after its remote copy was read
//! back and matched size and CRC32. Only listed segments may leave the
//! local disk ([`Offloaded::may_drop_locally`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::RwLock;

use serde::{Deserialize, Serialize};

use crate::error::{IoContext, StoreError};

/// File name of the manifest in the store's `tier/` directory.
pub const MANIFEST_FILE: &str = "manifest.json";

/// One verified remote copy of a sealed CommitLog segment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OffloadEntry {
    /// The segment's start offset (its file name).
    pub start: i64,
    pub size: u64,
    pub crc32: u32,
    /// The object's key in the remote store.
    pub key: String,
    pub uploaded_ms: u64,
    /// The segment's last write (file mtime) when it was uploaded; 0 in
    /// manifests written before it was recorded (the upload time stands in).
    #[serde(default)]
    pub written_ms: u64,
}

impl OffloadEntry {
    /// When the segment was last written, as well as known.
    pub fn age_from_ms(&self) -> u64 {
        match self.written_ms {
            0 => self.uploaded_ms,
            written => written,
        }
    }
}

#[derive(Default, Serialize, Deserialize)]
struct ManifestFile {
    segments: Vec<OffloadEntry>,
}

/// The manifest in memory, shared by the uploader, the appender (which
/// drops segments) and readers. `Send + Sync`.
pub struct Offloaded {
    path: PathBuf,
    segment_bytes: u64,
    entries: RwLock<BTreeMap<i64, OffloadEntry>>,
}

impl Offloaded {
    /// Loads `dir/manifest.json` (missing: nothing offloaded yet).
    pub fn load(dir: &Path, segment_bytes: u64) -> Result<Self, StoreError> {
        std::fs::create_dir_all(dir).io_context("create dir", dir)?;
        let path = dir.join(MANIFEST_FILE);
        let file: ManifestFile = match std::fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| {
                StoreError::Corrupt(format!("tier manifest {}: {e}", path.display()))
            })?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => ManifestFile::default(),
            Err(e) => return Err(crate::error::IoFailure::new("read", &path, e).into()),
        };
        let entries = file.segments.into_iter().map(|e| (e.start, e)).collect();
        Ok(Self {
            path,
            segment_bytes,
            entries: RwLock::new(entries),
        })
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, BTreeMap<i64, OffloadEntry>> {
        self.entries.read().unwrap_or_else(|p| p.into_inner())
    }

    /// Records a verified copy: written durably before it counts.
    pub fn record(&self, entry: OffloadEntry) -> Result<(), StoreError> {
        assert_eq!(
            entry.size, self.segment_bytes,
            "a whole segment is offloaded"
        );
        self.change(|entries| {
            entries.insert(entry.start, entry);
        })
    }

    /// Forgets the remote copies of the segments at `starts` (before their
    /// objects are deleted): durably written before readers stop seeing
    /// them, so no reader trusts an entry whose object is gone for good.
    pub fn forget(&self, starts: &[i64]) -> Result<(), StoreError> {
        self.change(|entries| {
            for start in starts {
                entries.remove(start);
            }
        })
    }

    /// Forgets every copy of a segment that reaches past `end` (the
    /// CommitLog was cut back there: by a fork point, or recovery cutting a
    /// torn tail), durably, so the bytes written at those offsets next are
    /// uploaded afresh and never read from the stale copy. Returns the
    /// forgotten entries.
    pub fn forget_from(&self, end: i64) -> Result<Vec<OffloadEntry>, StoreError> {
        let seg = self.segment_bytes as i64;
        let past: Vec<OffloadEntry> = self
            .read()
            .values()
            .filter(|entry| entry.start + seg > end)
            .cloned()
            .collect();
        if !past.is_empty() {
            let starts: Vec<i64> = past.iter().map(|entry| entry.start).collect();
            self.forget(&starts)?;
        }
        Ok(past)
    }

    /// The manifest as its file holds it (the copy a master publishes to
    /// object storage for the other replicas of its set).
    /// The tier directory under the store root (where the manifest lives).
    pub fn dir(&self) -> &Path {
        self.path.parent().unwrap_or(Path::new("."))
    }

    pub fn encode(&self) -> Result<Vec<u8>, StoreError> {
        let file = ManifestFile {
            segments: self.entries(),
        };
        serde_json::to_vec_pretty(&file)
            .map_err(|e| StoreError::Corrupt(format!("tier manifest encode: {e}")))
    }

    /// The entries of a published manifest's bytes, oldest first.
    pub fn decode(bytes: &[u8]) -> Result<Vec<OffloadEntry>, StoreError> {
        let file: ManifestFile = serde_json::from_slice(bytes)
            .map_err(|e| StoreError::Corrupt(format!("published tier manifest: {e}")))?;
        let entries: BTreeMap<i64, OffloadEntry> =
            file.segments.into_iter().map(|e| (e.start, e)).collect();
        Ok(entries.into_values().collect())
    }

    /// Writes the manifest naming `entries` as `dir/manifest.json` (a store
    /// restored from the object store), durably.
    pub fn write_restored(dir: &Path, entries: &[OffloadEntry]) -> Result<(), StoreError> {
        std::fs::create_dir_all(dir).io_context("create dir", dir)?;
        let file = ManifestFile {
            segments: entries.to_vec(),
        };
        let bytes = serde_json::to_vec_pretty(&file)
            .map_err(|e| StoreError::Corrupt(format!("tier manifest encode: {e}")))?;
        crate::json_file::write_atomic(&dir.join(MANIFEST_FILE), &bytes, false)
    }

    /// Takes the set's published manifest (`bytes`), durably: its entries
    /// of whole segments below `end` (this replica's CommitLog end; a copy
    /// past it holds bytes this log does not have, or has differently after
    /// a fork). A slave (`keep_own` false) takes exactly those; a master
    /// keeps its own entries below `end` as well (recorded, maybe dropped
    /// locally, before a crash kept them from being published). Answers
    /// whether anything changed.
    pub fn adopt(&self, bytes: &[u8], end: i64, keep_own: bool) -> Result<bool, StoreError> {
        let file: ManifestFile = serde_json::from_slice(bytes)
            .map_err(|e| StoreError::Corrupt(format!("published tier manifest: {e}")))?;
        let seg = self.segment_bytes as i64;
        let below = |e: &OffloadEntry| {
            e.size == self.segment_bytes && e.start % seg == 0 && e.start + seg <= end
        };
        let mut next: BTreeMap<i64, OffloadEntry> = match keep_own {
            true => self.read().clone(),
            false => BTreeMap::new(),
        };
        next.retain(|_, e| below(e));
        next.extend(
            file.segments
                .into_iter()
                .filter(below)
                .map(|e| (e.start, e)),
        );
        if *self.read() == next {
            return Ok(false);
        }
        self.change(|entries| *entries = next)?;
        Ok(true)
    }

    /// Applies `edit` to a copy, writes it durably, then publishes it.
    fn change(
        &self,
        edit: impl FnOnce(&mut BTreeMap<i64, OffloadEntry>),
    ) -> Result<(), StoreError> {
        let mut entries = self.entries.write().unwrap_or_else(|p| p.into_inner());
        let mut next = entries.clone();
        edit(&mut next);
        let file = ManifestFile {
            segments: next.values().cloned().collect(),
        };
        let bytes = serde_json::to_vec_pretty(&file)
            .map_err(|e| StoreError::Corrupt(format!("tier manifest encode: {e}")))?;
        crate::json_file::write_atomic(&self.path, &bytes, false)?;
        *entries = next;
        Ok(())
    }

    /// Every recorded copy, oldest first.
    pub fn entries(&self) -> Vec<OffloadEntry> {
        self.read().values().cloned().collect()
    }

    /// The verified copy of the segment starting at `start`.
    pub fn get(&self, start: i64) -> Option<OffloadEntry> {
        self.read().get(&start).cloned()
    }

    /// Whether the segment at `start` may be dropped locally: only when its
    /// remote copy is verified and recorded. The one decision every local
    /// deletion of a CommitLog segment asks while tiering is on.
    pub fn may_drop_locally(&self, start: i64) -> bool {
        self.read().contains_key(&start)
    }

    /// The lowest CommitLog offset still readable remotely below
    /// `local_min`: the start of the run of offloaded segments that ends
    /// where local data begins. `None` when there is none.
    pub fn remote_floor(&self, local_min: i64) -> Option<i64> {
        let entries = self.read();
        let seg = self.segment_bytes as i64;
        let mut floor = local_min;
        while entries.contains_key(&(floor - seg)) {
            floor -= seg;
        }
        (floor < local_min).then_some(floor)
    }

    /// How many segments are recorded.
    pub fn len(&self) -> usize {
        self.read().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Segment size the entries were made with.
    pub fn segment_bytes(&self) -> u64 {
        self.segment_bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(start: i64) -> OffloadEntry {
        OffloadEntry {
            start,
            size: 100,
            crc32: 7,
            key: format!("k/{start}"),
            uploaded_ms: 1,
            written_ms: 0,
        }
    }

    #[test]
    fn records_survive_reload_and_floor_is_contiguous() {
        let dir = tempfile::tempdir().unwrap();
        let m = Offloaded::load(dir.path(), 100).unwrap();
        assert!(!m.may_drop_locally(0));
        assert_eq!(m.remote_floor(300), None);
        m.record(entry(100)).unwrap();
        m.record(entry(200)).unwrap();
        let m = Offloaded::load(dir.path(), 100).unwrap();
        assert!(m.may_drop_locally(100) && m.may_drop_locally(200) && !m.may_drop_locally(0));
        assert_eq!(m.remote_floor(300), Some(100));
        // A hole stops the run.
        m.record(entry(400)).unwrap();
        assert_eq!(m.remote_floor(500), Some(400));
        assert_eq!(m.get(400).unwrap().crc32, 7);
        // A cut at 450 forgets the copy of [400, 500), durably.
        assert_eq!(m.forget_from(450).unwrap().len(), 1);
        assert!(m.forget_from(450).unwrap().is_empty());
        assert!(Offloaded::load(dir.path(), 100).unwrap().get(400).is_none());
        // A replica takes a published manifest, up to its own end.
        let other = tempfile::tempdir().unwrap();
        let replica = Offloaded::load(other.path(), 100).unwrap();
        assert!(replica.adopt(&m.encode().unwrap(), 300, false).unwrap());
        assert_eq!(replica.entries().len(), 2);
        assert!(!replica.adopt(&m.encode().unwrap(), 300, false).unwrap());
        assert!(replica.adopt(&m.encode().unwrap(), 250, false).unwrap());
        assert_eq!(replica.entries().len(), 1);
        // A master keeps its own entries (recorded, not yet published).
        replica.record(entry(0)).unwrap();
        replica.adopt(&m.encode().unwrap(), 300, true).unwrap();
        assert_eq!(replica.entries().len(), 3);
        let published = Offloaded::decode(&m.encode().unwrap()).unwrap();
        assert_eq!(published, m.entries());
        replica.adopt(&m.encode().unwrap(), 300, false).unwrap();
        assert!(replica.get(0).is_none());
        m.forget(&[100, 200]).unwrap();
        let m = Offloaded::load(dir.path(), 100).unwrap();
        assert!(m.is_empty());
        assert_eq!(m.remote_floor(300), None);
    }
}
