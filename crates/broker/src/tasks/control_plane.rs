//! Shard 0's control-plane loops: client expiry, consumerOffset.json
//! persistence, and the shutdown rendezvous where every shard hands over
//! its final offsets.

use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use ferrocket_runtime::shard::ShardCall;
use futures_lite::future;

use crate::clock::now_ms;
use crate::error::Reject;
use crate::services::offsets::{merge, OffsetFile, OffsetMap, OFFSETS_FILE};
use crate::services::persist::write_config;
use crate::services::topics::TOPICS_FILE;
use crate::shard::Shard;

/// How often silent clients are looked for (`ClientHousekeepingService`).
pub const CLIENT_SCAN_INTERVAL_MS: u64 = 10_000;
/// How long shard 0 waits at shutdown for the other shards' offsets.
pub const SHUTDOWN_GATHER_TIMEOUT_MS: u64 = 10_000;

/// On shard 0, at shutdown: another shard's final offsets.
struct ShardStopped {
    shard: usize,
    offsets: OffsetMap,
}

impl ShardCall<Shard> for ShardStopped {
    type Reply = Result<(), Reject>;

    async fn run(self, shard: Rc<Shard>) -> Self::Reply {
        let control = shard.control()?;
        control
            .stopped
            .borrow_mut()
            .insert(self.shard, self.offsets);
        control.stopped_notify.notify();
        Ok(())
    }
}

/// On every shard: its offsets and whether they changed since last asked.
#[derive(Clone)]
struct SnapshotOffsets;

impl ShardCall<Shard> for SnapshotOffsets {
    type Reply = (OffsetMap, bool);

    async fn run(self, shard: Rc<Shard>) -> Self::Reply {
        shard.offsets().borrow_mut().snapshot()
    }
}

/// Drops clients that stopped sending heartbeats; runs until the shard stops.
pub(crate) async fn client_expiry_loop(shard: Rc<Shard>) {
    let interval = Duration::from_millis(CLIENT_SCAN_INTERVAL_MS);
    loop {
        if shard.stopping().interrupts_sleep(interval).await {
            return;
        }
        let expiry = shard.config().client_expiry_ms;
        let now = now_ms();
        if let Err(reject) = shard
            .change_clients(|table| table.expire(now, expiry))
            .await
        {
            tracing::warn!(remark = %reject.remark, "client expiry failed");
        }
    }
}

/// Gathers every shard's offsets and writes consumerOffset.json when any
/// changed; runs until the shard stops.
pub(crate) async fn offset_persist_loop(shard: Rc<Shard>) {
    let interval = Duration::from_millis(shard.config().offset_persist_interval_ms);
    let mut unsaved = false;
    loop {
        if shard.stopping().interrupts_sleep(interval).await {
            return;
        }
        let mut parts = Vec::with_capacity(shard.count());
        let mut changed = false;
        let mut complete = true;
        for answer in shard.call_all(SnapshotOffsets).await {
            match answer {
                Ok((map, c)) => {
                    changed |= c;
                    parts.push(map);
                }
                Err(_) => complete = false,
            }
        }
        // A partial view would drop the missing shards' offsets from the
        // file; the shards cleared their changed flags, so remember to write
        // next round. A failed write is retried the same way.
        unsaved |= changed;
        if unsaved && complete {
            let file = OffsetFile {
                offset_table: merge(parts),
            };
            unsaved = write_config(&shard.env().config_dir, OFFSETS_FILE, Arc::new(file))
                .await
                .is_err();
        }
    }
}

/// At shutdown, on shard 0: waits (bounded) for every other shard's final
/// offsets, then writes consumerOffset.json and topics.json.
async fn final_persist(shard: &Rc<Shard>, own: OffsetMap) {
    let Ok(control) = shard.control() else {
        return;
    };
    control.stopped.borrow_mut().insert(shard.index(), own);
    let all_in = async {
        while control.stopped.borrow().len() < shard.count() {
            control.stopped_notify.wait().await;
        }
        true
    };
    let timeout = async {
        glommio::timer::sleep(Duration::from_millis(SHUTDOWN_GATHER_TIMEOUT_MS)).await;
        false
    };
    if !future::or(all_in, timeout).await {
        tracing::warn!(
            reported = control.stopped.borrow().len(),
            shards = shard.count(),
            "not every shard reported its offsets at shutdown; keeping the last file"
        );
        // Logged inside; nothing is left to answer at shutdown.
        let _ = write_config(
            &shard.env().config_dir,
            TOPICS_FILE,
            control.topics.published().value,
        )
        .await;
        return;
    }
    let parts: Vec<OffsetMap> = std::mem::take(&mut *control.stopped.borrow_mut())
        .into_values()
        .collect();
    let file = OffsetFile {
        offset_table: merge(parts),
    };
    let _ = write_config(&shard.env().config_dir, OFFSETS_FILE, Arc::new(file)).await;
    let _ = write_config(
        &shard.env().config_dir,
        TOPICS_FILE,
        control.topics.published().value,
    )
    .await;
}

/// At shutdown: shard 0 gathers every shard's final offsets and writes
/// them (then unregisters from the name servers, unless the stop is a
/// controller-mode role change); the others hand theirs to shard 0.
pub(crate) async fn hand_over_offsets(shard: &Rc<Shard>) {
    let (own, _) = shard.offsets().borrow_mut().snapshot();
    if shard.index() == 0 {
        final_persist(shard, own).await;
        if shard.env().role.handover.is_set() {
            tracing::info!("stopping for a role change: staying registered");
        } else {
            crate::tasks::namesrv_register::unregister_all(shard).await;
        }
        return;
    }
    let stopped = ShardStopped {
        shard: shard.index(),
        offsets: own,
    };
    if let Err(reject) = shard.call(0, stopped).await.and_then(|done| done) {
        tracing::warn!(shard = shard.index(), remark = %reject.remark,
            "could not hand offsets to shard 0");
    }
}
