//! Controller mode's role change in place (Java's
//! `ReplicasManager.changeToMaster` / `changeToSlave`): whoever runs the
//! broker asks the running data plane to take another role, and the
//! broker switches only what the role decides (HA links, whether sends are
//! taken, the epoch, the registration), keeping its store, shards and
//! listeners. Clones share one order slot.

use std::sync::{Arc, Mutex};

use crate::config::BrokerRole;

/// The role to take, from the controller's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoleOrder {
    pub role: BrokerRole,
    /// `brokerId` in registrations: 0 as master, the controller's id as
    /// slave.
    pub broker_id: i64,
    /// A slave's master: its Remoting address and its HA address.
    pub master_addr: String,
    pub master_ha_addr: String,
    /// As master: the epoch recorded at the CommitLog's end.
    pub master_epoch: Option<i32>,
    /// `DataVersion.stateVersion` from now on.
    pub state_version: i64,
}

#[derive(Debug, Default)]
struct Slot {
    next_seq: u64,
    order: Option<(u64, RoleOrder)>,
    done: Option<(u64, Result<(), String>)>,
}

/// One order at a time: the asker posts it, shard 0 of the running broker
/// takes it, changes role, and posts the outcome under the order's number.
#[derive(Debug, Clone, Default)]
pub struct RoleSwitch(Arc<Mutex<Slot>>);

impl RoleSwitch {
    fn slot(&self) -> std::sync::MutexGuard<'_, Slot> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Posts `order` (replacing one not taken yet); answers its number.
    pub fn ask(&self, order: RoleOrder) -> u64 {
        let mut slot = self.slot();
        slot.next_seq += 1;
        let seq = slot.next_seq;
        slot.order = Some((seq, order));
        seq
    }

    /// The posted order, if any (the broker's side).
    pub fn take(&self) -> Option<(u64, RoleOrder)> {
        self.slot().order.take()
    }

    /// The outcome of order `seq` (the broker's side).
    pub fn finish(&self, seq: u64, outcome: Result<(), String>) {
        self.slot().done = Some((seq, outcome));
    }

    /// Order `seq`'s outcome, once posted.
    pub fn outcome(&self, seq: u64) -> Option<Result<(), String>> {
        match &self.slot().done {
            Some((done, outcome)) if *done == seq => Some(outcome.clone()),
            _ => None,
        }
    }

    /// Withdraws order `seq` if it was not taken; true when withdrawn.
    pub fn withdraw(&self, seq: u64) -> bool {
        let mut slot = self.slot();
        match &slot.order {
            Some((posted, _)) if *posted == seq => {
                slot.order = None;
                true
            }
            _ => false,
        }
    }
}
