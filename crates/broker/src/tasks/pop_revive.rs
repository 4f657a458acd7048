//! Every shard's pop revive loop (`PopReviveService`): once a second,
//! checkpoints whose invisible time ended give their un-acked messages
//! back through the pop retry topic, and the pop log is fdatasync'd. A
//! slave runs none: its master revives.

use std::rc::Rc;
use std::time::Duration;

use crate::shard::Shard;

/// How often checkpoints are looked at (`reviveInterval`).
pub const REVIVE_INTERVAL_MS: u64 = 1_000;

pub(crate) async fn revive_loop(shard: Rc<Shard>) {
    let interval = Duration::from_millis(REVIVE_INTERVAL_MS);
    while !shard.stopping().interrupts_sleep(interval).await {
        let revived = shard.revive_due().await;
        if revived > 0 {
            tracing::debug!(
                shard = shard.index(),
                revived,
                "pop messages back after their invisible time"
            );
        }
        shard.sync_pop_log().await;
    }
    shard.sync_pop_log().await;
}
