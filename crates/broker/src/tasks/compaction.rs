//! Every shard's compaction loop (Java's `CompactionStore` schedule): every
//! `compactionScheduleInternal` ms, the compaction-topic queues the shard
//! owns are compacted (`services::compaction`). The passes run on
//! blocking threads; the loop only waits for them.

use std::rc::Rc;
use std::time::Duration;

use crate::shard::Shard;

pub(crate) async fn compaction_loop(shard: Rc<Shard>) {
    loop {
        let interval = Duration::from_millis(shard.config().compaction.interval_ms.max(1));
        if shard.stopping().interrupts_sleep(interval).await {
            return;
        }
        shard.compact_round().await;
    }
}
