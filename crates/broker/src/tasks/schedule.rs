//! The delivery loops and their progress: each shard delivers the levels
//! whose SCHEDULE_TOPIC_XXXX queue it owns; shard 0 persists everyone's
//! progress to delayOffset.json and answers GET_ALL_DELAY_OFFSET (45).

use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use ferrocket_protocol::record::decode_record;
use ferrocket_runtime::shard::ShardCall;
use ferrocket_store::CqEntry;
use futures_lite::future;

use crate::clock::now_ms;
use crate::services::delay_levels::{DelayOffsetFile, DelayOffsets, DELAY_OFFSET_FILE};
use crate::services::delivery::{DeliverError, Parked};
use crate::services::records::try_read_bytes_through;
use crate::services::schedule::HeadDue;
use crate::services::topics::SCHEDULE_TOPIC;
use crate::shard::Shard;

/// Pause between looks at the level queues (Java's `DELAY_FOR_A_WHILE`).
pub const DELIVER_POLL_INTERVAL_MS: u64 = 100;
/// Most messages one level delivers per look, so levels take turns.
pub const DELIVER_BATCH_MAX: usize = 256;
/// How long shard 0 waits at shutdown for the other shards' progress.
pub const STOP_GATHER_TIMEOUT_MS: u64 = 10_000;

/// Sleeps `ms` unless the shard stops first; returns whether it stopped.
async fn pause(shard: &Shard, ms: u64) -> bool {
    shard
        .stopping()
        .interrupts_sleep(Duration::from_millis(ms))
        .await
}

/// Delivers the due messages of one level; returns how many.
async fn deliver_level(shard: &Shard, level: i32) -> usize {
    let state = &shard.schedule();
    let Some(delay_ms) = state.levels.delay_ms(level) else {
        return 0;
    };
    let queue = match shard.store().consume_queue(SCHEDULE_TOPIC, level - 1) {
        Ok(queue) => queue,
        Err(err) => {
            tracing::warn!(level, %err, "delay level queue unavailable");
            return 0;
        }
    };
    let stored = state.progress.borrow().get(&level).copied().unwrap_or(0);
    // A stored position past the queue's end (a store lost its tail) restarts
    // at the end, as Java's `correctDelayOffset` does.
    let mut offset = stored.min(queue.max_offset()).max(queue.min_offset());
    let mut delivered = 0;
    let slave = shard.config().replication.broker_role.is_slave();
    while offset < queue.max_offset() && delivered < DELIVER_BATCH_MAX {
        if shard.stopping().is_triggered() {
            break;
        }
        // An acting slave's delivery and its progress are one step that a
        // hand-back to the returning master waits for.
        let flight = shard.env().acting.flight();
        if slave && flight.is_none() {
            break;
        }
        let Some(entry) = queue.entry(offset) else {
            break;
        };
        if state.head_waits(level, offset, entry.physical_offset, now_ms(), delay_ms) {
            break;
        }
        match deliver_entry(shard, level, delay_ms, offset, &entry).await {
            Step::Delivered => delivered += 1,
            Step::Skipped => {}
            Step::Wait => break,
        }
        offset += 1;
        state.advance(level, offset);
        drop(flight);
    }
    if offset != stored {
        state.advance(level, offset);
    }
    delivered
}

/// What became of one scheduled message.
enum Step {
    Delivered,
    /// Lost, undecodable or undeliverable: passed over for good.
    Skipped,
    /// Not due yet, or not readable or storable now: try again later.
    Wait,
}

