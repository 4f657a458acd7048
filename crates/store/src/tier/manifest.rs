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
    /// within its epoch's bytes here, or not at all ([`agreed_point`]). A
    /// copy of an epoch at or below `epoch_base` (from before the
    /// controller's epochs started again) is not taken at all.
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
        // A copy of an epoch at or below the base was published before the
        // controller's epochs started again: no entry of this epoch file
        // is of its epoch (nor is it one outside controller mode).
        let before_reset = epoch_base > 0 && file.epoch > 0 && file.epoch <= epoch_base;
        let agreed = match before_reset {
            true => None,
            false => agreed_point(epochs, end, controller_epoch, file.lineage.as_ref()),
        };
        let Some(agreed) = agreed else {
            // Its entries are not taken, but its epoch is newer than any seen
            // here: a later copy of an older epoch is still ignored.
            if file.epoch > current.epoch {
                self.change(|state| state.epoch = file.epoch)?;
            }
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
#[path = "manifest_tests.rs"]
mod tests;
