//! Atomic JSON config files (`config/topics.json`, `consumerOffset.json`, ...):
//! write a temp file, fsync it, rename it over the old one, fsync the
//! directory. A reader sees either the old or the new file, never a mix.
//!
//! Blocking std I/O: call from a control-plane thread or a blocking pool, or
//! accept the short stall on a shard for small files.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::error::{IoContext, IoFailure, StoreError};

/// Suffix of the temp file written before the rename.
const TEMP_SUFFIX: &str = ".tmp";
/// Suffix of the copy of the previous version kept next to the file.
pub(crate) const BACKUP_SUFFIX: &str = ".bak";

/// A directory of JSON config files.
#[derive(Debug, Clone)]
pub struct ConfigDir {
    dir: PathBuf,
}

impl ConfigDir {
    /// Opens (creating if needed) the directory.
    pub fn open(dir: impl Into<PathBuf>) -> Result<Self, StoreError> {
        let dir = dir.into();
        fs::create_dir_all(&dir).io_context("create config dir", &dir)?;
        Ok(Self { dir })
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// Writes `bytes` as `name` atomically; the previous version is kept as
    /// `name.bak`.
    pub fn write_bytes(&self, name: &str, bytes: &[u8]) -> Result<(), StoreError> {
        write_atomic(&self.path(name), bytes, true)
    }

    /// Reads `name`, or `None` when neither it nor its backup exists.
    pub fn read_bytes(&self, name: &str) -> Result<Option<Vec<u8>>, StoreError> {
        let path = self.path(name);
        match fs::read(&path) {
            Ok(bytes) => Ok(Some(bytes)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let backup = with_suffix(&path, BACKUP_SUFFIX);
                match fs::read(&backup) {
                    Ok(bytes) => Ok(Some(bytes)),
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
                    Err(e) => Err(IoFailure::new("read config backup", &backup, e).into()),
                }
            }
            Err(e) => Err(IoFailure::new("read config", &path, e).into()),
        }
    }

    /// Serialises `value` as pretty JSON into `name`, atomically.
    pub fn write_json<T: Serialize>(&self, name: &str, value: &T) -> Result<(), StoreError> {
        let bytes = serde_json::to_vec_pretty(value).map_err(|e| StoreError::ConfigFile {
            path: self.path(name).display().to_string(),
            message: e.to_string(),
        })?;
        self.write_bytes(name, &bytes)
    }

    /// Reads and parses `name`; `None` when it does not exist. Falls back to
    /// the backup when the main file does not parse.
    pub fn read_json<T: DeserializeOwned>(&self, name: &str) -> Result<Option<T>, StoreError> {
        let path = self.path(name);
        let Some(bytes) = self.read_bytes(name)? else {
            return Ok(None);
        };
        match parse_config(&bytes) {
            Ok(value) => Ok(Some(value)),
            Err(main_err) => {
                let backup = with_suffix(&path, BACKUP_SUFFIX);
                if let Ok(bytes) = fs::read(&backup) {
                    if let Ok(value) = parse_config(&bytes) {
                        tracing::warn!(path = %path.display(), "config file unreadable, using its backup");
                        return Ok(Some(value));
                    }
                }
                Err(StoreError::ConfigFile {
                    path: path.display().to_string(),
                    message: main_err.to_string(),
                })
            }
        }
    }
}

/// Parses a config file as JSON or, failing that, as Apache RocketMQ's
/// broker writes it: fastjson leaves integer map keys unquoted
/// (consumerOffset.json's `{0:12}`), which strict JSON refuses.
fn parse_config<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, serde_json::Error> {
    serde_json::from_slice(bytes).or_else(|strict| {
        let text = std::str::from_utf8(bytes).map_err(|_| strict)?;
        serde_json::from_str(&ferrocket_protocol::fastjson::quote_integer_keys(text))
    })
}

/// `path` with `suffix` appended to its file name (`x.json` -> `x.json.bak`).
pub(crate) fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// Writes `bytes` to `path` via temp file + fsync + rename + directory fsync.
pub fn write_atomic(path: &Path, bytes: &[u8], keep_backup: bool) -> Result<(), StoreError> {
    let temp = with_suffix(path, TEMP_SUFFIX);
    {
        let mut file = fs::File::create(&temp).io_context("create temp file", &temp)?;
        file.write_all(bytes).io_context("write temp file", &temp)?;
        file.sync_all().io_context("fsync temp file", &temp)?;
    }
    if keep_backup && path.exists() {
        let backup = with_suffix(path, BACKUP_SUFFIX);
        fs::copy(path, &backup).io_context("copy backup", &backup)?;
    }
    fs::rename(&temp, path).io_context("rename temp file", path)?;
    if let Some(parent) = path.parent() {
        sync_dir(parent)?;
    }
    Ok(())
}

/// fsyncs a directory so a rename or a new file in it is durable.
pub fn sync_dir(dir: &Path) -> Result<(), StoreError> {
    let handle = fs::File::open(dir).io_context("open dir", dir)?;
    handle.sync_all().io_context("fsync dir", dir)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn round_trips_and_keeps_backup() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = ConfigDir::open(dir.path().join("config")).unwrap();
        assert_eq!(
            cfg.read_json::<BTreeMap<String, i64>>("t.json").unwrap(),
            None
        );
        let mut v = BTreeMap::new();
        v.insert("a".to_string(), 1i64);
        cfg.write_json("t.json", &v).unwrap();
        v.insert("b".to_string(), 2);
        cfg.write_json("t.json", &v).unwrap();
        assert_eq!(
            cfg.read_json::<BTreeMap<String, i64>>("t.json").unwrap(),
            Some(v.clone())
        );
        assert!(!cfg.path("t.json.tmp").exists());
        // A corrupt main file falls back to the previous version.
        fs::write(cfg.path("t.json"), b"{not json").unwrap();
        let old: BTreeMap<String, i64> = cfg.read_json("t.json").unwrap().unwrap();
        assert_eq!(old.len(), 1);
    }

    #[test]
    fn reads_java_fastjson_integer_keys() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = ConfigDir::open(dir.path().join("config")).unwrap();
        let java = "{\n\t\"offsetTable\":{\n\t\t\"T@G\":{0:12,3:7}\n\t}\n}";
        fs::write(cfg.path("consumerOffset.json"), java).unwrap();
        type Table = BTreeMap<String, BTreeMap<String, BTreeMap<i32, i64>>>;
        let table: Table = cfg.read_json("consumerOffset.json").unwrap().unwrap();
        assert_eq!(table["offsetTable"]["T@G"][&3], 7);
    }
}