/// Delivers the level's message at queue offset `offset` if it is due.
async fn deliver_entry(
    shard: &Shard,
    level: i32,
    delay_ms: i64,
    offset: i64,
    entry: &CqEntry,
) -> Step {
    if entry.is_lost() {
        tracing::error!(
            level,
            offset,
            "scheduled message lost in a damaged CommitLog range; skipped"
        );
        return Step::Skipped;
    }
    let size = usize::try_from(entry.size).unwrap_or(0);
    // Read through tiered storage: the message's segment may have left
    // the local disk before it came due. A store error leaves it due.
    let read = try_read_bytes_through(shard.store(), entry.physical_offset, size).await;
    let Ok(Some(bytes)) = read else {
        let remark = read.err().map(|reject| reject.remark);
        tracing::error!(
            level,
            offset,
            ?remark,
            "scheduled message unreadable; retrying later"
        );
        return Step::Wait;
    };
    let record = match decode_record(&bytes, false) {
        Ok(record) => record,
        Err(err) => {
            tracing::error!(level, offset, %err, "scheduled message undecodable; skipped");
            return Step::Skipped;
        }
    };
    let now = now_ms();
    let mut due = record.store_timestamp_ms.saturating_add(delay_ms);
    // A store time in the future (the clock went back): deliver now, as
    // Java's `correctDeliverTimestamp` does.
    if due > now.saturating_add(delay_ms) {
        due = now;
    }
    if due > now {
        let head = HeadDue {
            offset,
            physical_offset: entry.physical_offset,
            due_ms: due,
        };
        shard.schedule().remember_head(level, head);
        return Step::Wait;
    }
    // An acting master's go to another set (`tasks::acting_escape`).
    let delivered = match shard.env().acting.is_acting() {
        true => crate::tasks::acting_escape::escape(shard, &record, Parked::DelayLevel).await,
        false => (shard
            .deliver_to_real_topic(&record, Parked::DelayLevel)
            .await)
            .map(drop),
    };
    match delivered {
        Ok(()) => Step::Delivered,
        Err(DeliverError::Invalid(reason)) => {
            tracing::error!(level, offset, %reason, "scheduled message dropped");
            Step::Skipped
        }
        Err(DeliverError::Store(reject)) if shard.env().acting.is_acting() => {
            crate::tasks::acting_escape::report_failure(level, offset, &reject);
            Step::Wait
        }
        Err(DeliverError::Store(reject)) => {
            tracing::warn!(level, offset, remark = %reject.remark,
                "delivering a scheduled message failed; retrying later");
            Step::Wait
        }
    }
}

/// Delivers this shard's levels until the shard stops.
async fn deliver_loop(shard: Rc<Shard>) {
    let levels: Vec<i32> = shard.schedule().progress.borrow().keys().copied().collect();
    // A master whose slaves may have acted: first what they delivered.
    while shard.env().acting.awaiting_hand_back() {
        if pause(&shard, DELIVER_POLL_INTERVAL_MS).await {
            return;
        }
    }
    let handed = shard.env().acting.handed_delay_offsets();
    for level in &levels {
        let own = shard.schedule().progress.borrow().get(level).copied();
        if let (Some(own), Some(theirs)) = (own, handed.get(level)) {
            if *theirs > own {
                tracing::info!(
                    level,
                    own,
                    theirs,
                    "an acting slave delivered this level further"
                );
                shard.schedule().advance(*level, *theirs);
            }
        }
    }
    loop {
        if pause(&shard, DELIVER_POLL_INTERVAL_MS).await {
            return;
        }
        for level in &levels {
            deliver_level(&shard, *level).await;
        }
    }
}

/// On a slave with `enableSlaveActingMaster` and `enableRemoteEscape`:
/// delivers this shard's levels while it acts as master (to another set,
/// `tasks::acting_escape`), until the shard stops.
async fn acting_deliver_loop(shard: Rc<Shard>) {
    let levels: Vec<i32> = shard.schedule().progress.borrow().keys().copied().collect();
    let mut was_acting = false;
    loop {
        if pause(&shard, DELIVER_POLL_INTERVAL_MS).await {
            return;
        }
        let acting = shard.env().acting.is_acting();
        if acting && !was_acting {
            // Start where the master was, as the last metadata sync said.
            reload(&shard);
        }
        was_acting = acting;
        if acting {
            for level in &levels {
                deliver_level(&shard, *level).await;
            }
        }
    }
}

/// On shard 0, at shutdown: another shard's final progress.
struct DelayStopped {
    shard: usize,
    offsets: DelayOffsets,
}

impl ShardCall<Shard> for DelayStopped {
    type Reply = ();

    async fn run(self, shard: Rc<Shard>) {
        let state = &shard.schedule();
        state.reports.borrow_mut().insert(self.shard, self.offsets);
        state.reported.notify();
    }
}

fn offset_file(shard: &Shard, offsets: DelayOffsets) -> DelayOffsetFile {
    let mut version = shard.schedule().data_version.borrow_mut();
    version.next(now_ms());
    DelayOffsetFile {
        offset_table: offsets,
        data_version: *version,
    }
}

