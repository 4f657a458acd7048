//! Namespaced key/value configuration (RocketMQ `KVConfigManager`). When a
//! file is configured (`kvConfigPath`), the table is loaded from it at start
//! and written back whole after every change; otherwise it lives in memory
//! only. The `ORDER_TOPIC_CONFIG` namespace holds order-topic settings
//! served with routes and registrations.

use std::path::{Path, PathBuf};

use ferrocket_protocol::body::KvTable;
use ferrocket_runtime::lock::ProcessLock;

use crate::kv_file::{self, KvFileError, KvTables};

/// Namespace of order topic configs (`NamesrvUtil.NAMESPACE_ORDER_TOPIC_CONFIG`).
pub const NAMESPACE_ORDER_TOPIC_CONFIG: &str = "ORDER_TOPIC_CONFIG";
/// Default `kvConfigEntriesMax`: most keys over all namespaces.
pub const KV_ENTRIES_MAX_DEFAULT: usize = 100_000;
/// Default `kvConfigBytesMax`: most bytes of namespaces, keys and values
/// together; well under what a restart loads (`KV_FILE_BYTES_MAX`).
pub const KV_BYTES_MAX_DEFAULT: usize = 16 * 1024 * 1024;

/// What the table may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KvLimits {
    pub entries_max: usize,
    pub bytes_max: usize,
}

impl Default for KvLimits {
    fn default() -> Self {
        Self {
            entries_max: KV_ENTRIES_MAX_DEFAULT,
            bytes_max: KV_BYTES_MAX_DEFAULT,
        }
    }
}

/// Entries and bytes `tables` holds.
fn usage(tables: &KvTables) -> (usize, usize) {
    tables
        .iter()
        .fold((0, 0), |(entries, bytes), (namespace, table)| {
            let table_bytes: usize = table
                .iter()
                .map(|(k, v)| namespace.len() + k.len() + v.len())
                .sum();
            (entries + table.len(), bytes + table_bytes)
        })
}

#[derive(Debug, Default)]
pub struct KvStore {
    namespaces: KvTables,
    /// Where changes are persisted; `None` keeps them in memory only.
    file: Option<PathBuf>,
    /// Held while the file is ours: two name servers never share one.
    _lock: Option<ProcessLock>,
    limits: KvLimits,
}

impl KvStore {
    /// A store that is never written to disk.
    pub fn in_memory() -> Self {
        Self::default()
    }

    /// A store persisted at `path`, loaded from it when the file exists.
    pub fn open(path: &Path) -> Result<Self, KvFileError> {
        let lock = kv_file::lock(path)?;
        let namespaces = kv_file::load(path)?;
        // An empty namespace is never kept (see `delete`).
        let namespaces = namespaces
            .into_iter()
            .filter(|(_, table)| !table.is_empty())
            .collect();
        Ok(Self {
            namespaces,
            file: Some(path.to_path_buf()),
            _lock: Some(lock),
            limits: KvLimits::default(),
        })
    }

    /// The store with these limits (a loaded table over them is kept, but
    /// takes no new keys).
    pub fn with_limits(mut self, limits: KvLimits) -> Self {
        self.limits = limits;
        self
    }

    /// The file changes are persisted to, if any.
    pub fn file(&self) -> Option<&Path> {
        self.file.as_deref()
    }

    /// Sets a key. When persisting fails the store is left unchanged.
    pub fn put(&mut self, namespace: &str, key: &str, value: &str) -> Result<(), KvFileError> {
        if self.get(namespace, key) == Some(value) {
            return Ok(());
        }
        let mut next = self.namespaces.clone();
        next.entry(namespace.to_string())
            .or_default()
            .insert(key.to_string(), value.to_string());
        let (entries, bytes) = usage(&next);
        let limits = self.limits;
        if entries > limits.entries_max || bytes > limits.bytes_max {
            return Err(KvFileError::Full(format!(
                "{namespace}/{key} would make {entries} keys and {bytes} bytes; \
                 the name server takes at most {} keys (kvConfigEntriesMax) and {} bytes \
                 (kvConfigBytesMax)",
                limits.entries_max, limits.bytes_max
            )));
        }
        self.commit(next)
    }

    pub fn get(&self, namespace: &str, key: &str) -> Option<&str> {
        self.namespaces
            .get(namespace)
            .and_then(|table| table.get(key))
            .map(String::as_str)
    }

