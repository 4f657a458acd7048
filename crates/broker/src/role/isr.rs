//! The master's upkeep of its set's in-sync replicas (Java's
//! `ReplicasManager` sync-state-set checks): a slave joins once its
//! CommitLog reaches where the master's stood at the previous check and the
//! start of the master's epoch; it leaves when it has not caught up for
//! `haMaxTimeSlaveNotCatchup` or is no longer alive. Changes go to the
//! controller as CONTROLLER_ALTER_SYNC_STATE_SET, fenced by the epochs.
//!
//! A slave's progress is read from this master's own HA links (each
//! AutoSwitch link's broker id and acked offset, as shard 0 publishes them
//! in process, `super::progress`), never from the slave: only a replica
//! that copies this master can count for it.

use std::collections::{BTreeSet, HashMap};
use std::time::{Duration, Instant};

use ferrocket_controller::member::{ControllerClient, Member, MemberError};
use ferrocket_protocol::body::{
    decode_json, encode_json, BrokerReplicasInfo, ReplicasInfo, SyncStateSet,
};
use ferrocket_protocol::codes::{request_code, response_code};
use ferrocket_protocol::header::controller::AlterSyncStateSetRequestHeader;

use super::progress::Follower;
use super::state::RoleState;
use super::truncate;
use crate::config::BrokerConfig;

/// Oldest HA snapshot a check uses (shard 0 renews it every 50 ms): an
/// older one means shard 0 stalled, and the set is left as it is rather
/// than a replica counted from acks that may have stopped.
const PROGRESS_AGE_MAX: Duration = Duration::from_secs(1);

#[derive(Default)]
pub(crate) struct IsrKeeper {
    /// When each slave last reached the master's previous end.
    caught_up_at: HashMap<i64, Instant>,
    /// The master's end at the previous check.
    previous_end: Option<i64>,
    /// Whether the previous check left a replica of the set out: then the
    /// next comes sooner, so that writes waiting for copies resume as soon
    /// as a replica catches up.
    short: bool,
}

impl IsrKeeper {
    pub(super) fn reset(&mut self) {
        self.caught_up_at.clear();
        self.previous_end = None;
        self.short = true;
    }

    /// How long until the next check: `period` while every replica is in
    /// sync, else at most `soon`.
    pub(super) fn next_check_ms(&self, period: u64, soon: u64) -> u64 {
        match self.short {
            true => period.min(soon),
            false => period,
        }
    }

    /// One check: reads the set from the controller, decides who is in
    /// sync now, and proposes the change, if any.
    pub(super) async fn check(
        &mut self,
        client: &ControllerClient,
        config: &BrokerConfig,
        role: &RoleState,
        member: &Member,
        id: i64,
    ) {
        let Some(set) = master_view(client, &member.broker_name, id).await else {
            return;
        };
        let Some(next) = self.in_sync_now(config, role, id, &set) else {
            return;
        };
        let current: BTreeSet<i64> = set.in_sync_replicas.iter().map(|r| r.broker_id).collect();
        let sizes = &role.in_sync;
        if next == current {
            sizes.set_ids(&current);
            return;
        }
        // A send must never wait for fewer copies than the controller
        // counts on: raise the wait before a larger set is proposed, lower
        // it only once a smaller one is committed.
        if next.len() > current.len() {
            sizes.set_ids(&next);
        }
        tracing::info!(?current, ?next, "proposing a new in-sync replica set");
        match propose(client, member, id, &set, &next).await {
            Ok(answer) if answer.code == response_code::SUCCESS => sizes.set_ids(&next),
            Ok(answer) => {
                tracing::warn!(code = answer.code, remark = ?answer.remark, "the controller refused the in-sync set");
                sizes.set_ids(&current);
            }
            // Unknown outcome: keep the larger wait.
            Err(e) => tracing::warn!("proposing the in-sync set: {e}"),
        }
    }

