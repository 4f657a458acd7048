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

/// Where this store's CommitLog was cut back (a fork point in controller
/// mode, or a torn tail that took recorded segments), and the newest epoch
/// of the bytes cut: a published manifest of that epoch or older may name
/// copies of those bytes, which this log no longer has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cut {
    pub offset: i64,
    pub epoch: i32,
}

#[derive(Default, Serialize, Deserialize)]
struct ManifestFile {
    /// Published: the controller epoch of the master that published it (0
    /// outside controller mode, and in manifests written before epochs).
    /// Local: the highest published epoch this store adopted or published.
    #[serde(default)]
    epoch: i32,
    /// Local only: the last cut, until a newer epoch's manifest is adopted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    cut: Option<Cut>,
    segments: Vec<OffloadEntry>,
}

/// What the manifest holds in memory.
#[derive(Clone, Default, PartialEq, Eq)]
struct State {
    entries: BTreeMap<i64, OffloadEntry>,
    epoch: i32,
    cut: Option<Cut>,
}

/// What [`Offloaded::adopt`] did with a published manifest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Adopted {
    /// Taken; the local manifest changed.
    Changed,
    /// Taken; nothing changed.
    Same,
    /// Ignored: published under an epoch older than one already adopted or
    /// published here (a deposed master's, written over the new one's).
    Stale { published: i32, seen: i32 },
}

/// The manifest in memory, shared by the uploader, the appender (which
/// drops segments) and readers. `Send + Sync`.
pub struct Offloaded {
    path: PathBuf,
    segment_bytes: u64,
    state: RwLock<State>,
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
        let state = State {
            entries: file.segments.into_iter().map(|e| (e.start, e)).collect(),
            epoch: file.epoch,
            cut: file.cut,
        };
        Ok(Self {
            path,
            segment_bytes,
            state: RwLock::new(state),
        })
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, State> {
        self.state.read().unwrap_or_else(|p| p.into_inner())
    }

    /// Records a verified copy: written durably before it counts.
    pub fn record(&self, entry: OffloadEntry) -> Result<(), StoreError> {
        assert_eq!(
            entry.size, self.segment_bytes,
            "a whole segment is offloaded"
        );
        self.change(|state| {
            state.entries.insert(entry.start, entry);
        })
    }

    /// Forgets the remote copies of the segments at `starts` (before their
    /// objects are deleted): durably written before readers stop seeing
    /// them, so no reader trusts an entry whose object is gone for good.
    pub fn forget(&self, starts: &[i64]) -> Result<(), StoreError> {
        self.change(|state| {
            for start in starts {
                state.entries.remove(start);
            }
        })
    }

    /// Forgets every copy of a segment that reaches past `end` (the
    /// CommitLog was cut back there: by a fork point, or recovery cutting a
    /// torn tail), durably, so the bytes written at those offsets next are
    /// uploaded afresh and never read from the stale copy. With `epoch`
    /// above 0 (controller mode: the newest epoch of the bytes cut) the cut
    /// is kept too, so that [`Offloaded::adopt`] refuses copies past it from
    /// a manifest published under that epoch or an older one. Returns the
    /// forgotten entries.
    pub fn forget_from(&self, end: i64, epoch: i32) -> Result<Vec<OffloadEntry>, StoreError> {
        let seg = self.segment_bytes as i64;
        let past: Vec<OffloadEntry> = self
            .read()
            .entries
            .values()
            .filter(|entry| entry.start + seg > end)
            .cloned()
            .collect();
        if past.is_empty() && epoch <= 0 {
            return Ok(past);
        }
        self.change(|state| {
            state.entries.retain(|_, entry| entry.start + seg <= end);
            if epoch > 0 {
                // Two cuts before a newer epoch's manifest: the lower
                // offset and the newer epoch cover both.
                state.cut = Some(match state.cut {
                    Some(cut) => Cut {
                        offset: cut.offset.min(end),
                        epoch: cut.epoch.max(epoch),
                    },
                    None => Cut { offset: end, epoch },
                });
            }
        })?;
        Ok(past)
    }

    /// The manifest as its file holds it (the copy a master publishes to
    /// object storage for the other replicas of its set).
    /// The tier directory under the store root (where the manifest lives).
    pub fn dir(&self) -> &Path {
        self.path.parent().unwrap_or(Path::new("."))
    }

    /// The copy a master of controller epoch `epoch` (0 outside controller
    /// mode) publishes: its entries and that epoch.
    pub fn encode(&self, epoch: i32) -> Result<Vec<u8>, StoreError> {
        let file = ManifestFile {
            epoch,
            cut: None,
            segments: self.entries(),
        };
        serde_json::to_vec_pretty(&file)
            .map_err(|e| StoreError::Corrupt(format!("tier manifest encode: {e}")))
    }

    /// The epoch a published manifest's bytes carry (0: none).
    pub fn decode_epoch(bytes: &[u8]) -> Result<i32, StoreError> {
        let file: ManifestFile = serde_json::from_slice(bytes)
            .map_err(|e| StoreError::Corrupt(format!("published tier manifest: {e}")))?;
        Ok(file.epoch)
    }

