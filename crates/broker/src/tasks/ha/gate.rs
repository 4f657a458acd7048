//! Controller mode's confirm offset (Java's `computeConfirmOffset` and the
//! reput service's end): every shard's ConsumeQueue dispatch stops where
//! each in-sync replica holds the log, so a consumer never reads a message
//! that a failover could take back. On a master whose sends wait for every
//! in-sync replica (`allAckInSyncStateSet`) it follows the in-sync slaves'
//! acks; on a slave, the confirm offset its master's frames carry. Runs on
//! shard 0 and moves the gate of every shard's store
//! (`ShardStore::set_dispatch_gate`, closed at the recovered end when the
//! store opens).

use std::rc::Rc;
use std::time::Duration;

use ferrocket_runtime::shard::ShardCall;
use futures_lite::future;

use crate::services::replication::HaState;
use crate::shard::Shard;

/// How often a master looks at the in-sync set (the supervisor changes it
/// from its own thread).
pub const IN_SYNC_POLL_MS: u64 = 100;

/// On every shard: dispatch up to this CommitLog position.
#[derive(Clone)]
struct SetDispatchGate(i64);

impl ShardCall<Shard> for SetDispatchGate {
    type Reply = ();

    async fn run(self, shard: Rc<Shard>) -> Self::Reply {
        shard.store().set_dispatch_gate(self.0);
    }
}

/// A new master whose dispatch is not gated (`allAckInSyncStateSet=false`)
/// after a role change in place: every shard dispatches all it holds.
pub(crate) async fn open_all(shard: &Shard) {
    for answer in shard.call_all(SetDispatchGate(i64::MAX)).await {
        if let Err(e) = answer {
            tracing::warn!(error = ?e, "opening a shard's dispatch gate");
        }
    }
}

/// Keeps every shard's gate at the confirm offset until the shard stops;
/// `resume`: the gates are where a previous role left them.
pub(crate) async fn gate_loop(shard: Rc<Shard>, resume: bool) {
    let Ok(control) = shard.control() else {
        return;
    };
    let ha = &control.ha;
    let slave = shard.config().replication.broker_role.is_slave();
    // Where the stores' gates started.
    if !resume {
        ha.set_gate(shard.store().reader().written_offset());
    }
    let mut published = ha.gate();
    loop {
        let (acks, confirms) = (ha.acks_epoch(), ha.confirm_changed.epoch());
        let gate = match slave {
            true => ha.master_confirm.get().unwrap_or(published),
            false => master_gate(&shard, ha, published),
        };
        if gate != published {
            ha.set_gate(gate);
            for answer in shard.call_all(SetDispatchGate(gate)).await {
                if let Err(e) = answer {
                    tracing::warn!(error = ?e, "moving a shard's dispatch gate");
                }
            }
            published = gate;
            continue;
        }
        let changed = async {
            match slave {
                true => ha.confirm_changed.since(confirms).await,
                false => {
                    let poll = async {
                        glommio::timer::sleep(Duration::from_millis(IN_SYNC_POLL_MS)).await;
                    };
                    future::or(ha.acks_since(acks), poll).await
                }
            }
            false
        };
        let stopped = async {
            shard.stopping().wait().await;
            true
        };
        if future::or(stopped, changed).await {
            return;
        }
    }
}

/// A master's confirm offset: open (`i64::MAX`) while it is the only
/// in-sync replica; else what every connected in-sync slave acked, or
/// `previous` while one of them is not connected.
fn master_gate(shard: &Shard, ha: &HaState, previous: i64) -> i64 {
    let role = &shard.env().role;
    let in_sync = role.in_sync.ids();
    let own = role.controller_id;
    if in_sync.iter().all(|id| Some(*id) == own) {
        return i64::MAX;
    }
    let written = shard.store().reader().written_offset();
    ha.confirm_offset(written, &in_sync, own)
        .unwrap_or(previous)
}
