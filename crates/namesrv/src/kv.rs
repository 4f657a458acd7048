//! Namespaced key/value configuration (RocketMQ `KVConfigManager`), kept in
//! memory. The `ORDER_TOPIC_CONFIG` namespace holds order-topic settings
//! served with routes and registrations.

use std::collections::BTreeMap;

use ferrocket_protocol::body::KvTable;

/// Namespace of order topic configs (`NamesrvUtil.NAMESPACE_ORDER_TOPIC_CONFIG`).
pub const NAMESPACE_ORDER_TOPIC_CONFIG: &str = "ORDER_TOPIC_CONFIG";

#[derive(Debug, Default)]
pub struct KvStore {
    namespaces: BTreeMap<String, BTreeMap<String, String>>,
}

impl KvStore {
    pub fn put(&mut self, namespace: &str, key: &str, value: &str) {
        self.namespaces
            .entry(namespace.to_string())
            .or_default()
            .insert(key.to_string(), value.to_string());
    }

    pub fn get(&self, namespace: &str, key: &str) -> Option<&str> {
        self.namespaces
            .get(namespace)
            .and_then(|table| table.get(key))
            .map(String::as_str)
    }

    /// Removes a key; an emptied namespace disappears too.
    pub fn delete(&mut self, namespace: &str, key: &str) -> bool {
        let Some(table) = self.namespaces.get_mut(namespace) else {
            return false;
        };
        let removed = table.remove(key).is_some();
        if table.is_empty() {
            self.namespaces.remove(namespace);
        }
        removed
    }

    /// Every entry of a namespace, or `None` when it has none.
    pub fn list(&self, namespace: &str) -> Option<KvTable> {
        self.namespaces.get(namespace).map(|table| KvTable {
            table: table.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn put_get_delete_list() {
        let mut kv = KvStore::default();
        assert_eq!(kv.get("ns", "k"), None);
        kv.put("ns", "k", "v1");
        kv.put("ns", "k", "v2");
        kv.put("ns", "j", "w");
        assert_eq!(kv.get("ns", "k"), Some("v2"));
        assert_eq!(kv.list("ns").unwrap().table.len(), 2);
        assert!(kv.delete("ns", "k"));
        assert!(!kv.delete("ns", "k"));
        assert!(kv.delete("ns", "j"));
        assert!(kv.list("ns").is_none());
        assert!(!kv.delete("other", "k"));
    }
}
