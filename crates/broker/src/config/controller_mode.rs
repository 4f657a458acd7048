//! Controller mode (`enableControllerMode`): the broker's id and role come
//! from a controller, which elects the master of the broker set. The keys
//! are Java's (`BrokerConfig`, `MessageStoreConfig`), with Java's defaults.

use std::path::{Path, PathBuf};

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
}
