//! The epoch file, `{storePathRootDir}/epochFileCheckpoint`
//! (`storePathEpochFile`), in RocketMQ's checkpoint text format
//! (`CheckpointFile`), so a store moves between Java and Ferrocket:
//!
//! ```text
//! 2                  number of entries
//! 773307083          CRC32 of the entry lines (each with its "\n"), & 0x7FFFFFFF; 0 = unchecked
//! 7-7000             epoch-startOffset, one line per entry, oldest first
//! 8-8000
//! ```
//!
//! Writes are atomic (temp file, fsync, rename) and keep the previous
//! version as `epochFileCheckpoint.bak`, as Java's `string2File` does. A
//! read that finds the file missing, empty or damaged (a count or CRC that
//! does not match) takes the backup instead, as Java's does.

use std::path::{Path, PathBuf};

use super::{EpochCache, EpochEntry};
use crate::error::{IoFailure, StoreError};
use crate::json_file::{with_suffix, write_atomic, BACKUP_SUFFIX};

/// Java's file name under the store root.
pub const EPOCH_FILE_NAME: &str = "epochFileCheckpoint";
/// The most entries a file may hold: one per election, so this is far more
/// than a broker set sees (a bound on what a damaged file can make us read).
pub const EPOCH_ENTRIES_MAX: usize = 1 << 20;
/// A CRC of 0 means "not checked".
const CRC_UNCHECKED: u32 = 0;

/// The epoch file of one store.
#[derive(Debug, Clone)]
pub struct EpochFile {
    path: PathBuf,
}

impl EpochFile {
    /// The file `epochFileCheckpoint` under `store_root`.
    pub fn in_store(store_root: &Path) -> Self {
        Self::at(store_root.join(EPOCH_FILE_NAME))
    }

    pub fn at(path: PathBuf) -> Self {
        Self { path }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn backup_path(&self) -> PathBuf {
        with_suffix(&self.path, BACKUP_SUFFIX)
    }

    /// Writes `cache`; an empty list writes nothing (as Java).
    pub fn write(&self, cache: &EpochCache) -> Result<(), StoreError> {
        if cache.is_empty() {
            return Ok(());
        }
        write_atomic(&self.path, encode(cache.entries()).as_bytes(), true)
    }

    /// Reads the list: the file's, or its backup's when the file is
    /// missing, empty or damaged; empty when neither holds one.
    pub fn read(&self) -> Result<EpochCache, StoreError> {
        match self.read_one(&self.path) {
            Ok(cache) if !cache.is_empty() => Ok(cache),
            Ok(_) => self.read_one(&self.backup_path()),
            Err(main) => {
                let backup = self.backup_path();
                let cache = self.read_one(&backup)?;
                tracing::warn!(error = %main, backup = %backup.display(), "epoch file unreadable, using its backup");
                Ok(cache)
            }
        }
    }

    fn read_one(&self, path: &Path) -> Result<EpochCache, StoreError> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(EpochCache::new()),
            Err(e) => return Err(IoFailure::new("read epoch file", path, e).into()),
        };
        let entries = decode(&text).map_err(|message| {
            StoreError::Corrupt(format!("epoch file {}: {message}", path.display()))
        })?;
        EpochCache::from_entries(&entries)
            .map_err(|e| StoreError::Corrupt(format!("epoch file {}: {e}", path.display())))
    }
}

/// CRC32 of `text`, masked to 31 bits as Java's `UtilAll.crc32`.
fn masked_crc(text: &str) -> u32 {
    crc32fast::hash(text.as_bytes()) & 0x7FFF_FFFF
}

/// The file's text for `entries`.
pub fn encode(entries: &[EpochEntry]) -> String {
    let lines: String = entries
        .iter()
        .map(|entry| format!("{}-{}\n", entry.epoch, entry.start_offset))
        .collect();
    format!("{}\n{}\n{lines}", entries.len(), masked_crc(&lines))
}

/// The entries of a file's text, checked against its count and CRC. Lines
/// that are not `epoch-startOffset` are skipped (and then fail the count),
/// as in Java.
pub fn decode(text: &str) -> Result<Vec<EpochEntry>, String> {
    let mut lines = text.lines();
    let count: usize = parse_line(lines.next(), "entry count")?;
    if count > EPOCH_ENTRIES_MAX {
        return Err(format!("{count} entries, more than {EPOCH_ENTRIES_MAX}"));
    }
    let crc: i64 = parse_line(lines.next(), "CRC")?;
    let mut joined = String::new();
    let mut entries = Vec::with_capacity(count);
    for line in lines {
        if entries.len() > count {
            break;
        }
        joined.push_str(line);
        joined.push('\n');
        if let Some(entry) = entry_of(line) {
            entries.push(entry);
        }
    }
    if entries.len() != count {
        return Err(format!("expected {count} entries, found {}", entries.len()));
    }
    let actual = masked_crc(&joined);
    if crc != i64::from(CRC_UNCHECKED) && crc != i64::from(actual) {
        return Err(format!("CRC {crc} written, {actual} read"));
    }
    Ok(entries)
}

fn parse_line<T: std::str::FromStr>(line: Option<&str>, what: &str) -> Result<T, String> {
    let line = line.ok_or_else(|| format!("no {what} line"))?;
    line.trim()
        .parse()
        .map_err(|_| format!("{what} line {line:?} is not a number"))
}

/// `epoch-startOffset`, or `None` for any other line.
fn entry_of(line: &str) -> Option<EpochEntry> {
    let (epoch, start) = line.split_once('-')?;
    if start.contains('-') {
        return None;
    }
    Some(EpochEntry::new(epoch.parse().ok()?, start.parse().ok()?))
}
