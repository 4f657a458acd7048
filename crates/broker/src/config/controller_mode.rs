//! Controller mode (`enableControllerMode`): the broker's id and role come
//! from a controller, which elects the master of the broker set. The keys
//! are Java's (`BrokerConfig`, `MessageStoreConfig`), with Java's defaults.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use arc_swap::ArcSwap;

/// Counts NOTIFY_BROKER_ROLE_CHANGED requests from controllers, so that
/// whoever runs the broker in controller mode checks its role at once
/// instead of at the next `syncBrokerMetadataPeriod`. Clones share it.
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

impl PartialEq for RoleNotices {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for RoleNotices {}

/// The set's in-sync replicas (broker ids) as the master knows them (empty:
/// not known yet). Set by whoever runs the broker in controller mode:
/// raised before a larger set is proposed, lowered once a smaller one is
/// committed, so a send never waits for fewer copies than the controller
/// counts on. One writer publishes a whole new set; readers (every send
/// that waits for in-sync replicas, the HA gate) take it without a lock.
#[derive(Debug, Clone, Default)]
pub struct SyncStateSize {
    ids: Arc<ArcSwap<BTreeSet<i64>>>,
}

impl SyncStateSize {
    pub fn set_ids(&self, ids: &BTreeSet<i64>) {
        self.ids.store(Arc::new(ids.clone()));
    }

    /// How many (0: not known).
    pub fn get(&self) -> u32 {
        u32::try_from(self.ids.load().len()).unwrap_or(u32::MAX)
    }

    /// Which broker ids (shared, not copied).
    pub fn ids(&self) -> Arc<BTreeSet<i64>> {
        self.ids.load_full()
    }
}

impl PartialEq for SyncStateSize {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.ids, &other.ids)
    }
}

impl Eq for SyncStateSize {}

/// A controller-mode master's lease on acknowledging writes that need
/// replicas: granted by whoever runs the broker each time a controller
/// confirms this broker is still the master, for half the controller's
/// heartbeat timeout from when the confirming request was sent. A
/// controller declares a master dead only a whole timeout after its last
/// heartbeat, so a deposed master (cut off from the controllers, or paused)
/// stops acknowledging before another can be elected. Unlimited (the
/// default) outside controller mode and on slaves. Clones share it.
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

impl PartialEq for MasterLease {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for MasterLease {}

/// Set by whoever runs the broker in controller mode before it stops a run
/// to start the next in another role: the stopping run does not unregister
/// from the name servers, since the next registers at once (unregistering
/// would drop the broker set from every route meanwhile). Clones share it.
#[derive(Debug, Clone, Default)]
pub struct RoleHandover(Arc<std::sync::atomic::AtomicBool>);

impl RoleHandover {
    pub fn set(&self) {
        self.0.store(true, Ordering::Release);
    }

