//! Config files (topics.json, subscriptionGroup.json, consumerOffset.json,
//! delayOffset.json), written on the blocking pool.

use std::sync::Arc;

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