    /// This master and every live slave that caught up within
    /// `haMaxTimeSlaveNotCatchup` (see [`caught_up`]).
    fn in_sync_now(
        &mut self,
        config: &BrokerConfig,
        role: &RoleState,
        id: i64,
        set: &ReplicasInfo,
    ) -> Option<BTreeSet<i64>> {
        let progress = role.progress.fresh(PROGRESS_AGE_MAX)?;
        let (end, followers) = (progress.written, &progress.followers);
        let target = self.previous_end.unwrap_or(end);
        let epoch_start = truncate::last_epoch_start(config).unwrap_or(0);
        let now = Instant::now();
        let patience =
            Duration::from_millis(config.controller_mode.ha_max_time_slave_not_catchup_ms);
        let mut next = BTreeSet::from([id]);
        let replicas = set.in_sync_replicas.iter().chain(&set.not_in_sync_replicas);
        for replica in replicas.filter(|r| r.broker_id != id && r.alive) {
            if caught_up(followers, replica.broker_id, target, epoch_start) {
                self.caught_up_at.insert(replica.broker_id, now);
            }
            let recent = self
                .caught_up_at
                .get(&replica.broker_id)
                .is_some_and(|at| now.duration_since(*at) <= patience);
            if recent {
                next.insert(replica.broker_id);
            }
        }
        self.previous_end = Some(end);
        let members = set.in_sync_replicas.len() + set.not_in_sync_replicas.len();
        self.short = next.len() < members;
        Some(next)
    }
}

/// Whether replica `id` caught up with this master: it follows this master
/// over this master's own HA link (so what it holds passed the epoch check
/// at the handshake and came from this master) and acked both where the
/// master stood at the previous check and the start of the master's epoch.
/// How long the replica's own log is says nothing: a replica that copies a
/// deposed master grows a log that is not this one.
fn caught_up(followers: &[Follower], id: i64, target: i64, epoch_start: i64) -> bool {
    followers
        .iter()
        .any(|f| f.broker_id == id && f.acked >= target && f.acked >= epoch_start)
}

/// The set as the controller sees it, when this broker (`id`) is its master.
async fn master_view(
    client: &ControllerClient,
    broker_name: &str,
    id: i64,
) -> Option<ReplicasInfo> {
    let names = encode_json(&vec![broker_name.to_string()]);
    let answer = client
        .call(
            request_code::CONTROLLER_GET_SYNC_STATE_DATA,
            Default::default(),
            names,
        )
        .await
        .ok()
        .filter(|answer| answer.code == response_code::SUCCESS)?;
    let mut info = decode_json::<BrokerReplicasInfo>(&answer.body).ok()?;
    let set = info.replicas_info_table.remove(broker_name)?;
    (set.master_broker_id == Some(id)).then_some(set)
}

/// CONTROLLER_ALTER_SYNC_STATE_SET, fenced by the master and set epochs.
async fn propose(
    client: &ControllerClient,
    member: &Member,
    id: i64,
    set: &ReplicasInfo,
    next: &BTreeSet<i64>,
) -> Result<ferrocket_protocol::RemotingCommand, MemberError> {
    let header = AlterSyncStateSetRequestHeader {
        broker_name: member.broker_name.clone(),
        master_broker_id: Some(id),
        master_epoch: Some(set.master_epoch),
        invoke_time: None,
    };
    let body = encode_json(&SyncStateSet {
        sync_state_set: next.clone(),
        sync_state_set_epoch: set.sync_state_set_epoch,
    });
    client
        .call(
            request_code::CONTROLLER_ALTER_SYNC_STATE_SET,
            header.to_ext(),
            body,
        )
        .await
}

#[cfg(test)]
mod tests {
    use super::caught_up;
    use crate::role::progress::Follower;

    #[test]
    fn only_a_follower_of_this_master_that_acked_enough_is_caught_up() {
        let followers = [
            Follower {
                broker_id: 2,
                acked: 500,
            },
            Follower {
                broker_id: 3,
                acked: 90,
            },
        ];
        assert!(caught_up(&followers, 2, 400, 100));
        assert!(
            !caught_up(&followers, 2, 600, 100),
            "behind the previous end"
        );
        assert!(
            !caught_up(&followers, 3, 50, 100),
            "behind the epoch's start"
        );
        // A replica whose own log is long but that is not linked here
        // (it follows a deposed master) never counts.
        assert!(!caught_up(&followers, 4, 0, 0));
    }
}