    /// Removes a key; an emptied namespace disappears too. Returns whether
    /// the key existed. When persisting fails the store is left unchanged.
    pub fn delete(&mut self, namespace: &str, key: &str) -> Result<bool, KvFileError> {
        if self.get(namespace, key).is_none() {
            return Ok(false);
        }
        let mut next = self.namespaces.clone();
        if let Some(table) = next.get_mut(namespace) {
            table.remove(key);
            if table.is_empty() {
                next.remove(namespace);
            }
        }
        self.commit(next)?;
        Ok(true)
    }

    /// Every entry of a namespace, or `None` when it has none.
    pub fn list(&self, namespace: &str) -> Option<KvTable> {
        self.namespaces.get(namespace).map(|table| KvTable {
            table: table.clone(),
        })
    }

    /// Persists `next` (when a file is configured), then makes it current.
    fn commit(&mut self, next: KvTables) -> Result<(), KvFileError> {
        if let Some(path) = &self.file {
            kv_file::save(path, &next)?;
        }
        self.namespaces = next;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn put_get_delete_list() {
        let mut kv = KvStore::in_memory();
        assert_eq!(kv.get("ns", "k"), None);
        kv.put("ns", "k", "v1").unwrap();
        kv.put("ns", "k", "v2").unwrap();
        kv.put("ns", "j", "w").unwrap();
        assert_eq!(kv.get("ns", "k"), Some("v2"));
        assert_eq!(kv.list("ns").unwrap().table.len(), 2);
        assert!(kv.delete("ns", "k").unwrap());
        assert!(!kv.delete("ns", "k").unwrap());
        assert!(kv.delete("ns", "j").unwrap());
        assert!(kv.list("ns").is_none());
        assert!(!kv.delete("other", "k").unwrap());
    }

    #[test]
    fn changes_survive_reopening() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("namesrv/kvConfig.json");
        let mut kv = KvStore::open(&path).unwrap();
        assert_eq!(kv.file(), Some(path.as_path()));
        kv.put("ns", "k", "v").unwrap();
        kv.put("ns", "gone", "x").unwrap();
        kv.put("other", "a", "b").unwrap();
        assert!(kv.delete("ns", "gone").unwrap());
        assert!(kv.delete("other", "a").unwrap());
        drop(kv);

        let kv = KvStore::open(&path).unwrap();
        assert_eq!(kv.get("ns", "k"), Some("v"));
        assert_eq!(kv.get("ns", "gone"), None);
        assert!(kv.list("other").is_none());
    }

    #[test]
    fn puts_past_the_limits_are_refused_and_change_nothing() {
        let mut kv = KvStore::in_memory().with_limits(KvLimits {
            entries_max: 2,
            bytes_max: 40,
        });
        kv.put("ns", "a", "1").unwrap();
        kv.put("ns", "b", "2").unwrap();
        let full = kv.put("ns", "c", "3").unwrap_err();
        assert!(matches!(full, KvFileError::Full(_)), "{full:?}");
        assert!(full.to_string().contains("kvConfigEntriesMax"), "{full}");
        // Replacing a value is not a new key, but bytes still count.
        kv.put("ns", "a", "11").unwrap();
        assert!(kv.put("ns", "a", &"x".repeat(64)).is_err());
        assert_eq!(kv.get("ns", "a"), Some("11"));
        assert_eq!(kv.get("ns", "c"), None);
    }

    #[test]
    fn a_second_store_on_the_same_file_is_refused_until_the_first_is_gone() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("namesrv/kvConfig.json");
        let kv = KvStore::open(&path).unwrap();
        let err = KvStore::open(&path).unwrap_err();
        assert!(matches!(err, KvFileError::Locked(_)), "{err:?}");
        assert!(err.to_string().contains("kvConfig.json.lock"), "{err}");
        drop(kv);
        KvStore::open(&path).unwrap();
    }

    #[test]
    fn failed_persist_leaves_the_store_unchanged() {
        let dir = tempfile::tempdir().unwrap();
        let sub = dir.path().join("sub");
        let mut kv = KvStore::open(&sub.join("kvConfig.json")).unwrap();
        kv.put("ns", "k", "v").unwrap();
        // The directory becomes a file: writes fail from now on.
        std::fs::remove_dir_all(&sub).unwrap();
        std::fs::write(&sub, "x").unwrap();
        assert!(kv.put("ns", "k", "v2").is_err());
        assert!(kv.delete("ns", "k").is_err());
        assert_eq!(kv.get("ns", "k"), Some("v"));
    }

    #[test]
    fn empty_namespaces_in_the_file_are_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("kvConfig.json");
        std::fs::write(&path, r#"{"configTable":{"empty":{},"ns":{"k":"v"}}}"#).unwrap();
        let kv = KvStore::open(&path).unwrap();
        assert!(kv.list("empty").is_none());
        assert_eq!(kv.get("ns", "k"), Some("v"));
    }
}
