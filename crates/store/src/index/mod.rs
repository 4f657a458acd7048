//! The message index (RocketMQ `IndexService` + `IndexFile`): find CommitLog
//! offsets by `topic#key`, for every KEYS entry and the UNIQ_KEY of a
//! message, within a store-time range.
//!
//! Files live in one directory (by convention `{root}/index/`, see
//! [`index_dir`]), named by creation time `yyyyMMddHHmmssSSS` (UTC), each a
//! fixed-size memory map (layout in `file.rs`, the same as RocketMQ). When
//! the newest file is full the next put rolls to a new one. A query walks
//! the files newest first and returns offsets newest first; the caller reads
//! each record and checks its key (different keys can share a hash).
//!
//! # Thread
//!
//! [`IndexService`] is single-owner: one broker thread (a shard's executor)
//! feeds it in CommitLog order and queries it. `flush` blocks (msync); use
//! [`IndexService::take_dirty_files`] to fdatasync elsewhere instead.
//!
//! # Recovery
//!
//! Entries are written in CommitLog order, so after the CommitLog recovery
//! has found its valid end `E`, [`IndexService::truncate_from`]`(E)` drops
//! every entry that points at or past `E`, and re-dispatching records from
//! [`IndexService::last_indexed_offset`] on rebuilds what was lost; `put`
//! ignores records at or before the last indexed one, so replaying more
//! than needed is harmless. (RocketMQ instead deletes whole files newer than
//! the checkpoint after an unclean exit.)
//!
//! Known limits: no retention yet (files are never deleted); a machine crash
//! can leave unflushed pages of the newest file stale, which gives wrong
//! candidates (filtered by the caller's key check) rather than a crash.

mod error;
mod file;
mod naming;

use std::fs;
use std::path::{Path, PathBuf};

pub use error::IndexError;
pub use naming::{file_name_for_ms, index_key_hash, message_index_keys, ms_for_file_name};

use crate::error::IoContext;
use file::IndexFile;

/// Default hash slots per file (`maxHashSlotNum`).
pub const HASH_SLOTS_DEFAULT: u32 = 5_000_000;
/// Default entry positions per file (`maxIndexNum`); one is never used.
pub const ENTRIES_PER_FILE_DEFAULT: u32 = 20_000_000;
/// Default cap on offsets one query returns (`maxMsgsNumBatch`).
pub const QUERY_COUNT_MAX_DEFAULT: usize = 64;
/// Default cap on keys indexed for one message; later keys are skipped.
pub const KEYS_PER_MESSAGE_MAX_DEFAULT: usize = 64;
/// Largest index file accepted.
pub const FILE_BYTES_MAX: u64 = 4 << 30;
// A file of the default shape stays under the limit.
const _: () = assert!(
    file::HEADER_BYTES as u64
        + HASH_SLOTS_DEFAULT as u64 * file::SLOT_BYTES as u64
        + ENTRIES_PER_FILE_DEFAULT as u64 * file::ENTRY_BYTES as u64
        <= FILE_BYTES_MAX
);
/// Tries to find an unused file name when rolling.
const NAME_TRIES_MAX: i64 = 1000;

/// Index sizing and limits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexConfig {
    /// Hash slots per file (`maxHashSlotNum`).
    pub hash_slots: u32,
    /// Entry positions per file (`maxIndexNum`); a file holds one fewer.
    pub entries_per_file: u32,
    /// Most offsets one query returns.
    pub query_count_max: usize,
    /// Most keys indexed per message.
    pub keys_per_message_max: usize,
}

impl Default for IndexConfig {
    fn default() -> Self {
        Self {
            hash_slots: HASH_SLOTS_DEFAULT,
            entries_per_file: ENTRIES_PER_FILE_DEFAULT,
            query_count_max: QUERY_COUNT_MAX_DEFAULT,
            keys_per_message_max: KEYS_PER_MESSAGE_MAX_DEFAULT,
        }
    }
}

impl IndexConfig {
    pub fn validate(&self) -> Result<(), IndexError> {
        let bad = |reason: String| Err(IndexError::Config(reason));
        if self.hash_slots == 0 {
            return bad("hash_slots must be positive".into());
        }
        if self.entries_per_file < 2 || self.entries_per_file > i32::MAX as u32 {
            return bad(format!(
                "entries_per_file {} must be in 2..={}",
                self.entries_per_file,
                i32::MAX
            ));
        }
        let bytes = file::file_bytes(self.hash_slots, self.entries_per_file);
        if bytes > FILE_BYTES_MAX {
            return bad(format!(
                "index files of {bytes} bytes exceed {FILE_BYTES_MAX}"
            ));
        }
        if self.query_count_max == 0 || self.keys_per_message_max == 0 {
            return bad("query_count_max and keys_per_message_max must be positive".into());
        }
        Ok(())
    }
}