/// On shard 0: writes delayOffset.json whenever some level moved.
async fn persist_loop(shard: Rc<Shard>) {
    let interval = shard.config().offset_persist_interval_ms;
    // Levels moved but not yet written (a failed write is retried).
    let mut unsaved = false;
    loop {
        if pause(&shard, interval).await {
            return;
        }
        // A partial view would drop the silent shards' levels from the file.
        let Some((offsets, changed)) = shard.delay_progress(true).await else {
            // Some shard may have cleared its changed flag before the
            // gather failed.
            unsaved = true;
            continue;
        };
        unsaved |= changed;
        if unsaved {
            let file = offset_file(&shard, offsets);
            unsaved = crate::services::persist::write_config(
                &shard.env().config_dir,
                DELAY_OFFSET_FILE,
                Arc::new(file),
            )
            .await
            .is_err();
        }
    }
}

/// A slave that became master in place: the delivery progress its
/// metadata sync wrote to delayOffset.json (as a start would read it).
pub(crate) fn reload(shard: &Shard) {
    let stored = match crate::services::delay_levels::load_offsets(&shard.env().config_dir) {
        Ok(stored) => stored,
        Err(e) => {
            tracing::warn!("reading delayOffset.json at the role change: {e}");
            return;
        }
    };
    let mut progress = shard.schedule().progress.borrow_mut();
    for (level, offset) in progress.iter_mut() {
        if let Some(stored) = stored.get(level) {
            *offset = *stored;
        }
    }
}

/// Starts the delivery loop (when this shard owns a level) and, on shard
/// 0, the persistence loop.
pub(crate) fn spawn(shard: &Rc<Shard>) {
    // A slave's delayOffset.json is the master's copy (`ha::metadata`);
    // it delivers only while it acts as master, and never writes the file.
    if shard.config().replication.broker_role.is_slave() {
        let escape = shard.config().replication.enable_remote_escape;
        if escape && shard.env().acting.enabled() && !shard.schedule().progress.borrow().is_empty()
        {
            let deliver = acting_deliver_loop(shard.clone());
            shard.tasks().spawn("acting-master delay delivery", deliver);
        }
        return;
    }
    // Both end when a master turns slave in place (`tasks::ha::role`).
    let role = &shard.role();
    if !shard.schedule().progress.borrow().is_empty() {
        let deliver = deliver_loop(shard.clone());
        shard
            .tasks()
            .spawn("delay-level delivery", role.scoped(deliver));
    }
    if shard.index() == 0 {
        let persist = persist_loop(shard.clone());
        shard
            .tasks()
            .spawn("delayOffset.json", role.scoped(persist));
    }
}

/// At shutdown (the loops have ended): hands the final progress to shard
/// 0, which writes delayOffset.json once every shard reported (or after
/// [`STOP_GATHER_TIMEOUT_MS`]).
pub(crate) async fn stop(shard: &Rc<Shard>) {
    if shard.config().replication.broker_role.is_slave() {
        return;
    }
    let state = &shard.schedule();
    let (own, _) = state.progress(true);
    if shard.index() != 0 {
        let report = DelayStopped {
            shard: shard.index(),
            offsets: own,
        };
        if let Err(reject) = shard.call(0, report).await {
            tracing::warn!(shard = shard.index(), remark = %reject.remark,
                "could not hand delay progress to shard 0");
        }
        return;
    }
    state.reports.borrow_mut().insert(0, own);
    let all_in = async {
        while state.reports.borrow().len() < shard.count() {
            state.reported.wait().await;
        }
        true
    };
    let timeout = async {
        glommio::timer::sleep(Duration::from_millis(STOP_GATHER_TIMEOUT_MS)).await;
        false
    };
    if !future::or(all_in, timeout).await {
        tracing::warn!("not every shard reported its delay progress; keeping the last file");
        return;
    }
    let mut all = DelayOffsets::new();
    for part in std::mem::take(&mut *state.reports.borrow_mut()).into_values() {
        all.extend(part);
    }
    let file = offset_file(shard, all);
    // Logged inside; nothing is left to answer at shutdown.
    let _ = crate::services::persist::write_config(
        &shard.env().config_dir,
        DELAY_OFFSET_FILE,
        Arc::new(file),
    )
    .await;
}
