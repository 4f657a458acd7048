//! Controller mode's live handles: what whoever runs the broker in
//! controller mode (the supervisor, `role::supervisor`) shares with the
//! running data plane, passed to it beside its [`BrokerConfig`] (which
//! holds settings only). Clones share every handle; outside controller
//! mode the defaults change nothing (no lease limit, no in-sync set).
//!
//! [`BrokerConfig`]: crate::config::BrokerConfig

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use arc_swap::ArcSwap;

use super::progress::HaProgress;
use super::switch::RoleSwitch;
use crate::config::ControllerModeConfig;

/// The handles of one run of the broker in controller mode.
#[derive(Debug, Clone, Default)]
pub struct RoleState {
    /// Where NOTIFY_BROKER_ROLE_CHANGED is signalled.
    pub notices: RoleNotices,
    /// See [`MasterLease`].
    pub lease: MasterLease,
    /// See [`RoleHandover`].
    pub handover: RoleHandover,
    /// See [`RoleSwitch`].
    pub switch: RoleSwitch,
    /// The in-sync set, on a master.
    pub in_sync: InSyncSet,
    /// This broker's id from the controller (the config's `brokerId` is 0
    /// on a master).
    pub controller_id: Option<i64>,
    /// The CommitLog's end and the AutoSwitch followers' acks, as shard 0
    /// publishes them.
    pub progress: HaProgress,
}

impl RoleState {
    /// Copies (the master's included) a send with `WAIT=true` waits for:
    /// every in-sync replica with `allAckInInSyncSet`, else
    /// `inSyncReplicas`.
    pub fn required_copies(&self, mode: &ControllerModeConfig, in_sync_replicas: u32) -> u32 {
        match mode.all_ack_in_sync_state_set {
            true => self.in_sync.size().max(1),
            false => in_sync_replicas.max(1),
        }
    }

    /// Whether a master may acknowledge a write that waits for `copies`
    /// copies: one that needs replicas only under a valid lease.
    pub fn may_acknowledge(&self, mode: &ControllerModeConfig, copies: u32) -> bool {
        !mode.enabled || copies <= 1 || self.lease.valid()
    }

    /// Whether the in-sync set is known to be smaller than
    /// `minInSyncReplicas` (sends are then refused).
    pub fn too_few_in_sync(&self, mode: &ControllerModeConfig) -> bool {
        let size = self.in_sync.size();
        mode.enabled && size != 0 && size < mode.min_in_sync_replicas
    }
}

/// Counts NOTIFY_BROKER_ROLE_CHANGED requests from controllers, so that
/// the supervisor checks its role at once instead of at the next
/// `syncBrokerMetadataPeriod`.
#[derive(Debug, Clone, Default)]
pub struct RoleNotices(Arc<AtomicU64>);

impl RoleNotices {
    pub fn notify(&self) {
        self.0.fetch_add(1, Ordering::Release);
    }

    pub fn count(&self) -> u64 {
        self.0.load(Ordering::Acquire)
    }
}

/// The set's in-sync replicas (broker ids) as the master knows them (empty:
/// not known yet). Set by the supervisor: raised before a larger set is
/// proposed, lowered once a smaller one is committed, so a send never waits
/// for fewer copies than the controller counts on. One writer publishes a
/// whole new set; readers (every send that waits for in-sync replicas, the
/// HA gate) take it without a lock.
#[derive(Debug, Clone, Default)]
pub struct InSyncSet {
    ids: Arc<ArcSwap<BTreeSet<i64>>>,
}

impl InSyncSet {
    pub fn set_ids(&self, ids: &BTreeSet<i64>) {
        self.ids.store(Arc::new(ids.clone()));
    }

    /// How many (0: not known).
    pub fn size(&self) -> u32 {
        u32::try_from(self.ids.load().len()).unwrap_or(u32::MAX)
    }

    /// Which broker ids (shared, not copied).
    pub fn ids(&self) -> Arc<BTreeSet<i64>> {
        self.ids.load_full()
    }
}

