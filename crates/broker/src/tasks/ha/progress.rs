//! Shard 0 in controller mode publishes where the CommitLog ends and how
//! far each replica that follows this broker over an AutoSwitch HA link
//! has acked (`role::progress`), so that the supervisor's heartbeats,
//! in-sync set and role changes read this broker's HA state in process.

use std::rc::Rc;
use std::time::Duration;

use crate::role::progress::{Follower, Progress};
use crate::services::replication::HaState;
use crate::shard::Shard;

/// How often the snapshot is renewed: well within a heartbeat interval.
const PUBLISH_MS: u64 = 50;

/// Publishes until the shard stops, then withdraws the snapshot (the next
/// run, possibly after its log was cut, publishes its own).
pub(crate) async fn publish_loop(shard: Rc<Shard>) {
    let Ok(control) = shard.control() else {
        return;
    };
    let poll = Duration::from_millis(PUBLISH_MS);
    loop {
        publish_now(&shard, &control.ha);
        if shard.stopping().interrupts_sleep(poll).await {
            break;
        }
    }
    shard.env().role.progress.clear();
}

/// Publishes at once: after a role change in place, before the
/// supervisor hears of it, so that what it then compares with the new
/// master is the log's end after the change, never an older one.
pub(crate) fn publish_now(shard: &Shard, ha: &HaState) {
    shard.env().role.progress.publish(Progress {
        written: shard.store().reader().written_offset(),
        followers: followers(ha),
    });
}

/// The replicas that follow this master over its own AutoSwitch links and
/// have reported where their log ends: the only ones whose copies are
/// known to be this master's bytes (a replica that forked from this
/// master's epochs is refused at the handshake, before it reports).
fn followers(ha: &HaState) -> Vec<Follower> {
    ha.links()
        .iter()
        .filter_map(|link| {
            let broker_id = link.broker_id.get().filter(|id| *id > 0)?;
            let acked = link.acked.get();
            (acked >= 0).then_some(Follower { broker_id, acked })
        })
        .collect()
}