    pub fn is_set(&self) -> bool {
        self.0.load(Ordering::Acquire)
    }
}

impl PartialEq for RoleHandover {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for RoleHandover {}

/// Default `syncBrokerMetadataPeriod`: how often the role is checked.
pub const SYNC_BROKER_METADATA_PERIOD_MS_DEFAULT: u64 = 5_000;
/// Default `checkSyncStateSetPeriod`.
pub const CHECK_SYNC_STATE_SET_PERIOD_MS_DEFAULT: u64 = 5_000;
/// Default `syncControllerMetadataPeriod`: how often the leader is found.
pub const SYNC_CONTROLLER_METADATA_PERIOD_MS_DEFAULT: u64 = 10_000;
/// Default `controllerHeartBeatTimeoutMills`.
pub const CONTROLLER_HEARTBEAT_TIMEOUT_MS_DEFAULT: u64 = 10_000;
/// Default `brokerHeartbeatInterval`.
pub const BROKER_HEARTBEAT_INTERVAL_MS_DEFAULT: u64 = 1_000;
/// Default `sendHeartbeatTimeoutMillis`.
pub const SEND_HEARTBEAT_TIMEOUT_MS_DEFAULT: u64 = 1_000;
/// Default `haMaxTimeSlaveNotCatchup`.
pub const HA_MAX_TIME_SLAVE_NOT_CATCHUP_MS_DEFAULT: u64 = 15_000;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControllerModeConfig {
    /// `enableControllerMode`.
    pub enabled: bool,
    /// `controllerAddr`: `host:port;host:port`, every controller.
    pub controller_addr: String,
    pub sync_broker_metadata_period_ms: u64,
    pub check_sync_state_set_period_ms: u64,
    pub sync_controller_metadata_period_ms: u64,
    /// `controllerHeartBeatTimeoutMills`: the controller thinks this broker
    /// dead after this long without a heartbeat.
    pub controller_heartbeat_timeout_ms: u64,
    /// `brokerElectionPriority`: lower wins among equally advanced replicas.
    pub broker_election_priority: i32,
    pub broker_heartbeat_interval_ms: u64,
    pub send_heartbeat_timeout_ms: u64,
    /// `allAckInSyncStateSet`: a send waits for every in-sync replica.
    pub all_ack_in_sync_state_set: bool,
    /// `minInSyncReplicas`: fewer in-sync replicas refuse sends
    /// (IN_SYNC_REPLICAS_NOT_ENOUGH).
    pub min_in_sync_replicas: u32,
    pub ha_max_time_slave_not_catchup_ms: u64,
    /// `storePathEpochFile`; unset: `{storePathRootDir}/epochFileCheckpoint`.
    pub store_path_epoch_file: Option<PathBuf>,
    /// `storePathBrokerIdentity`; unset: `{storePathRootDir}/brokerIdentity`.
    pub store_path_broker_identity: Option<PathBuf>,
    /// Not a key: set by whoever runs the broker in controller mode when
    /// this run is the master of that epoch; the broker records the epoch
    /// at its CommitLog's end before it serves.
    pub master_epoch: Option<i32>,
    /// Not a key: the master epoch this run serves under (master or
    /// slave), sent as `DataVersion.stateVersion` in every registration so
    /// that a name server refuses a deposed master's (Java's
    /// `nextVersion(masterEpoch)`); 0 outside controller mode.
    pub state_version: i64,
    /// Not a key: where NOTIFY_BROKER_ROLE_CHANGED is signalled.
    pub role_notices: RoleNotices,
    /// Not a key: see [`MasterLease`].
    pub lease: MasterLease,
    /// Not a key: see [`RoleHandover`].
    pub handover: RoleHandover,
    /// Not a key: see [`super::RoleSwitch`].
    pub role_switch: super::RoleSwitch,
    /// Not a key: the in-sync set's size, on a master.
    pub sync_state_size: SyncStateSize,
    /// Not a key: this broker's id from the controller (the config's
    /// `brokerId` is 0 on a master).
    pub broker_controller_id: Option<i64>,
}

impl Default for ControllerModeConfig {
    fn default() -> Self {
        Self {
            enabled: false,
            controller_addr: String::new(),
            sync_broker_metadata_period_ms: SYNC_BROKER_METADATA_PERIOD_MS_DEFAULT,
            check_sync_state_set_period_ms: CHECK_SYNC_STATE_SET_PERIOD_MS_DEFAULT,
            sync_controller_metadata_period_ms: SYNC_CONTROLLER_METADATA_PERIOD_MS_DEFAULT,
            controller_heartbeat_timeout_ms: CONTROLLER_HEARTBEAT_TIMEOUT_MS_DEFAULT,
            broker_election_priority: i32::MAX,
            broker_heartbeat_interval_ms: BROKER_HEARTBEAT_INTERVAL_MS_DEFAULT,
            send_heartbeat_timeout_ms: SEND_HEARTBEAT_TIMEOUT_MS_DEFAULT,
            all_ack_in_sync_state_set: false,
            min_in_sync_replicas: 1,
            ha_max_time_slave_not_catchup_ms: HA_MAX_TIME_SLAVE_NOT_CATCHUP_MS_DEFAULT,
            store_path_epoch_file: None,
            store_path_broker_identity: None,
            master_epoch: None,
            state_version: 0,
            role_notices: RoleNotices::default(),
            lease: MasterLease::default(),
            handover: RoleHandover::default(),
            role_switch: super::RoleSwitch::default(),
            sync_state_size: SyncStateSize::default(),
            broker_controller_id: None,
        }
    }
}

impl ControllerModeConfig {
    /// The controllers' addresses.
    pub fn controllers(&self) -> Vec<String> {
        self.controller_addr
            .split(';')
            .map(str::trim)
            .filter(|a| !a.is_empty())
            .map(str::to_string)
            .collect()
    }