/// A controller-mode master's lease on acknowledging writes that need
/// replicas: granted by the supervisor each time a controller confirms
/// this broker is still the master, for half the controller's heartbeat
/// timeout from when the confirming request was sent. A controller
/// declares a master dead only a whole timeout after its last heartbeat,
/// so a deposed master (cut off from the controllers, or paused) stops
/// acknowledging before another can be elected. Unlimited (the default)
/// outside controller mode and on slaves.
#[derive(Debug, Clone)]
pub struct MasterLease(Arc<AtomicU64>);

impl Default for MasterLease {
    fn default() -> Self {
        Self(Arc::new(AtomicU64::new(u64::MAX)))
    }
}

fn lease_clock_ms(at: std::time::Instant) -> u64 {
    static BASE: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    let base = *BASE.get_or_init(std::time::Instant::now);
    u64::try_from(at.saturating_duration_since(base).as_millis()).unwrap_or(u64::MAX - 1)
}

impl MasterLease {
    /// Valid until `until` (never moves back: a late answer to an older
    /// request cannot shorten a newer grant).
    pub fn grant(&self, until: std::time::Instant) {
        self.0.fetch_max(lease_clock_ms(until), Ordering::AcqRel);
    }

    /// Expired now: nothing that needs replicas is acknowledged until the
    /// next grant.
    pub fn revoke(&self) {
        self.0.store(0, Ordering::Release);
    }

    pub fn valid(&self) -> bool {
        lease_clock_ms(std::time::Instant::now()) < self.0.load(Ordering::Acquire)
    }
}

/// Set by the supervisor before it stops a run to start the next in
/// another role: the stopping run does not unregister from the name
/// servers, since the next registers at once (unregistering would drop the
/// broker set from every route meanwhile).
#[derive(Debug, Clone, Default)]
pub struct RoleHandover(Arc<AtomicBool>);

impl RoleHandover {
    pub fn set(&self) {
        self.0.store(true, Ordering::Release);
    }

    pub fn is_set(&self) -> bool {
        self.0.load(Ordering::Acquire)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lapsed_lease_stops_acknowledging_writes_that_need_replicas() {
        let state = RoleState::default();
        let mut mode = ControllerModeConfig::default();
        assert!(state.may_acknowledge(&mode, 3), "outside controller mode");
        mode.enabled = true;
        assert!(
            state.may_acknowledge(&mode, 3),
            "unlimited until a run grants one"
        );
        state.lease.revoke();
        assert!(
            state.may_acknowledge(&mode, 1),
            "a write that needs no replica"
        );
        assert!(!state.may_acknowledge(&mode, 2));
        let now = std::time::Instant::now();
        state.lease.grant(now + std::time::Duration::from_secs(60));
        assert!(state.may_acknowledge(&mode, 2));
        state.lease.grant(now);
        assert!(
            state.may_acknowledge(&mode, 2),
            "an older grant never shortens it"
        );
        state.lease.revoke();
        state.lease.grant(now);
        assert!(
            !state.may_acknowledge(&mode, 2),
            "granted until a moment past"
        );
    }

    #[test]
    fn the_in_sync_set_sizes_the_wait_and_refuses_below_the_minimum() {
        let state = RoleState::default();
        let mut mode = ControllerModeConfig {
            enabled: true,
            min_in_sync_replicas: 2,
            ..Default::default()
        };
        assert!(!state.too_few_in_sync(&mode), "not known yet");
        state.in_sync.set_ids(&BTreeSet::from([1]));
        assert!(state.too_few_in_sync(&mode));
        state.in_sync.set_ids(&BTreeSet::from([1, 2, 3]));
        assert!(!state.too_few_in_sync(&mode));
        assert_eq!(state.required_copies(&mode, 2), 2);
        mode.all_ack_in_sync_state_set = true;
        assert_eq!(state.required_copies(&mode, 2), 3);
    }
}
