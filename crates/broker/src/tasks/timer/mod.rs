//! The timer shard's timer loop: ingests `rmq_sys_wheel_timer` queue 0
//! into the timer store (`services::timer`), delivers due timers and
//! flushes the store; ends when the shard stops.

mod deliver;
mod recall;

use std::rc::Rc;
use std::time::{Duration, Instant};

use futures_lite::future;

use crate::clock::now_ms;
use crate::services::timer::{
    TimerService, DELIVER_BATCH_MAX, FLUSH_INTERVAL_MS, IDLE_MAX_MS, IDLE_MIN_MS, INGEST_BATCH_MAX,
};
use crate::shard::Shard;

/// The timer loop: ingest, deliver, flush; ends when the shard stops.
pub(crate) async fn run(shard: Rc<Shard>, timer: Rc<TimerService>) {
    let mut last_flush = Instant::now();
    let mut recalls = recall::Recalls::default();
    loop {
        let (ingested, skipped) = timer.ingest(&shard.store, &shard.config()).await;
        for _ in 0..skipped {
            shard.count_skipped_redelivery();
        }
        let delivered = deliver::deliver_due(&shard, &timer, &mut recalls).await;
        if last_flush.elapsed() >= Duration::from_millis(FLUSH_INTERVAL_MS) {
            timer.flush().await;
            last_flush = Instant::now();
        }
        if shard.stopping.is_triggered() {
            return;
        }
        if ingested >= INGEST_BATCH_MAX || delivered >= DELIVER_BATCH_MAX {
            glommio::executor().yield_if_needed().await;
            continue;
        }
        let next_due = timer
            .with_store(|store| Ok(store.next_due_ms()))
            .await
            .unwrap_or(None);
        let idle_ms = next_due.map_or(IDLE_MAX_MS, |at| {
            at.saturating_sub(now_ms()).clamp(IDLE_MIN_MS, IDLE_MAX_MS)
        });
        let idle = glommio::timer::sleep(Duration::from_millis(idle_ms as u64));
        if shard
            .stopping
            .interrupts(future::or(timer.woken(), idle))
            .await
        {
            return;
        }
    }
}
