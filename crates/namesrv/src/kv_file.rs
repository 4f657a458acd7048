//! The KV config file (RocketMQ `kvConfigPath`, `kvConfig.json`): the whole
//! table as `{"configTable":{"namespace":{"key":"value"}}}`
//! (`KVConfigSerializeWrapper`). Written whole after every change through a
//! temporary file, fsync and rename, so a crash leaves the old or the new
//! table, never a torn one. Small and rare, so written synchronously on the
//! name server's executor, as RocketMQ does.

use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use ferrocket_runtime::lock::{LockError, ProcessLock};
use serde::{Deserialize, Serialize};

/// Namespace -> key -> value.
pub type KvTables = BTreeMap<String, BTreeMap<String, String>>;

/// Largest KV config file loaded at start.
pub const KV_FILE_BYTES_MAX: u64 = 64 * 1024 * 1024;

/// Suffix of the temporary file a new table is written to before the rename.
const TEMP_SUFFIX: &str = ".tmp";
/// Suffix of the lock file beside the KV file (the file itself is replaced
/// by a rename at every save, so it cannot carry the lock).
const LOCK_SUFFIX: &str = ".lock";

/// Locks `PATH.lock` for this process: a second name server configured with
/// the same `kvConfigPath` stops at start instead of overwriting the file.
/// Missing parent directories are created.
pub fn lock(path: &Path) -> Result<ProcessLock, KvFileError> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        fs::create_dir_all(dir).map_err(|source| KvFileError::Write {
            path: path.to_path_buf(),
            source,
        })?;
    }
    let mut name = path.as_os_str().to_owned();
    name.push(LOCK_SUFFIX);
    Ok(ProcessLock::acquire(Path::new(&name))?)
}

#[derive(Debug, thiserror::Error)]
pub enum KvFileError {
    #[error("cannot read KV config file {path}: {source}")]
    Read { path: PathBuf, source: io::Error },
    #[error("KV config file {path} is larger than {KV_FILE_BYTES_MAX} bytes")]
    TooLarge { path: PathBuf },
    #[error("KV config file {path} is corrupt (expected {{\"configTable\":{{...}}}}): {reason}")]
    Corrupt { path: PathBuf, reason: String },
    #[error("cannot write KV config file {path}: {source}")]
    Write { path: PathBuf, source: io::Error },
    #[error("KV config file: {0}")]
    Locked(#[from] LockError),
    /// A put that would pass `kvConfigEntriesMax` or `kvConfigBytesMax`.
    #[error("KV config is full: {0}")]
    Full(String),
}

/// `KVConfigSerializeWrapper`.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct KvConfigWrapper {
    #[serde(default)]
    config_table: KvTables,
}

/// Reads the table at `path`. A missing or blank file is an empty table.
pub fn load(path: &Path) -> Result<KvTables, KvFileError> {
    let file = match File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(KvTables::new()),
        Err(source) => {
            return Err(KvFileError::Read {
                path: path.to_path_buf(),
                source,
            })
        }
    };
    let mut bytes = Vec::new();
    file.take(KV_FILE_BYTES_MAX + 1)
        .read_to_end(&mut bytes)
        .map_err(|source| KvFileError::Read {
            path: path.to_path_buf(),
            source,
        })?;
    if bytes.len() as u64 > KV_FILE_BYTES_MAX {
        return Err(KvFileError::TooLarge {
            path: path.to_path_buf(),
        });
    }
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(KvTables::new());
    }
    let wrapper: KvConfigWrapper =
        serde_json::from_slice(&bytes).map_err(|e| KvFileError::Corrupt {
            path: path.to_path_buf(),
            reason: e.to_string(),
        })?;
    Ok(wrapper.config_table)
}

/// Replaces the file at `path` with `tables`, atomically: the JSON goes to
/// `PATH.tmp`, is fsynced, renamed over `path`, and the directory fsynced.
/// Missing parent directories are created.
pub fn save(path: &Path, tables: &KvTables) -> Result<(), KvFileError> {
    let write_error = |source: io::Error| KvFileError::Write {
        path: path.to_path_buf(),
        source,
    };
    let wrapper = KvConfigWrapper {
        config_table: tables.clone(),
    };
    let json = serde_json::to_vec(&wrapper).map_err(|e| write_error(io::Error::other(e)))?;
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
        _ => PathBuf::from("."),
    };
    fs::create_dir_all(&dir).map_err(write_error)?;
    let mut temp_name = path.as_os_str().to_owned();
    temp_name.push(TEMP_SUFFIX);
    let temp = PathBuf::from(temp_name);
    let mut file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(&temp)
        .map_err(write_error)?;
    file.write_all(&json).map_err(write_error)?;
    file.sync_all().map_err(write_error)?;
    drop(file);
    fs::rename(&temp, path).map_err(write_error)?;
    File::open(&dir)
        .and_then(|d| d.sync_all())
        .map_err(write_error)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tables() -> KvTables {
        let mut tables = KvTables::new();
        tables
            .entry("ORDER_TOPIC_CONFIG".into())
            .or_default()
            .insert("T1".into(), "broker-a:4".into());
        tables
            .entry("ns".into())
            .or_default()
            .insert("k".into(), "v w".into());
        tables
    }

    #[test]
    fn missing_and_blank_files_are_empty() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("kvConfig.json");
        assert!(load(&path).unwrap().is_empty());
        fs::write(&path, " \n").unwrap();
        assert!(load(&path).unwrap().is_empty());
    }

    #[test]
    fn save_then_load_round_trips_in_java_layout() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("namesrv").join("kvConfig.json");
        save(&path, &tables()).unwrap();
        let text = fs::read_to_string(&path).unwrap();
        assert_eq!(
            text,
            r#"{"configTable":{"ORDER_TOPIC_CONFIG":{"T1":"broker-a:4"},"ns":{"k":"v w"}}}"#
        );
        assert_eq!(load(&path).unwrap(), tables());
        let mut temp = path.as_os_str().to_owned();
        temp.push(TEMP_SUFFIX);
        assert!(!PathBuf::from(temp).exists());
        // Overwriting replaces the whole table.
        save(&path, &KvTables::new()).unwrap();
        assert!(load(&path).unwrap().is_empty());
    }

    #[test]
    fn reads_a_file_java_wrote() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("kvConfig.json");
        fs::write(
            &path,
            "{\n\t\"configTable\":{\n\t\t\"ns\":{\n\t\t\t\"a\":\"1\"\n\t\t}\n\t}\n}",
        )
        .unwrap();
        assert_eq!(load(&path).unwrap()["ns"]["a"], "1");
    }

    #[test]
    fn corrupt_file_is_an_error_naming_the_path() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("kvConfig.json");
        fs::write(&path, "{\"configTable\":{\"ns\":[1]}}").unwrap();
        let error = load(&path).unwrap_err();
        assert!(matches!(error, KvFileError::Corrupt { .. }));
        assert!(error.to_string().contains(&path.display().to_string()));
        fs::write(&path, "{oops").unwrap();
        assert!(matches!(
            load(&path).unwrap_err(),
            KvFileError::Corrupt { .. }
        ));
    }

    #[test]
    fn unwritable_path_is_a_write_error() {
        let dir = tempfile::tempdir().unwrap();
        let blocker = dir.path().join("file");
        fs::write(&blocker, "x").unwrap();
        let error = save(&blocker.join("kvConfig.json"), &tables()).unwrap_err();
        assert!(matches!(error, KvFileError::Write { .. }));
    }
}
