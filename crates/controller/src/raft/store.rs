//! Durable Raft storage for the controller (openraft's `RaftStorage`, used
//! through its `Adaptor`). Everything is also held in memory; on disk:
//! - `raft-log`: entries (and the id of the last purged one) in a
//!   [`LogFile`], synced before an append returns;
//! - `raft-vote.json`: the vote, written beside and renamed over;
//! - `raft-snapshot.json`: the last snapshot (state plus its log position).
//!
//! The state machine is rebuilt on start from the snapshot, and openraft
//! re-applies the committed entries after it.

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::fs::{self, File};
use std::io::{Cursor, Write};
use std::ops::RangeBounds;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use openraft::storage::{LogState, RaftLogReader, RaftSnapshotBuilder, Snapshot};
use openraft::{
    BasicNode, Entry, EntryPayload, LogId, OptionalSend, RaftStorage, SnapshotMeta, StorageError,
    StorageIOError, StoredMembership, Vote,
};
use serde::{Deserialize, Serialize};

use super::log_file::LogFile;
use super::TypeConfig;
use crate::state::ControllerState;

type NodeId = u64;
type StorageResult<T> = Result<T, StorageError<NodeId>>;

const LOG_FILE: &str = "raft-log";
const VOTE_FILE: &str = "raft-vote.json";
const SNAPSHOT_FILE: &str = "raft-snapshot.json";

/// One record of the log file.
#[derive(Serialize, Deserialize)]
enum LogRecord {
    /// Entries up to this one were purged (first record after a purge).
    Purged(LogId<NodeId>),
    Entry(Entry<TypeConfig>),
}

#[derive(Clone, Serialize, Deserialize)]
struct StoredSnapshot {
    meta: SnapshotMeta<NodeId, BasicNode>,
    data: Vec<u8>,
}

struct Inner {
    dir: PathBuf,
    log_file: LogFile,
    log: BTreeMap<u64, Entry<TypeConfig>>,
    last_purged: Option<LogId<NodeId>>,
    vote: Option<Vote<NodeId>>,
    last_applied: Option<LogId<NodeId>>,
    membership: StoredMembership<NodeId, BasicNode>,
    state: ControllerState,
    snapshot: Option<StoredSnapshot>,
    snapshots_built: u64,
}

/// The controller's Raft store; clones share it.
#[derive(Clone)]
pub struct Store {
    inner: Arc<Mutex<Inner>>,
}

fn io_error(e: impl std::error::Error + 'static) -> StorageError<NodeId> {
    StorageIOError::write(&e).into()
}

fn read_error(e: impl std::error::Error + 'static) -> StorageError<NodeId> {
    StorageIOError::read(&e).into()
}

/// Writes `bytes` to `path` through a file beside it, synced and renamed.
fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let tmp = path.with_extension("tmp");
    let mut file = File::create(&tmp)?;
    file.write_all(bytes)?;
    file.sync_all()?;
    fs::rename(&tmp, path)?;
    if let Some(dir) = path.parent() {
        File::open(dir)?.sync_all()?;
    }
    Ok(())
}

