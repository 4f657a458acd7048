//! A role change without a restart (Java's `ReplicasManager.changeToMaster`
//! / `changeToSlave`): a slave that is elected, or that follows a new
//! master with a log that agrees with it, changes role in the running
//! broker ([`RoleOrder`]), which keeps its store, shards and listeners
//! (no recovery, no re-registration gap). A master that loses its role
//! turns slave in place too. A master elected again at a new epoch, and a
//! broker whose log must be cut back first, still restart.

use std::time::{Duration, Instant};

use ferrocket_controller::member::MasterInfo;

use super::peers;
use super::state::MasterLease;
use super::supervisor::{same_master, BrokerRun, Supervisor, RETRY_MS, TICK_MS};
use super::switch::RoleOrder;
use super::truncate;
use crate::config::BrokerRole;

/// Longest a running broker may take to carry out a role order.
const ORDER_TIMEOUT_MS: u64 = 15_000;

impl Supervisor {
    /// After the master changed from `current` to `next`: the master now
    /// in force when the running broker took its role in place, `None`
    /// when it must restart.
    pub(super) async fn change_in_place(
        &mut self,
        current: &MasterInfo,
        next: Option<MasterInfo>,
        run: &BrokerRun,
        lease: &MasterLease,
    ) -> Option<MasterInfo> {
        if current.broker_id == self.id {
            return self.follow_in_place(next?, run).await;
        }
        let next = match next {
            Some(next) => next,
            // No master: ask to be elected, still serving as slave.
            None => loop {
                if let Some(next) = self.elect().await {
                    break next;
                }
                if self.pause(RETRY_MS).await {
                    return None;
                }
            },
        };
        if same_master(Some(&next), current) {
            return Some(next);
        }
        if next.broker_id != self.id {
            return self.follow_in_place(next, run).await;
        }
        let order = self.promotion(&next, lease);
        self.order(order, run).await.then_some(next)
    }

    /// This slave is elected: master of `next`'s epoch, its in-sync set and
    /// a lease from the answer.
    fn promotion(&self, next: &MasterInfo, lease: &MasterLease) -> RoleOrder {
        let in_sync = &next.sync_state_set.sync_state_set;
        self.shared.in_sync.set_ids(in_sync);
        lease.revoke();
        lease.grant(self.lease_end(self.asked_at));
        RoleOrder {
            role: BrokerRole::SyncMaster,
            broker_id: 0,
            master_addr: String::new(),
            master_ha_addr: String::new(),
            master_epoch: Some(next.epoch),
            state_version: i64::from(next.epoch),
        }
    }

    /// Another broker is master (Java's `changeToSlave`): this broker
    /// follows `next` in place (a master stops taking sends and ends its
    /// master loops; a slave drops its link to the old master, after whose
    /// last chunk nothing more lands), then compares its log with the new
    /// master's and restarts after all when it ran past it (the cut is made
    /// with the store closed). Compared only once the old link is gone: a
    /// cut-off old master may still be sending until then.
    async fn follow_in_place(&self, next: MasterInfo, run: &BrokerRun) -> Option<MasterInfo> {
        if next.broker_id == self.id {
            return None;
        }
        let order = self.follow(&next).await?;
        if !self.order(order, run).await {
            return None;
        }
        self.agrees_with(&next).await.then_some(next)
    }

    /// Whether this broker's log agrees with `master`'s up to its end.
    async fn agrees_with(&self, master: &MasterInfo) -> bool {
        let own_end = self.shared.progress.written();
        let agrees = truncate::follows_without_cut(&self.base, own_end, &master.address).await;
        if !agrees {
            tracing::info!(master = %master.address, "following the new master needs a cut: restarting");
        }
        agrees
    }

    /// The order to follow `next`, once it says where its HA port is.
    async fn follow(&self, next: &MasterInfo) -> Option<RoleOrder> {
        let ha = peers::ha_server_addr(&next.address).await?;
        Some(RoleOrder {
            role: BrokerRole::Slave,
            broker_id: self.id,
            master_addr: next.address.clone(),
            master_ha_addr: ha,
            master_epoch: None,
            state_version: i64::from(next.epoch),
        })
    }

    /// Hands `order` to the running broker; true once it took the role.
    async fn order(&self, order: RoleOrder, run: &BrokerRun) -> bool {
        let switch = &self.shared.switch;
        let seq = switch.ask(order);
        let until = Instant::now() + Duration::from_millis(ORDER_TIMEOUT_MS);
        loop {
            if let Some(outcome) = switch.outcome(seq) {
                return outcome.is_ok();
            }
            if Instant::now() >= until || run.ended() || self.stopping() {
                // Taken but unfinished: the restart that follows stops it.
                switch.withdraw(seq);
                tracing::warn!("the broker did not change role in time: restarting");
                return false;
            }
            tokio::time::sleep(Duration::from_millis(TICK_MS / 5)).await;
        }
    }
}
