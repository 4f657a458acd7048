//! The index scanner's loop (on the timer shard): index new records as
//! they are written (`services::index`), sync the index every second.

use std::rc::Rc;
use std::time::Duration;

use crate::services::index::{IndexFeed, INDEX_FLUSH_INTERVAL_MS, SCAN_INTERVAL_MS};
use crate::shard::Shard;

/// The scanner's loop: index new records as they are written, sync the
/// index every second. Ends when the shard stops.
pub(crate) async fn feed_loop(shard: Rc<Shard>, feed: Rc<IndexFeed>) {
    let mut last_flush = std::time::Instant::now();
    loop {
        feed.catch_up(shard.store()).await;
        if last_flush.elapsed() >= Duration::from_millis(INDEX_FLUSH_INTERVAL_MS) {
            feed.delete_expired(shard.store().reader().min_offset());
            feed.flush().await;
            last_flush = std::time::Instant::now();
        }
        if shard
            .stopping()
            .interrupts_sleep(Duration::from_millis(SCAN_INTERVAL_MS))
            .await
        {
            feed.catch_up(shard.store()).await;
            return;
        }
    }
}
