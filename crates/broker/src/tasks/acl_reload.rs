//! Shard 0's loop that reads the ACL files again when they change (every
//! `RELOAD_INTERVAL_MS`, as Java's watcher); a file that no longer loads
//! leaves the ACL in force as it was.

use std::rc::Rc;

use crate::shard::Shard;

/// Shard 0's loop: reads the ACL files again when they change.
pub(crate) async fn reload_loop(shard: Rc<Shard>) {
    let Some(store) = shard.env().acl.clone() else {
        return;
    };
    let interval = std::time::Duration::from_millis(ferrocket_acl::RELOAD_INTERVAL_MS);
    loop {
        if shard.stopping().interrupts_sleep(interval).await {
            return;
        }
        match store.reload_if_changed() {
            Ok(true) => {
                let accounts = store.current().accounts.len();
                tracing::info!(accounts, "ACL files changed; reloaded");
            }
            Ok(false) => {}
            Err(error) => {
                tracing::warn!(%error, "ACL files changed but do not load; the old ACL stays")
            }
        }
    }
}
