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
    SLAVE_SETTLE_GRACE_MS,
};
use crate::shard::Shard;

/// The timer loop: ingest, deliver, flush; ends when the shard stops. On
/// a slave with `enableSlaveActingMaster` and `enableRemoteEscape` it
/// ingests always (as Java's slave timer enqueues) and delivers only while
/// the slave acts as master (to another set, `tasks::acting_escape`).
pub(crate) async fn run(shard: Rc<Shard>, timer: Rc<TimerService>) {
    let mut last_flush = Instant::now();
    let mut recalls = recall::Recalls::default();
    let slave = shard.config().replication.broker_role.is_slave();
    if !slave && !await_hand_back(&shard, &timer).await {
        return;
    }
    loop {
        let (ingested, skipped) = timer.ingest(shard.store(), &shard.config()).await;
        for _ in 0..skipped {
            shard.count_skipped_redelivery();
        }
        let delivering = !slave || shard.env().acting.is_acting();
        let delivered = match delivering {
            true => deliver::deliver_due(&shard, &timer, &mut recalls).await,
            false => timer.settle_before(now_ms() - SLAVE_SETTLE_GRACE_MS).await,
        };
        if last_flush.elapsed() >= Duration::from_millis(FLUSH_INTERVAL_MS) {
            timer.flush().await;
            last_flush = Instant::now();
        }
        if shard.stopping().is_triggered() {
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
        let idle_ms = next_due.filter(|_| delivering).map_or(IDLE_MAX_MS, |at| {
            at.saturating_sub(now_ms()).clamp(IDLE_MIN_MS, IDLE_MAX_MS)
        });
        let idle = glommio::timer::sleep(Duration::from_millis(idle_ms as u64));
        if shard
            .stopping()
            .interrupts(future::or(timer.woken(), idle))
            .await
        {
            return;
        }
    }
}

/// A master whose slaves may have acted: waits until it asked them what
/// they delivered (`tasks::acting_hand_back`) and takes their timers;
/// false when the shard stopped first.
async fn await_hand_back(shard: &Shard, timer: &TimerService) -> bool {
    while shard.env().acting.awaiting_hand_back() {
        let pause = Duration::from_millis(HAND_BACK_POLL_MS);
        if shard.stopping().interrupts_sleep(pause).await {
            return false;
        }
    }
    timer.note_handed(shard.env().acting.take_handed_timers());
    true
}

/// How often a starting master looks whether its hand-back is done.
const HAND_BACK_POLL_MS: u64 = 50;