    pub fn epoch_file(&self, store_root: &Path) -> PathBuf {
        self.store_path_epoch_file
            .clone()
            .unwrap_or_else(|| store_root.join("epochFileCheckpoint"))
    }

    pub fn identity_file(&self, store_root: &Path) -> PathBuf {
        self.store_path_broker_identity
            .clone()
            .unwrap_or_else(|| store_root.join("brokerIdentity"))
    }

    /// Copies (the master's included) a send with `WAIT=true` waits for:
    /// every in-sync replica with `allAckInSyncStateSet`, else
    /// `inSyncReplicas`.
    pub fn required_copies(&self, in_sync_replicas: u32) -> u32 {
        match self.all_ack_in_sync_state_set {
            true => self.sync_state_size.get().max(1),
            false => in_sync_replicas.max(1),
        }
    }

    /// Whether a master may acknowledge a write that waits for `copies`
    /// copies: one that needs replicas only under a valid lease.
    pub fn may_acknowledge(&self, copies: u32) -> bool {
        !self.enabled || copies <= 1 || self.lease.valid()
    }

    /// Whether the in-sync set is known to be smaller than
    /// `minInSyncReplicas` (sends are then refused).
    pub fn too_few_in_sync(&self) -> bool {
        let size = self.sync_state_size.get();
        self.enabled && size != 0 && size < self.min_in_sync_replicas
    }

    /// Java's start-up rules for controller mode.
    pub fn validate(&self) -> Result<(), String> {
        if !self.enabled {
            return Ok(());
        }
        if self.controllers().is_empty() {
            return Err(
                "enableControllerMode=true needs controllerAddr (host:port;host:port)".into(),
            );
        }
        if self.min_in_sync_replicas == 0 {
            return Err("minInSyncReplicas must be at least 1".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sets `key` through the broker's declarations.
    struct Keys(crate::config::BrokerConfig);

    impl Keys {
        fn apply(&mut self, key: &str, value: &str) -> Result<bool, String> {
            let setting = ferrocket_runtime::settings::Setting::from_flag(value.into(), "t".into());
            crate::config::keys::BROKER_SETTINGS.apply(&mut self.0, key, &setting)
        }
    }

    impl std::ops::Deref for Keys {
        type Target = ControllerModeConfig;
        fn deref(&self) -> &ControllerModeConfig {
            &self.0.controller_mode
        }
    }

    #[test]
    fn keys_apply_with_java_defaults_and_validate() {
        let mut config = Keys(Default::default());
        assert_eq!(config.broker_heartbeat_interval_ms, 1_000);
        assert!(config.apply("enableControllerMode", "true").unwrap());
        assert!(config.validate().is_err(), "no controllerAddr");
        assert!(config
            .apply("controllerAddr", "127.0.0.1:9877; 127.0.0.1:9878")
            .unwrap());
        assert_eq!(config.controllers().len(), 2);
        assert!(config.validate().is_ok());
        assert!(config.apply("brokerHeartbeatInterval", "0").is_err());
        assert!(config
            .apply("fetchControllerAddrByDnsLookup", "true")
            .is_err());
        assert!(!config.apply("noSuchKey", "SLAVE").unwrap());
        let root = Path::new("/s");
        assert_eq!(config.epoch_file(root), Path::new("/s/epochFileCheckpoint"));
        assert!(config.apply("storePathBrokerIdentity", "/x/id").unwrap());
        assert_eq!(config.identity_file(root), Path::new("/x/id"));
    }

    #[test]
    fn a_lapsed_lease_stops_acknowledging_writes_that_need_replicas() {
        let mut config = ControllerModeConfig::default();
        assert!(config.may_acknowledge(3), "outside controller mode");
        config.enabled = true;
        assert!(
            config.may_acknowledge(3),
            "unlimited until a run grants one"
        );
        config.lease.revoke();
        assert!(config.may_acknowledge(1), "a write that needs no replica");
        assert!(!config.may_acknowledge(2));
        let now = std::time::Instant::now();
        config.lease.grant(now + std::time::Duration::from_secs(60));
        assert!(config.may_acknowledge(2));
        config.lease.grant(now);
        assert!(
            config.may_acknowledge(2),
            "an older grant never shortens it"
        );
        config.lease.revoke();
        config.lease.grant(now);
        assert!(!config.may_acknowledge(2), "granted until a moment past");
    }
}
