//! Master/slave settings (`brokerRole` and the HA keys of RocketMQ's
//! `MessageStoreConfig` and `BrokerConfig`), with Java's defaults.

use crate::error::BrokerError;

/// Default `haSendHeartbeatInterval`: a slave reports at least this often.
pub const HA_HEARTBEAT_INTERVAL_MS_DEFAULT: u64 = 5_000;
/// Default `haHousekeepingInterval`: a link silent this long is dropped.
pub const HA_HOUSEKEEPING_INTERVAL_MS_DEFAULT: u64 = 20_000;
/// Default `haTransferBatchSize`: most bytes per HA frame.
pub const HA_TRANSFER_BATCH_BYTES_DEFAULT: usize = 32 * 1024;
/// Default `haMaxGapNotInSync` (4.x `haSlaveFallbehindMax`): a slave
/// further behind than this does not count for SYNC_MASTER.
pub const HA_MAX_GAP_NOT_IN_SYNC_BYTES_DEFAULT: i64 = 256 * 1024 * 1024;
/// Default `slaveTimeout`: longest a SYNC_MASTER send waits for slaves.
pub const SLAVE_TIMEOUT_MS_DEFAULT: u64 = 3_000;
/// Default `maxHaTransferByteInSecond` (with `haFlowControlEnable`).
pub const HA_TRANSFER_BYTES_PER_SEC_MAX_DEFAULT: u64 = 100 * 1024 * 1024;
/// Default `accessMessageInMemoryMaxRatio` (percent of physical memory).
pub const ACCESS_MESSAGE_IN_MEMORY_MAX_RATIO_DEFAULT: u8 = 40;

/// `brokerRole`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BrokerRole {
    /// Acknowledges a send once it is stored here; slaves copy it later.
    #[default]
    AsyncMaster,
    /// Acknowledges a send (with `WAIT=true`) once slaves hold it too.
    SyncMaster,
    /// Copies a master's CommitLog and serves reads; refuses sends.
    Slave,
}

impl BrokerRole {
    /// Parses `ASYNC_MASTER` / `SYNC_MASTER` / `SLAVE` (any case).
    pub fn parse(text: &str) -> Option<Self> {
        match text.trim().to_ascii_uppercase().as_str() {
            "ASYNC_MASTER" => Some(Self::AsyncMaster),
            "SYNC_MASTER" => Some(Self::SyncMaster),
            "SLAVE" => Some(Self::Slave),
            _ => None,
        }
    }

    /// RocketMQ's spelling.
    pub fn name(self) -> &'static str {
        match self {
            Self::AsyncMaster => "ASYNC_MASTER",
            Self::SyncMaster => "SYNC_MASTER",
            Self::Slave => "SLAVE",
        }
    }

    pub fn is_slave(self) -> bool {
        self == Self::Slave
    }
}