    /// The highest epoch of a manifest this store adopted or published.
    pub fn epoch(&self) -> i32 {
        self.read().epoch
    }

    /// The last cut still kept (see [`Offloaded::forget_from`]).
    pub fn cut(&self) -> Option<Cut> {
        self.read().cut
    }

    /// Remembers, durably, that a manifest of `epoch` was published from
    /// here (no write when an epoch as high is known already).
    pub fn note_epoch(&self, epoch: i32) -> Result<(), StoreError> {
        if self.epoch() >= epoch {
            return Ok(());
        }
        self.change(|state| state.epoch = state.epoch.max(epoch))
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
            epoch: 0,
            cut: None,
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
    /// locally, before a crash kept them from being published). A manifest
    /// of an epoch older than one seen here is ignored; one of the kept
    /// cut's epoch or older gives nothing past the cut; a newer one lifts
    /// the cut. One of epoch 0 (published outside controller mode) is taken
    /// as it is, and leaves the epoch and cut kept here as they are.
    pub fn adopt(&self, bytes: &[u8], end: i64, keep_own: bool) -> Result<Adopted, StoreError> {
        let file: ManifestFile = serde_json::from_slice(bytes)
            .map_err(|e| StoreError::Corrupt(format!("published tier manifest: {e}")))?;
        let current = self.read().clone();
        let controlled = file.epoch > 0;
        if controlled && file.epoch < current.epoch {
            return Ok(Adopted::Stale {
                published: file.epoch,
                seen: current.epoch,
            });
        }
        let seg = self.segment_bytes as i64;
        let below = |e: &OffloadEntry| {
            e.size == self.segment_bytes && e.start % seg == 0 && e.start + seg <= end
        };
        let cut = current
            .cut
            .filter(|cut| !controlled || file.epoch <= cut.epoch);
        let before_cut =
            |e: &OffloadEntry| !controlled || cut.map_or(true, |cut| e.start + seg <= cut.offset);
        let mut next = State {
            entries: match keep_own {
                true => current.entries.clone(),
                false => BTreeMap::new(),
            },
            epoch: current.epoch.max(file.epoch),
            cut,
        };
        next.entries.retain(|_, e| below(e));
        next.entries.extend(
            file.segments
                .into_iter()
                .filter(|e| below(e) && before_cut(e))
                .map(|e| (e.start, e)),
        );
        if current == next {
            return Ok(Adopted::Same);
        }
        self.change(|state| *state = next)?;
        Ok(Adopted::Changed)
    }

    /// Applies `edit` to a copy, writes it durably, then publishes it.
    fn change(&self, edit: impl FnOnce(&mut State)) -> Result<(), StoreError> {
        let mut state = self.state.write().unwrap_or_else(|p| p.into_inner());
        let mut next = state.clone();
        edit(&mut next);
        let file = ManifestFile {
            epoch: next.epoch,
            cut: next.cut,
            segments: next.entries.values().cloned().collect(),
        };
        let bytes = serde_json::to_vec_pretty(&file)
            .map_err(|e| StoreError::Corrupt(format!("tier manifest encode: {e}")))?;
        crate::json_file::write_atomic(&self.path, &bytes, false)?;
        *state = next;
        Ok(())
    }

    /// Every recorded copy, oldest first.
    pub fn entries(&self) -> Vec<OffloadEntry> {
        self.read().entries.values().cloned().collect()
    }

    /// The verified copy of the segment starting at `start`.
    pub fn get(&self, start: i64) -> Option<OffloadEntry> {
        self.read().entries.get(&start).cloned()
    }

    /// Whether the segment at `start` may be dropped locally: only when its
    /// remote copy is verified and recorded. The one decision every local
    /// deletion of a CommitLog segment asks while tiering is on.
    pub fn may_drop_locally(&self, start: i64) -> bool {
        self.read().entries.contains_key(&start)
    }

    /// The lowest CommitLog offset still readable remotely below
    /// `local_min`: the start of the run of offloaded segments that ends
    /// where local data begins. `None` when there is none.
    pub fn remote_floor(&self, local_min: i64) -> Option<i64> {
        let state = self.read();
        let entries = &state.entries;
        let seg = self.segment_bytes as i64;
        let mut floor = local_min;
        while entries.contains_key(&(floor - seg)) {
            floor -= seg;
        }
        (floor < local_min).then_some(floor)
    }

    /// How many segments are recorded.
    pub fn len(&self) -> usize {
        self.read().entries.len()
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
        assert_eq!(m.forget_from(450, 0).unwrap().len(), 1);
        assert!(m.forget_from(450, 0).unwrap().is_empty());
        assert!(Offloaded::load(dir.path(), 100).unwrap().get(400).is_none());
        // A replica takes a published manifest, up to its own end.
        let other = tempfile::tempdir().unwrap();
        let replica = Offloaded::load(other.path(), 100).unwrap();
        assert_eq!(
            replica.adopt(&m.encode(0).unwrap(), 300, false).unwrap(),
            Adopted::Changed
        );
        assert_eq!(replica.entries().len(), 2);
        assert_eq!(
            replica.adopt(&m.encode(0).unwrap(), 300, false).unwrap(),
            Adopted::Same
        );
        assert_eq!(
            replica.adopt(&m.encode(0).unwrap(), 250, false).unwrap(),
            Adopted::Changed
        );
        assert_eq!(replica.entries().len(), 1);
        // A master keeps its own entries (recorded, not yet published).
        replica.record(entry(0)).unwrap();
        replica.adopt(&m.encode(0).unwrap(), 300, true).unwrap();
        assert_eq!(replica.entries().len(), 3);
        let published = Offloaded::decode(&m.encode(0).unwrap()).unwrap();
        assert_eq!(published, m.entries());
        replica.adopt(&m.encode(0).unwrap(), 300, false).unwrap();
        assert!(replica.get(0).is_none());
        m.forget(&[100, 200]).unwrap();
        let m = Offloaded::load(dir.path(), 100).unwrap();
        assert!(m.is_empty());
        assert_eq!(m.remote_floor(300), None);
    }

    /// The published manifests of a set in controller mode: `entries` of
    /// segment starts, published under `epoch`.
    fn published(epoch: i32, starts: &[i64]) -> Vec<u8> {
        let dir = tempfile::tempdir().unwrap();
        let m = Offloaded::load(dir.path(), 100).unwrap();
        for start in starts {
            m.record(entry(*start)).unwrap();
        }
        m.encode(epoch).unwrap()
    }

    #[test]
    fn an_older_epoch_is_ignored_and_the_highest_seen_kept() {
        let dir = tempfile::tempdir().unwrap();
        let slave = Offloaded::load(dir.path(), 100).unwrap();
        assert_eq!(Offloaded::decode_epoch(&published(3, &[0])).unwrap(), 3);
        assert_eq!(
            slave.adopt(&published(3, &[0, 100]), 500, false).unwrap(),
            Adopted::Changed
        );
        // A deposed master of epoch 2 wrote over the new master's copy.
        let stale = published(2, &[0, 100, 200]);
        let ignored = Adopted::Stale {
            published: 2,
            seen: 3,
        };
        assert_eq!(slave.adopt(&stale, 500, false).unwrap(), ignored);
        // Durably: a restart ignores it too.
        let slave = Offloaded::load(dir.path(), 100).unwrap();
        assert_eq!(slave.epoch(), 3);
        assert_eq!(slave.adopt(&stale, 500, false).unwrap(), ignored);
        assert_eq!(slave.entries().len(), 2);
        slave.note_epoch(4).unwrap();
        slave.note_epoch(1).unwrap();
        assert_eq!(Offloaded::load(dir.path(), 100).unwrap().epoch(), 4);
    }

    #[test]
    fn copies_past_a_cut_wait_for_a_newer_epoch() {
        let dir = tempfile::tempdir().unwrap();
        let slave = Offloaded::load(dir.path(), 100).unwrap();
        slave.adopt(&published(1, &[0, 100]), 200, false).unwrap();
        // Cut at 150 (a fork point; its bytes were of epoch 1): [100, 200)
        // is forgotten and the cut kept, durably.
        assert_eq!(slave.forget_from(150, 1).unwrap().len(), 1);
        let slave = Offloaded::load(dir.path(), 100).unwrap();
        assert_eq!(
            slave.cut(),
            Some(Cut {
                offset: 150,
                epoch: 1
            })
        );
        // The old master's manifest (epoch 1) still names [100, 300): the
        // log holds the new master's bytes there now, and takes nothing
        // past the cut from it.
        slave
            .adopt(&published(1, &[0, 100, 200]), 400, false)
            .unwrap();
        assert_eq!(slave.entries(), vec![entry(0)]);
        // The new master's (epoch 2) is taken whole, and lifts the cut.
        slave
            .adopt(&published(2, &[0, 100, 200]), 400, false)
            .unwrap();
        assert_eq!(slave.entries().len(), 3);
        assert_eq!(slave.cut(), None);
        // Outside controller mode (epoch 0) no cut is kept.
        slave.forget_from(150, 0).unwrap();
        assert_eq!(slave.cut(), None);
        slave
            .adopt(&published(2, &[0, 100, 200]), 400, false)
            .unwrap();
        assert_eq!(slave.entries().len(), 3);
        // A manifest of epoch 0 (a set out of controller mode) is taken as
        // before, past a cut too; the epoch and the cut stay.
        slave.forget_from(150, 2).unwrap();
        slave
            .adopt(&published(0, &[0, 100, 200]), 400, false)
            .unwrap();
        assert_eq!(slave.entries().len(), 3);
        let kept = (slave.epoch(), slave.cut().map(|c| c.offset));
        assert_eq!(kept, (2, Some(150)));
    }
}