fn read_json<T: for<'de> Deserialize<'de>>(path: &Path) -> std::io::Result<Option<T>> {
    match fs::read(path) {
        Ok(bytes) => serde_json::from_slice(&bytes).map(Some).map_err(|e| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("{}: {e}", path.display()),
            )
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

impl Store {
    /// Opens the store in `dir` (created if missing).
    pub fn open(dir: &Path) -> std::io::Result<Self> {
        fs::create_dir_all(dir)?;
        let (log_file, records) = LogFile::open(&dir.join(LOG_FILE))?;
        let mut log = BTreeMap::new();
        let mut last_purged = None;
        for bytes in records {
            let record: LogRecord = serde_json::from_slice(&bytes)
                .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
            match record {
                LogRecord::Purged(id) => last_purged = Some(id),
                LogRecord::Entry(entry) => {
                    log.insert(entry.log_id.index, entry);
                }
            }
        }
        let vote = read_json(&dir.join(VOTE_FILE))?;
        let snapshot: Option<StoredSnapshot> = read_json(&dir.join(SNAPSHOT_FILE))?;
        let mut inner = Inner {
            dir: dir.to_path_buf(),
            log_file,
            log,
            last_purged,
            vote,
            last_applied: None,
            membership: StoredMembership::default(),
            state: ControllerState::default(),
            snapshot: None,
            snapshots_built: 0,
        };
        if let Some(snapshot) = snapshot {
            inner.install(snapshot)?;
        }
        Ok(Self {
            inner: Arc::new(Mutex::new(inner)),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while holding the lock leaves plain data behind; the
        // store stays usable.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether nothing was ever stored: no vote, no log, no snapshot.
    pub fn is_fresh(&self) -> bool {
        let inner = self.lock();
        inner.vote.is_none() && inner.log.is_empty() && inner.snapshot.is_none()
    }

    /// Runs `f` on the applied state.
    pub fn read<R>(&self, f: impl FnOnce(&ControllerState) -> R) -> R {
        f(&self.lock().state)
    }
}

impl Inner {
    fn install(&mut self, snapshot: StoredSnapshot) -> std::io::Result<()> {
        let state: ControllerState = serde_json::from_slice(&snapshot.data)
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
        self.state = state;
        self.last_applied = snapshot.meta.last_log_id;
        self.membership = snapshot.meta.last_membership.clone();
        self.snapshot = Some(snapshot);
        Ok(())
    }

    fn save_snapshot(&mut self, snapshot: StoredSnapshot) -> std::io::Result<()> {
        let bytes = serde_json::to_vec(&snapshot).map_err(std::io::Error::other)?;
        write_atomically(&self.dir.join(SNAPSHOT_FILE), &bytes)?;
        self.snapshot = Some(snapshot);
        Ok(())
    }

    /// Rewrites the log file from memory (after truncating or purging).
    fn rewrite_log(&mut self) -> std::io::Result<()> {
        let mut records = Vec::with_capacity(self.log.len() + 1);
        if let Some(purged) = self.last_purged {
            records.push(serde_json::to_vec(&LogRecord::Purged(purged))?);
        }
        for entry in self.log.values() {
            let record = LogRecord::Entry(entry.clone());
            records.push(serde_json::to_vec(&record)?);
        }
        self.log_file.rewrite(records.iter().map(Vec::as_slice))
    }
}

impl RaftLogReader<TypeConfig> for Store {
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + Debug + OptionalSend>(
        &mut self,
        range: RB,
    ) -> StorageResult<Vec<Entry<TypeConfig>>> {
        Ok(self
            .lock()
            .log
            .range(range)
            .map(|(_, e)| e.clone())
            .collect())
    }
}

impl RaftSnapshotBuilder<TypeConfig> for Store {
    async fn build_snapshot(&mut self) -> StorageResult<Snapshot<TypeConfig>> {
        let mut inner = self.lock();
        let data = serde_json::to_vec(&inner.state).map_err(read_error)?;
        inner.snapshots_built += 1;
        let snapshot_id = match inner.last_applied {
            Some(id) => format!("{}-{}-{}", id.leader_id, id.index, inner.snapshots_built),
            None => format!("--{}", inner.snapshots_built),
        };
        let meta = SnapshotMeta {
            last_log_id: inner.last_applied,
            last_membership: inner.membership.clone(),
            snapshot_id,
        };
        inner
            .save_snapshot(StoredSnapshot {
                meta: meta.clone(),
                data: data.clone(),
            })
            .map_err(io_error)?;
        Ok(Snapshot {
            meta,
            snapshot: Box::new(Cursor::new(data)),
        })
    }
}

impl RaftStorage<TypeConfig> for Store {
    type LogReader = Self;
    type SnapshotBuilder = Self;

    async fn save_vote(&mut self, vote: &Vote<NodeId>) -> StorageResult<()> {
        let mut inner = self.lock();
        let bytes = serde_json::to_vec(vote).map_err(io_error)?;
        write_atomically(&inner.dir.join(VOTE_FILE), &bytes).map_err(io_error)?;
        inner.vote = Some(*vote);
        Ok(())
    }

    async fn read_vote(&mut self) -> StorageResult<Option<Vote<NodeId>>> {
        Ok(self.lock().vote)
    }

    async fn get_log_state(&mut self) -> StorageResult<LogState<TypeConfig>> {
        let inner = self.lock();
        let last = inner.log.values().next_back().map(|e| e.log_id);
        Ok(LogState {
            last_purged_log_id: inner.last_purged,
            last_log_id: last.or(inner.last_purged),
        })
    }

    async fn get_log_reader(&mut self) -> Self::LogReader {
        self.clone()
    }

    async fn append_to_log<I>(&mut self, entries: I) -> StorageResult<()>
    where
        I: IntoIterator<Item = Entry<TypeConfig>> + OptionalSend,
    {
        let mut inner = self.lock();
        let entries: Vec<Entry<TypeConfig>> = entries.into_iter().collect();
        let mut records = Vec::with_capacity(entries.len());
        for entry in &entries {
            let record = LogRecord::Entry(entry.clone());
            records.push(serde_json::to_vec(&record).map_err(io_error)?);
        }
        inner
            .log_file
            .append(records.iter().map(Vec::as_slice))
            .map_err(io_error)?;
        for entry in entries {
            inner.log.insert(entry.log_id.index, entry);
        }
        Ok(())
    }

    async fn delete_conflict_logs_since(&mut self, log_id: LogId<NodeId>) -> StorageResult<()> {
        let mut inner = self.lock();
        inner.log.split_off(&log_id.index);
        inner.rewrite_log().map_err(io_error)
    }

    async fn purge_logs_upto(&mut self, log_id: LogId<NodeId>) -> StorageResult<()> {
        let mut inner = self.lock();
        assert!(inner.last_purged <= Some(log_id), "purge moves forward");
        inner.last_purged = Some(log_id);
        let kept = inner.log.split_off(&(log_id.index + 1));
        inner.log = kept;
        inner.rewrite_log().map_err(io_error)
    }

    async fn last_applied_state(
        &mut self,
    ) -> StorageResult<(Option<LogId<NodeId>>, StoredMembership<NodeId, BasicNode>)> {
        let inner = self.lock();
        Ok((inner.last_applied, inner.membership.clone()))
    }

    async fn apply_to_state_machine(
        &mut self,
        entries: &[Entry<TypeConfig>],
    ) -> StorageResult<Vec<()>> {
        let mut inner = self.lock();
        for entry in entries {
            inner.last_applied = Some(entry.log_id);
            match &entry.payload {
                EntryPayload::Blank => {}
                EntryPayload::Normal(events) => {
                    for event in &events.0 {
                        inner.state.apply(event);
                    }
                }
                EntryPayload::Membership(membership) => {
                    inner.membership =
                        StoredMembership::new(Some(entry.log_id), membership.clone());
                }
            }
        }
        Ok(vec![(); entries.len()])
    }

    async fn get_snapshot_builder(&mut self) -> Self::SnapshotBuilder {
        self.clone()
    }

    async fn begin_receiving_snapshot(&mut self) -> StorageResult<Box<Cursor<Vec<u8>>>> {
        Ok(Box::new(Cursor::new(Vec::new())))
    }

    async fn install_snapshot(
        &mut self,
        meta: &SnapshotMeta<NodeId, BasicNode>,
        snapshot: Box<Cursor<Vec<u8>>>,
    ) -> StorageResult<()> {
        let stored = StoredSnapshot {
            meta: meta.clone(),
            data: snapshot.into_inner(),
        };
        let mut inner = self.lock();
        inner.install(stored.clone()).map_err(|e| {
            StorageError::from(StorageIOError::read_snapshot(Some(meta.signature()), &e))
        })?;
        inner.save_snapshot(stored).map_err(io_error)
    }

    async fn get_current_snapshot(&mut self) -> StorageResult<Option<Snapshot<TypeConfig>>> {
        let inner = self.lock();
        Ok(inner.snapshot.as_ref().map(|s| Snapshot {
            meta: s.meta.clone(),
            snapshot: Box::new(Cursor::new(s.data.clone())),
        }))
    }
}
