//! The durable record of offloaded segments (`tier/manifest.json` under the
//! store root): a segment is listed only after its remote copy was read
//! back and matched size and CRC32. Only listed segments may leave the
//! local disk ([`Offloaded::may_drop_locally`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::RwLock;

use serde::{Deserialize, Serialize};

use super::lineage::{agreed_point, Lineage};
use crate::epoch::EpochCache;
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
    /// Published: the controller epoch of the master that published it (0
    /// outside controller mode, and in manifests written before epochs).
    /// Local: the highest published epoch this store adopted or published.
    #[serde(default)]
    epoch: i32,
    /// Published in controller mode: the publisher's epochs over what its
    /// entries cover ([`Lineage`]); an adopter takes only entries that end
    /// where both logs still agree. Absent outside controller mode, in
    /// local files, and in manifests written before it was published.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    lineage: Option<Lineage>,
    segments: Vec<OffloadEntry>,
}

/// What the manifest holds in memory.
#[derive(Clone, Default, PartialEq, Eq)]
struct State {
    entries: BTreeMap<i64, OffloadEntry>,
    epoch: i32,
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
    /// Ignored: published under `epoch` without a lineage (a Ferrocket
    /// before lineages) while this log holds no bytes of that epoch, so
    /// nothing tells where the two logs agree ([`agreed_point`]).
    Unproven { epoch: i32 },
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
    /// uploaded afresh and never read from the stale copy. (A published
    /// copy of them is not adopted again unless the log holds the same
    /// bytes there once more: [`Offloaded::adopt`].) Returns the forgotten
    /// entries.
    pub fn forget_from(&self, end: i64) -> Result<Vec<OffloadEntry>, StoreError> {
        let seg = self.segment_bytes as i64;
        let past: Vec<OffloadEntry> = self
            .read()
            .entries
            .values()
            .filter(|entry| entry.start + seg > end)
            .cloned()
            .collect();
        if past.is_empty() {
            return Ok(past);
        }
        self.change(|state| {
            state.entries.retain(|_, entry| entry.start + seg <= end);
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
    /// mode) publishes: its entries, that epoch and, in controller mode,
    /// its lineage (`epochs`: its epoch file's list).
    pub fn encode(&self, epoch: i32, epochs: &EpochCache) -> Result<Vec<u8>, StoreError> {
        let segments = self.entries();
        let seg = self.segment_bytes as i64;
        let end = segments.last().map_or(0, |last| last.start + seg);
        let file = ManifestFile {
            epoch,
            // No epoch of the list starts at or below `end` (the epoch
            // file was cut back to one entry when the controller's epochs
            // started again): none vouches for those bytes, and an empty
            // lineage would have adopters take nothing.
            lineage: (epoch > 0)
                .then(|| Lineage::of(epochs, end))
                .filter(|lineage| !lineage.epochs.is_empty()),
            segments,
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
            lineage: None,
            segments: entries.to_vec(),
        };
        let bytes = serde_json::to_vec_pretty(&file)
            .map_err(|e| StoreError::Corrupt(format!("tier manifest encode: {e}")))?;
        crate::json_file::write_atomic(&dir.join(MANIFEST_FILE), &bytes, false)
    }

    /// Takes the set's published manifest (`bytes`), durably: its entries
    /// of whole segments that end at or below `end` (this replica's
    /// CommitLog end; a copy past it holds bytes this log does not have)
    /// and, when it carries the publisher's lineage (controller mode), at
    /// or below the last point where this log (its epochs: `epochs`) and
    /// the publisher's agree: a copy past the fork between the two logs
    /// holds other bytes than this log's. A slave (`keep_own` false) takes
    /// exactly those; a master keeps its own entries below `end` as well
    /// (recorded, maybe dropped locally, before a crash kept them from
    /// being published). A manifest of an epoch older than one seen here is
    /// ignored. One without a lineage is taken up to `end` outside
    /// controller mode (epoch 0), and in it (written before lineages) only
    /// within its epoch's bytes here, or not at all ([`agreed_point`]).
    pub fn adopt(
        &self,
        bytes: &[u8],
        end: i64,
        epochs: &EpochCache,
        epoch_base: i32,
        keep_own: bool,
    ) -> Result<Adopted, StoreError> {
        let file: ManifestFile = serde_json::from_slice(bytes)
            .map_err(|e| StoreError::Corrupt(format!("published tier manifest: {e}")))?;
        let current = self.read().clone();
        if file.epoch > 0 && file.epoch < current.epoch {
            return Ok(Adopted::Stale {
                published: file.epoch,
                seen: current.epoch,
            });
        }
        // A copy's epoch carries the set's `tieredStoreEpochBase`; the
        // epoch file's entries do not.
        let controller_epoch = file.epoch.saturating_sub(epoch_base.max(0));
        let Some(agreed) = agreed_point(epochs, end, controller_epoch, file.lineage.as_ref()) else {
            return Ok(Adopted::Unproven { epoch: file.epoch });
        };
        let seg = self.segment_bytes as i64;
        let below = |e: &OffloadEntry, limit: i64| {
            e.size == self.segment_bytes && e.start % seg == 0 && e.start + seg <= limit
        };
        let mut next = State {
            entries: match keep_own {
                true => current.entries.clone(),
                false => BTreeMap::new(),
            },
            epoch: current.epoch.max(file.epoch),
        };
        next.entries.retain(|_, e| below(e, end));
        next.entries.extend(
            file.segments
                .into_iter()
                .filter(|e| below(e, agreed))
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
            lineage: None,
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

    fn none() -> EpochCache {
        EpochCache::new()
    }

    use crate::tier::test_epochs as epochs;

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
        assert_eq!(
            replica
                .adopt(&m.encode(0, &none()).unwrap(), 300, &none(), 0, false)
                .unwrap(),
            Adopted::Changed
        );
        assert_eq!(replica.entries().len(), 2);
        assert_eq!(
            replica
                .adopt(&m.encode(0, &none()).unwrap(), 300, &none(), 0, false)
                .unwrap(),
            Adopted::Same
        );
        assert_eq!(
            replica
                .adopt(&m.encode(0, &none()).unwrap(), 250, &none(), 0, false)
                .unwrap(),
            Adopted::Changed
        );
        assert_eq!(replica.entries().len(), 1);
        // A master keeps its own entries (recorded, not yet published).
        replica.record(entry(0)).unwrap();
        replica
            .adopt(&m.encode(0, &none()).unwrap(), 300, &none(), 0, true)
            .unwrap();
        assert_eq!(replica.entries().len(), 3);
        let published = Offloaded::decode(&m.encode(0, &none()).unwrap()).unwrap();
        assert_eq!(published, m.entries());
        replica
            .adopt(&m.encode(0, &none()).unwrap(), 300, &none(), 0, false)
            .unwrap();
        assert!(replica.get(0).is_none());
        m.forget(&[100, 200]).unwrap();
        let m = Offloaded::load(dir.path(), 100).unwrap();
        assert!(m.is_empty());
        assert_eq!(m.remote_floor(300), None);
    }

    /// The published manifests of a set in controller mode: `entries` of
    /// segment starts, published under `epoch` by a master whose epochs
    /// began at 0.
    fn published(epoch: i32, starts: &[i64]) -> Vec<u8> {
        published_by(epoch, &[(epoch, 0)], starts)
    }

    #[test]
    fn an_older_epoch_is_ignored_and_the_highest_seen_kept() {
        let dir = tempfile::tempdir().unwrap();
        let slave = Offloaded::load(dir.path(), 100).unwrap();
        assert_eq!(Offloaded::decode_epoch(&published(3, &[0])).unwrap(), 3);
        // Without a lineage (a Ferrocket before lineages), in a log that
        // holds no bytes of epoch 3: not taken.
        let bare = br#"{"epoch":3,"segments":[{"start":0,"size":100,"crc32":7,"key":"k/0","uploadedMs":1}]}"#;
        let unproven = Adopted::Unproven { epoch: 3 };
        assert_eq!(slave.adopt(bare, 500, &none(), 0, false).unwrap(), unproven);
        assert_eq!(
            slave.adopt(bare, 500, &epochs(&[(3, 0)]), 0, false).unwrap(),
            Adopted::Changed
        );
        assert_eq!(
            slave
                .adopt(&published(3, &[0, 100]), 500, &epochs(&[(3, 0)]), 0, false)
                .unwrap(),
            Adopted::Changed
        );
        // A deposed master of epoch 2 wrote over the new master's copy.
        let stale = published(2, &[0, 100, 200]);
        let ignored = Adopted::Stale {
            published: 2,
            seen: 3,
        };
        assert_eq!(slave.adopt(&stale, 500, &none(), 0, false).unwrap(), ignored);
        // Durably: a restart ignores it too.
        let slave = Offloaded::load(dir.path(), 100).unwrap();
        assert_eq!(slave.epoch(), 3);
        assert_eq!(slave.adopt(&stale, 500, &none(), 0, false).unwrap(), ignored);
        assert_eq!(slave.entries().len(), 2);
        slave.note_epoch(4).unwrap();
        slave.note_epoch(1).unwrap();
        assert_eq!(Offloaded::load(dir.path(), 100).unwrap().epoch(), 4);
    }

    /// A manifest of `starts` published under `epoch` by a master whose
    /// epoch file holds `lineage`.
    fn published_by(epoch: i32, lineage: &[(i32, i64)], starts: &[i64]) -> Vec<u8> {
        let dir = tempfile::tempdir().unwrap();
        let m = Offloaded::load(dir.path(), 100).unwrap();
        for start in starts {
            m.record(entry(*start)).unwrap();
        }
        m.encode(epoch, &epochs(lineage)).unwrap()
    }

    fn starts(m: &Offloaded) -> Vec<i64> {
        m.entries().iter().map(|e| e.start).collect()
    }

    /// A master of epoch 4, deposed while its log forked from the new
    /// master's (epoch 5) at 150, seals [100, 200) and [200, 300) and
    /// publishes them before the new master publishes: neither the new
    /// master nor a slave of its takes them (they upload their own).
    #[test]
    fn a_deposed_masters_copy_past_the_fork_is_not_taken() {
        let zombie = published_by(4, &[(1, 0), (4, 100)], &[0, 100, 200]);
        let new_master = epochs(&[(1, 0), (4, 100), (5, 150)]);
        for keep_own in [true, false] {
            let dir = tempfile::tempdir().unwrap();
            let m = Offloaded::load(dir.path(), 100).unwrap();
            m.record(entry(300)).unwrap();
            m.adopt(&zombie, 600, &new_master, 0, keep_own).unwrap();
            let own = if keep_own { vec![0, 300] } else { vec![0] };
            assert_eq!(starts(&m), own, "keep_own {keep_own}");
        }
        // The same copy, to a replica whose log is the deposed master's
        // (it never followed the new one): taken as far as it reaches.
        let dir = tempfile::tempdir().unwrap();
        let m = Offloaded::load(dir.path(), 100).unwrap();
        m.adopt(&zombie, 250, &epochs(&[(1, 0), (4, 100)]), 0, false)
            .unwrap();
        assert_eq!(starts(&m), vec![0, 100]);
        // Outside controller mode (no lineage): up to the end, as before.
        m.adopt(
            &published_by(0, &[(1, 0)], &[0, 100, 200]),
            300,
            &none(),
            0,
            false,
        )
        .unwrap();
        assert_eq!(starts(&m), vec![0, 100, 200]);
    }

    /// A deposed master of a higher epoch (4) than any of the slave's bytes
    /// (epoch 3, the slave's log cut back to 400 or not): its copies past
    /// where epoch 4 began (150) are not taken.
    #[test]
    fn a_higher_epoch_past_the_slaves_bytes_is_not_taken() {
        let dir = tempfile::tempdir().unwrap();
        let slave = Offloaded::load(dir.path(), 100).unwrap();
        let zombie = published_by(4, &[(1, 0), (3, 100), (4, 150)], &[0, 100, 200, 300]);
        slave
            .adopt(&zombie, 400, &epochs(&[(1, 0), (3, 100)]), 0, false)
            .unwrap();
        assert_eq!(starts(&slave), vec![0]);
        // Once the slave holds epoch 4's bytes (it follows that master).
        let follows = epochs(&[(1, 0), (3, 100), (4, 150)]);
        slave.adopt(&zombie, 400, &follows, 0, false).unwrap();
        assert_eq!(starts(&slave), vec![0, 100, 200, 300]);
    }

    /// Recovery cut a torn tail at 150 (the slave's log, then copied from
    /// the same master again): the master's copies are taken again once
    /// the log holds those bytes again, in the same term.
    #[test]
    fn a_torn_tail_keeps_nothing_from_being_taken_again() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join(super::super::TIER_DIR);
        let lineage = [(1, 0), (3, 100)];
        let master = published_by(3, &lineage, &[0, 100, 200]);
        let slave = Offloaded::load(&dir, 100).unwrap();
        slave.adopt(&master, 300, &epochs(&lineage), 0, false).unwrap();
        assert_eq!(super::super::forget_past(root.path(), 100, 150).unwrap(), 2);
        let slave = Offloaded::load(&dir, 100).unwrap();
        assert_eq!(starts(&slave), vec![0]);
        slave.adopt(&master, 250, &epochs(&lineage), 0, false).unwrap();
        assert_eq!(starts(&slave), vec![0, 100]);
        slave.adopt(&master, 300, &epochs(&lineage), 0, false).unwrap();
        assert_eq!(starts(&slave), vec![0, 100, 200]);
    }

    /// After the controller's epochs started again, the new master's epoch
    /// file holds one entry, from its log's end on: its copy carries no
    /// (empty) lineage. A slave given the same `tieredStoreEpochBase` (7:
    /// the copy's epoch 8 is controller epoch 1) takes its entries up to
    /// its end; one without the base finds no epoch 8 and takes nothing.
    #[test]
    fn a_master_whose_epochs_start_past_the_entries_is_taken() {
        let copy = published_by(8, &[(1, 500)], &[0, 100]);
        let file: ManifestFile = serde_json::from_slice(&copy).unwrap();
        assert!(file.lineage.is_none());
        let dir = tempfile::tempdir().unwrap();
        let slave = Offloaded::load(dir.path(), 100).unwrap();
        let own = epochs(&[(1, 500)]);
        let unproven = Adopted::Unproven { epoch: 8 };
        assert_eq!(slave.adopt(&copy, 600, &own, 0, false).unwrap(), unproven);
        assert!(starts(&slave).is_empty());
        slave.adopt(&copy, 600, &own, 7, false).unwrap();
        assert_eq!(starts(&slave), vec![0, 100]);
    }
}
