//! Config files (topics.json, subscriptionGroup.json, consumerOffset.json,
//! delayOffset.json): written on the blocking pool, and a change undone
//! when its file could not be written.

use std::collections::BTreeMap;
use std::sync::Arc;

use ferrocket_protocol::body::DataVersion;
use ferrocket_store::ConfigDir;
use serde::Serialize;

use crate::error::Reject;

/// Writes a JSON config file on the blocking pool. A failure is logged and
/// answered as SYSTEM_ERROR, so a request whose change could not be
/// persisted is not told SUCCESS.
pub(crate) async fn write_config<T: Serialize + Send + Sync + 'static>(
    dir: &ConfigDir,
    name: &'static str,
    value: Arc<T>,
) -> Result<(), Reject> {
    let dir = dir.clone();
    let written = glommio::executor()
        .spawn_blocking(move || dir.write_json(name, &*value))
        .await;
    written.map_err(|err| {
        tracing::error!(file = name, %err, "persisting a config file failed");
        Reject::system(format!(
            "persisting {name} failed ({err}); the change was not made"
        ))
    })
}

/// One entry of a control-plane table (topics, groups) as it was before a
/// change, with the table's version: put back when the change could not
/// be persisted.
pub(crate) struct Undo<V> {
    name: String,
    entry: Option<V>,
    version: DataVersion,
}

impl<V: Clone> Undo<V> {
    pub fn record(map: &BTreeMap<String, V>, name: String, version: DataVersion) -> Self {
        let entry = map.get(&name).cloned();
        Self {
            name,
            entry,
            version,
        }
    }

    pub fn restore(self, map: &mut BTreeMap<String, V>, version: &mut DataVersion) {
        match self.entry {
            Some(entry) => map.insert(self.name, entry),
            None => map.remove(&self.name),
        };
        *version = self.version;
    }
}