/// `{root}/index`.
pub fn index_dir(root: &Path) -> PathBuf {
    root.join("index")
}

/// The index files of one directory.
pub struct IndexService {
    dir: PathBuf,
    config: IndexConfig,
    /// Oldest first; only the last one is written.
    files: Vec<IndexFile>,
}

impl std::fmt::Debug for IndexService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IndexService")
            .field("dir", &self.dir)
            .field("files", &self.files.len())
            .field("last_indexed_offset", &self.last_indexed_offset())
            .finish()
    }
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

impl IndexService {
    /// Opens (creating) `dir` and loads its files. Names that are not
    /// index file names are ignored; a file of the wrong size or with a
    /// damaged header is an error.
    pub fn open(dir: impl Into<PathBuf>, config: IndexConfig) -> Result<Self, IndexError> {
        config.validate()?;
        let dir = dir.into();
        fs::create_dir_all(&dir).io_context("create index dir", &dir)?;
        let mut named = Vec::new();
        let entries = fs::read_dir(&dir).io_context("list index dir", &dir)?;
        for entry in entries {
            let entry = entry.io_context("list index dir", &dir)?;
            let name = entry.file_name();
            let Some(ms) = name.to_str().and_then(ms_for_file_name) else {
                continue;
            };
            named.push((ms, entry.path()));
        }
        named.sort_by_key(|(ms, _)| *ms);
        let mut files = Vec::with_capacity(named.len());
        for (ms, path) in named {
            files.push(IndexFile::open(
                &path,
                ms,
                config.hash_slots,
                config.entries_per_file,
            )?);
        }
        Ok(Self { dir, config, files })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn config(&self) -> &IndexConfig {
        &self.config
    }

    /// Index files on disk.
    pub fn file_count(&self) -> usize {
        self.files.len()
    }

    /// Entries in all files.
    pub fn entry_count(&self) -> u64 {
        self.files.iter().map(|f| u64::from(f.entry_count())).sum()
    }

    /// CommitLog offset of the newest indexed record, if any. Index building
    /// resumes after it.
    pub fn last_indexed_offset(&self) -> Option<i64> {
        self.files
            .iter()
            .rev()
            .find(|f| f.entry_count() > 0)
            .map(|f| f.header.end_phy)
    }

    /// `(indexLastUpdateTimestamp, indexLastUpdatePhyoffset)` for the
    /// QUERY_MESSAGE response header: the newest file's end, or zeros.
    pub fn last_update(&self) -> (i64, i64) {
        self.files
            .last()
            .map(|f| (f.header.end_ts, f.header.end_phy))
            .unwrap_or((0, 0))
    }

    /// Indexes one message: each non-empty key of `keys` under `topic#key`
    /// (see [`message_index_keys`]). A record at or before the last indexed
    /// one is ignored (replay after recovery). Returns entries written.
    pub fn put(
        &mut self,
        topic: &str,
        keys: &[&str],
        physical_offset: i64,
        store_timestamp_ms: i64,
    ) -> Result<usize, IndexError> {
        if physical_offset < 0 {
            return Err(IndexError::InvalidOffset { physical_offset });
        }
        if self
            .last_indexed_offset()
            .is_some_and(|last| physical_offset <= last)
        {
            return Ok(0);
        }
        let mut keys: Vec<&str> = keys.iter().copied().filter(|k| !k.is_empty()).collect();
        if keys.len() > self.config.keys_per_message_max {
            tracing::warn!(
                topic,
                physical_offset,
                keys = keys.len(),
                max = self.config.keys_per_message_max,
                "message has too many keys; indexing the first ones only"
            );
            keys.truncate(self.config.keys_per_message_max);
        }
        let mut written = 0;
        for key in keys {
            let hash = index_key_hash(topic, key);
            if self.files.last().map_or(true, |f| f.is_full()) {
                self.roll()?;
            }
            let Some(file) = self.files.last_mut() else {
                return Err(IndexError::Config("no index file to write".into()));
            };
            file.reserve_next()?;
            if !file.put(hash, physical_offset, store_timestamp_ms) {
                return Err(IndexError::corrupt(
                    &file.path,
                    "file full right after roll",
                ));
            }
            written += 1;
        }
        Ok(written)
    }

    /// Starts a new file after the last one.
    fn roll(&mut self) -> Result<(), IndexError> {
        assert!(
            self.files.last().map_or(true, |f| f.is_full()),
            "a roll follows a full file"
        );
        let (prev_end_phy, prev_end_ts, after_ms) = match self.files.last() {
            Some(f) => (f.header.end_phy, f.header.end_ts, f.name_ms + 1),
            None => (0, 0, 0),
        };
        let mut name_ms = now_ms().max(after_ms);
        for _ in 0..NAME_TRIES_MAX {
            let path = self.dir.join(file_name_for_ms(name_ms));
            if path.exists() {
                name_ms += 1;
                continue;
            }
            let file = IndexFile::create(
                &path,
                name_ms,
                self.config.hash_slots,
                self.config.entries_per_file,
                prev_end_phy,
                prev_end_ts,
            )?;
            tracing::info!(path = %path.display(), "new index file");
            assert!(name_ms >= after_ms, "index file names grow");
            self.files.push(file);
            return Ok(());
        }
        Err(IndexError::corrupt(
            &self.dir,
            "no free index file name near the current time",
        ))
    }

    /// CommitLog offsets of messages with `key` in `topic` stored within
    /// `[begin_ms, end_ms]`, newest first, at most
    /// `min(max_count, query_count_max)`. Candidates share the key's hash:
    /// verify the key in each record. Times are kept in whole seconds, so
    /// records up to 999 ms before `begin_ms` may be included.
    pub fn query(
        &self,
        topic: &str,
        key: &str,
        max_count: usize,
        begin_ms: i64,
        end_ms: i64,
    ) -> Vec<i64> {
        let max = max_count.min(self.config.query_count_max);
        let mut out = Vec::new();
        if max == 0 || end_ms < begin_ms {
            return out;
        }
        let hash = index_key_hash(topic, key);
        for file in self.files.iter().rev() {
            if file.time_matches(begin_ms, end_ms) {
                file.select(hash, max, begin_ms, end_ms, &mut out);
            }
            if out.len() >= max || (file.entry_count() > 0 && file.header.begin_ts < begin_ms) {
                break;
            }
        }
        out
    }

    /// Drops every entry pointing at or past `physical_offset` (the
    /// recovered CommitLog end). Emptied files other than the oldest are
    /// deleted. Returns the entries dropped.
    pub fn truncate_from(&mut self, physical_offset: i64) -> Result<usize, IndexError> {
        let (files_before, entries_before) = (self.files.len(), self.entry_count());
        let mut removed = 0;
        while let Some(file) = self.files.last_mut() {
            removed += file.truncate_from(physical_offset);
            if file.entry_count() > 0 {
                break;
            }
            if self.files.len() == 1 {
                break;
            }
            if let Some(file) = self.files.pop() {
                let path = file.path.clone();
                drop(file);
                fs::remove_file(&path).io_context("remove index file", &path)?;
            }
        }
        assert!(
            self.files.len() >= files_before.min(1),
            "the oldest file stays"
        );
        debug_assert_eq!(
            self.entry_count() + removed as u64,
            entries_before,
            "every dropped entry is counted"
        );
        Ok(removed)
    }

    /// Retention (`IndexService.deleteExpiredFile`): deletes the files,
    /// never the newest, whose entries all point below `commitlog_min` (the
    /// CommitLog's new start). Returns how many went.
    pub fn delete_below(&mut self, commitlog_min: i64) -> Result<usize, IndexError> {
        let before = self.files.len();
        let mut deleted = 0;
        while self.files.len() > 1 && self.files[0].header.end_phy < commitlog_min {
            let file = self.files.remove(0);
            let path = file.path.clone();
            drop(file);
            fs::remove_file(&path).io_context("remove index file", &path)?;
            deleted += 1;
        }
        assert!(self.files.len() >= before.min(1), "the newest file stays");
        debug_assert_eq!(
            self.files.len() + deleted,
            before,
            "every deleted file is counted"
        );
        Ok(deleted)
    }

    /// msyncs every file written since the last flush (blocking).
    pub fn flush(&mut self) -> Result<(), IndexError> {
        for file in &mut self.files {
            file.flush()?;
        }
        Ok(())
    }

    /// Handles of the files written since the last call, for an fdatasync
    /// off this thread (writes are in the shared map, so syncing the file
    /// persists them).
    pub fn take_dirty_files(&mut self) -> Result<Vec<fs::File>, IndexError> {
        let mut out = Vec::new();
        for file in &mut self.files {
            if let Some(handle) = file.take_dirty()? {
                out.push(handle);
            }
        }
        Ok(out)
    }
}