/// Replication settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplicationConfig {
    /// `brokerRole`.
    pub broker_role: BrokerRole,
    /// `haListenPort`; `None` (or a value <= 0 in a file): `listenPort + 1`.
    pub ha_listen_port: Option<u16>,
    /// `haMasterAddress` (slave): the master's HA `host:port`. Empty: learnt
    /// from the name server's REGISTER_BROKER answer.
    pub ha_master_address: String,
    /// `brokerIP2`: the host of the HA address announced to name servers
    /// (empty: `brokerIP1`'s).
    pub broker_ip2: String,
    /// `haSendHeartbeatInterval`.
    pub ha_heartbeat_interval_ms: u64,
    /// `haHousekeepingInterval`.
    pub ha_housekeeping_interval_ms: u64,
    /// `haTransferBatchSize`.
    pub ha_transfer_batch_bytes: usize,
    /// `haMaxGapNotInSync`.
    pub ha_max_gap_not_in_sync_bytes: i64,
    /// `slaveTimeout`.
    pub slave_timeout_ms: u64,
    /// `inSyncReplicas`: copies (master included) a SYNC_MASTER send waits
    /// for; at least 2 under SYNC_MASTER (one slave), as RocketMQ 4.x does.
    pub in_sync_replicas: u32,
    /// `haFlowControlEnable`.
    pub ha_flow_control_enable: bool,
    /// `maxHaTransferByteInSecond`, per slave, with flow control on.
    pub ha_transfer_bytes_per_sec_max: u64,
    /// `slaveReadEnable`: a slave answers pulls; a master suggests the
    /// slave to consumers that fall behind.
    pub slave_read_enable: bool,
    /// `accessMessageInMemoryMaxRatio`: a pull this far (percent of
    /// physical memory) behind the CommitLog's end is "slow".
    pub access_message_in_memory_max_ratio: u8,
    /// `haTlsEnable` (Ferrocket key): the HA stream over TLS.
    pub ha_tls_enable: bool,
    /// `haAuthSecret` (Ferrocket key): a slave must prove it knows this
    /// before the master sends it anything; empty: no check, as in Java.
    pub ha_auth_secret: String,
    /// `enableSlaveActingMaster`: while the set has no master, the slave
    /// with the lowest id acts as master (`services::acting_master`).
    pub enable_slave_acting_master: bool,
    /// `syncBrokerMemberGroupPeriod`: how often such a slave asks the name
    /// server for its set's members.
    pub sync_broker_member_group_period_ms: u64,
    /// `enableRemoteEscape`: an acting master sends the messages its
    /// services deliver to another set's master (else they wait).
    pub enable_remote_escape: bool,
    /// `brokerNotActiveTimeoutMillis`: with `enableSlaveActingMaster`, the
    /// expiry announced to name servers (instead of 120 s), kept alive by
    /// BROKER_HEARTBEAT every `brokerHeartbeatInterval` (one key for both
    /// modes: `ControllerModeConfig::broker_heartbeat_interval_ms`).
    pub broker_not_active_timeout_ms: u64,
}

/// Default `syncBrokerMemberGroupPeriod`.
pub const SYNC_BROKER_MEMBER_GROUP_PERIOD_MS_DEFAULT: u64 = 1_000;

impl Default for ReplicationConfig {
    fn default() -> Self {
        Self {
            broker_role: BrokerRole::AsyncMaster,
            ha_listen_port: None,
            ha_master_address: String::new(),
            broker_ip2: String::new(),
            ha_heartbeat_interval_ms: HA_HEARTBEAT_INTERVAL_MS_DEFAULT,
            ha_housekeeping_interval_ms: HA_HOUSEKEEPING_INTERVAL_MS_DEFAULT,
            ha_transfer_batch_bytes: HA_TRANSFER_BATCH_BYTES_DEFAULT,
            ha_max_gap_not_in_sync_bytes: HA_MAX_GAP_NOT_IN_SYNC_BYTES_DEFAULT,
            slave_timeout_ms: SLAVE_TIMEOUT_MS_DEFAULT,
            in_sync_replicas: 1,
            ha_flow_control_enable: false,
            ha_transfer_bytes_per_sec_max: HA_TRANSFER_BYTES_PER_SEC_MAX_DEFAULT,
            slave_read_enable: false,
            access_message_in_memory_max_ratio: ACCESS_MESSAGE_IN_MEMORY_MAX_RATIO_DEFAULT,
            ha_tls_enable: false,
            ha_auth_secret: String::new(),
            enable_slave_acting_master: false,
            sync_broker_member_group_period_ms: SYNC_BROKER_MEMBER_GROUP_PERIOD_MS_DEFAULT,
            enable_remote_escape: false,
            broker_not_active_timeout_ms: 10_000,
        }
    }
}

impl ReplicationConfig {
    /// The HA port for a broker listening on `listen_port` (0, chosen by
    /// the OS, when `listen_port` is 0 and no port is set).
    pub fn ha_port(&self, listen_port: u16) -> Result<u16, BrokerError> {
        match self.ha_listen_port {
            Some(port) => Ok(port),
            None if listen_port == 0 => Ok(0),
            None => listen_port.checked_add(1).ok_or_else(|| {
                BrokerError::Config(format!(
                    "haListenPort defaults to listenPort + 1, and listenPort is {listen_port}; set haListenPort"
                ))
            }),
        }
    }

    /// Copies a SYNC_MASTER send waits for, the master's own included.
    pub fn ack_copies(&self) -> u32 {
        match self.broker_role {
            BrokerRole::SyncMaster => self.in_sync_replicas.max(2),
            _ => 1,
        }
    }

    /// The rules RocketMQ enforces at start (`BrokerStartup`), with the
    /// reason for each refusal.
    pub fn validate(&self, broker_id: i64, listen_port: u16) -> Result<(), BrokerError> {
        let bad = |reason: String| Err(BrokerError::Config(reason));
        match self.broker_role {
            BrokerRole::Slave if broker_id <= 0 => {
                return bad(format!(
                    "brokerRole=SLAVE needs brokerId > 0 (got {broker_id}); 0 is the master's id"
                ))
            }
            BrokerRole::AsyncMaster | BrokerRole::SyncMaster if broker_id != 0 => {
                return bad(format!(
                    "brokerRole={} needs brokerId 0 (got {broker_id}); a slave sets brokerRole=SLAVE",
                    self.broker_role.name()
                ))
            }
            _ => {}
        }
        if !self.ha_master_address.trim().is_empty() {
            if self.broker_role != BrokerRole::Slave {
                return bad("haMasterAddress is for a slave; this broker is a master".into());
            }
            parse_host_port(&self.ha_master_address, "haMasterAddress")?;
        }
        let ha_port = self.ha_port(listen_port)?;
        if ha_port != 0 && ha_port == listen_port {
            return bad(format!("haListenPort {ha_port} is the broker's listenPort"));
        }
        if self.ha_heartbeat_interval_ms == 0
            || self.ha_housekeeping_interval_ms <= self.ha_heartbeat_interval_ms
        {
            return bad(format!(
                "haHousekeepingInterval ({} ms) must be longer than haSendHeartbeatInterval ({} ms), which must be positive",
                self.ha_housekeeping_interval_ms, self.ha_heartbeat_interval_ms
            ));
        }
        if !(1024..=4 * 1024 * 1024).contains(&self.ha_transfer_batch_bytes) {
            return bad(format!(
                "haTransferBatchSize {} is outside 1 KiB..=4 MiB",
                self.ha_transfer_batch_bytes
            ));
        }
        if self.slave_timeout_ms == 0 || self.in_sync_replicas == 0 {
            return bad("slaveTimeout and inSyncReplicas must be positive".into());
        }
        if self.ha_flow_control_enable && self.ha_transfer_bytes_per_sec_max == 0 {
            return bad(
                "maxHaTransferByteInSecond must be positive with haFlowControlEnable".into(),
            );
        }
        if self.access_message_in_memory_max_ratio > 100 {
            return bad("accessMessageInMemoryMaxRatio is a percentage (0..=100)".into());
        }
        Ok(())
    }
}

/// `host:port` as a socket address (a host name resolves once).
pub fn parse_host_port(text: &str, key: &str) -> Result<std::net::SocketAddr, BrokerError> {
    use std::net::ToSocketAddrs;
    text.trim()
        .to_socket_addrs()
        .ok()
        .and_then(|mut addrs| addrs.next())
        .ok_or_else(|| BrokerError::Config(format!("{key} `{text}` is not host:port")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_follow_javas_broker_id_rules() {
        let slave = ReplicationConfig {
            broker_role: BrokerRole::Slave,
            ..ReplicationConfig::default()
        };
        assert!(slave
            .validate(0, 10911)
            .unwrap_err()
            .to_string()
            .contains("brokerId > 0"));
        assert!(slave.validate(1, 10911).is_ok());
        let master = ReplicationConfig::default();
        assert!(master.validate(1, 10911).is_err());
        assert_eq!(master.ha_port(10911).unwrap(), 10912);
        assert_eq!(
            BrokerRole::parse("sync_master"),
            Some(BrokerRole::SyncMaster)
        );
        assert_eq!(BrokerRole::parse("SLAVE"), Some(BrokerRole::Slave));
        assert_eq!(BrokerRole::parse("x"), None);
        let sync = ReplicationConfig {
            broker_role: BrokerRole::SyncMaster,
            ..ReplicationConfig::default()
        };
        assert_eq!(sync.ack_copies(), 2);
        assert_eq!(master.ack_copies(), 1);
    }
}
