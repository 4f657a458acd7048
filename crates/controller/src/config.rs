//! Controller settings, with RocketMQ's key names (`ControllerConfig`);
//! each key is declared in the `keys` module.

use std::path::PathBuf;

/// Java's standalone controller port (`ControllerStartup`).
pub const LISTEN_PORT_DEFAULT: u16 = 19876;
/// How often silent brokers are looked for (`scanNotActiveBrokerInterval`).
pub const SCAN_NOT_ACTIVE_BROKER_INTERVAL_MS_DEFAULT: u64 = 5_000;
/// How often the leader looks for sets with a dead master
/// (`scanInactiveMasterInterval`).
pub const SCAN_INACTIVE_MASTER_INTERVAL_MS_DEFAULT: u64 = 5_000;
/// Raft election timeout (`jRaftElectionTimeoutMs`).
pub const ELECTION_TIMEOUT_MS_DEFAULT: u64 = 1_000;
/// Default `controllerSnapshotLogs`.
pub const SNAPSHOT_LOGS_DEFAULT: u64 = 1_000;
/// Controllers in one group at most.
pub const PEERS_MAX: usize = 9;

/// One controller of the group: its id (`n0`) and Remoting address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Peer {
    pub id: String,
    pub addr: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControllerConfig {
    /// `controllerDLegerGroup`.
    pub group: String,
    /// `controllerDLegerPeers`: `n0-host:port;n1-host:port;...`. Each
    /// controller serves brokers and its peers on its own address there.
    pub peers: Vec<Peer>,
    /// `controllerDLegerSelfId`.
    pub self_id: String,
    /// `controllerStorePath`: the Raft log, vote and snapshot.
    pub store_path: PathBuf,
    pub scan_not_active_broker_interval_ms: u64,
    pub scan_inactive_master_interval_ms: u64,
    /// `enableElectUncleanMaster`: elect outside the in-sync set when no
    /// in-sync replica lives (may lose acknowledged messages).
    pub enable_elect_unclean_master: bool,
    /// `notifyBrokerRoleChanged`: push NOTIFY_BROKER_ROLE_CHANGED to the
    /// brokers of a set after an election.
    pub notify_broker_role_changed: bool,
    /// `electMasterMaxRetryCount`.
    pub elect_master_max_retry_count: u32,
    /// `jRaftElectionTimeoutMs` (also `controllerElectionTimeoutMs`).
    pub election_timeout_ms: u64,
    /// `controllerSnapshotLogs` (Ferrocket's): a snapshot after this many
    /// log entries; the log up to a tenth of it before the snapshot is kept,
    /// the rest purged.
    pub snapshot_logs: u64,
    /// `aclEnable`, `aclAdminSignatureWindowMs`, `rocketmqHome`: every
    /// request needs a white-listed address or an admin account's
    /// signature (module `auth`), as the name server's writes do.
    pub acl: ferrocket_acl::AdminAclSettings,
    /// `innerClientAuthenticationCredentials` (`{"accessKey": ..,
    /// "secretKey": ..}`): what this controller signs its own requests with
    /// (Raft to its peers, role notices to brokers).
    pub inner_credentials: Option<(String, String)>,
    /// `tls.*`: TLS on the controller's port, and for its calls out when
    /// `tls.enable` (or an enforcing mode) says so.
    pub tls: ferrocket_tls::TlsSettings,
}

impl Default for ControllerConfig {
    fn default() -> Self {
        let home = std::env::var_os("HOME").map_or_else(|| PathBuf::from("."), PathBuf::from);
        Self {
            group: "DefaultControllerGroup".into(),
            peers: vec![Peer {
                id: "n0".into(),
                addr: format!("127.0.0.1:{LISTEN_PORT_DEFAULT}"),
            }],
            self_id: "n0".into(),
            store_path: home.join("DLedgerController"),
            scan_not_active_broker_interval_ms: SCAN_NOT_ACTIVE_BROKER_INTERVAL_MS_DEFAULT,
            scan_inactive_master_interval_ms: SCAN_INACTIVE_MASTER_INTERVAL_MS_DEFAULT,
            enable_elect_unclean_master: false,
            notify_broker_role_changed: true,
            elect_master_max_retry_count: 3,
            election_timeout_ms: ELECTION_TIMEOUT_MS_DEFAULT,
            snapshot_logs: SNAPSHOT_LOGS_DEFAULT,
            acl: Default::default(),
            inner_credentials: None,
            tls: Default::default(),
        }
    }
}

/// A setting that cannot work.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error("controllerDLegerPeers: `{0}` is not `id-host:port`")]
    Peer(String),
    #[error("controllerDLegerPeers: no peers")]
    NoPeers,
    #[error("controllerDLegerPeers: more than {PEERS_MAX} peers")]
    TooManyPeers,
    #[error("controllerDLegerPeers: id `{0}` appears twice")]
    DuplicatePeer(String),
    #[error("controllerDLegerSelfId `{0}` is not among controllerDLegerPeers")]
    SelfNotAPeer(String),
    #[error("{0} must be above zero")]
    Zero(&'static str),
    /// The ACL files or TLS settings cannot be used.
    #[error("{0}")]
    Security(String),
}

/// Parses `n0-127.0.0.1:9877;n1-127.0.0.1:9878`.
pub fn parse_peers(text: &str) -> Result<Vec<Peer>, ConfigError> {
    let mut peers: Vec<Peer> = Vec::new();
    for part in text.split(';').map(str::trim).filter(|p| !p.is_empty()) {
        let (id, addr) = part
            .split_once('-')
            .filter(|(id, addr)| !id.is_empty() && addr.contains(':'))
            .ok_or_else(|| ConfigError::Peer(part.to_string()))?;
        if peers.iter().any(|p| p.id == id) {
            return Err(ConfigError::DuplicatePeer(id.to_string()));
        }
        peers.push(Peer {
            id: id.to_string(),
            addr: addr.to_string(),
        });
    }
    Ok(peers)
}

/// `n0-addr;n1-addr`: the peer list as Java writes it.
pub fn peers_text(peers: &[Peer]) -> String {
    let parts: Vec<String> = peers
        .iter()
        .map(|p| format!("{}-{}", p.id, p.addr))
        .collect();
    parts.join(";")
}

impl ControllerConfig {
    /// Checks the settings; returns this controller's index in the peers.
    pub fn validate(&self) -> Result<usize, ConfigError> {
        if self.peers.is_empty() {
            return Err(ConfigError::NoPeers);
        }
        if self.peers.len() > PEERS_MAX {
            return Err(ConfigError::TooManyPeers);
        }
        for (value, key) in [
            (
                self.scan_not_active_broker_interval_ms,
                "scanNotActiveBrokerInterval",
            ),
            (
                self.scan_inactive_master_interval_ms,
                "scanInactiveMasterInterval",
            ),
            (self.election_timeout_ms, "jRaftElectionTimeoutMs"),
            (self.snapshot_logs, "controllerSnapshotLogs"),
        ] {
            if value == 0 {
                return Err(ConfigError::Zero(key));
            }
        }
        self.peers
            .iter()
            .position(|p| p.id == self.self_id)
            .ok_or_else(|| ConfigError::SelfNotAPeer(self.self_id.clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peers_parse_like_dledger_and_self_must_be_one() {
        let peers = parse_peers("n0-127.0.0.1:9877; n1-127.0.0.1:9878;").unwrap();
        assert_eq!(peers.len(), 2);
        assert_eq!(peers[1].addr, "127.0.0.1:9878");
        assert_eq!(peers_text(&peers), "n0-127.0.0.1:9877;n1-127.0.0.1:9878");
        assert!(matches!(parse_peers("n0:9877"), Err(ConfigError::Peer(_))));
        assert!(matches!(
            parse_peers("n0-a:1;n0-b:2"),
            Err(ConfigError::DuplicatePeer(_))
        ));

        let mut config = ControllerConfig::default();
        assert!(config
            .apply(
                "controllerDLegerPeers",
                "n0-127.0.0.1:1;n1-127.0.0.1:2",
                "test"
            )
            .unwrap());
        assert!(config
            .apply("controllerDLegerSelfId", "n1", "test")
            .unwrap());
        assert_eq!(config.validate(), Ok(1));
        assert!(config
            .apply("controllerDLegerSelfId", "n7", "test")
            .unwrap());
        assert!(config.validate().is_err());
        assert!(!config.apply("listenPort", "1", "test").unwrap());
        assert!(config
            .apply("enableElectUncleanMaster", "maybe", "test")
            .is_err());
    }

    #[test]
    fn security_keys_are_the_name_servers() {
        let mut config = ControllerConfig::default();
        assert!(config.apply("aclEnable", "true", "test").unwrap());
        assert!(config
            .apply("rocketmqHome", "/opt/rocketmq", "test")
            .unwrap());
        assert_eq!(
            config.acl.rocketmq_home(),
            Some(PathBuf::from("/opt/rocketmq"))
        );
        let inner = r#"{"accessKey":"ak","secretKey":"sk"}"#;
        assert!(config
            .apply("innerClientAuthenticationCredentials", inner, "test")
            .unwrap());
        assert_eq!(config.inner_credentials, Some(("ak".into(), "sk".into())));
        let refused = config
            .apply(
                "innerClientAuthenticationCredentials",
                r#"{"accessKey":"ak","secretKey":"hidden"#,
                "test",
            )
            .unwrap_err();
        assert!(
            !refused.contains("hidden"),
            "the secret is not repeated: {refused}"
        );
        assert!(config
            .apply("tls.server.mode", "enforcing", "test")
            .unwrap());
        assert_eq!(config.tls.mode, ferrocket_tls::TlsMode::Enforcing);
        assert!(config.apply("tls.server.mode", "enforce", "test").is_err());
        assert!(!config.apply("tls.noSuchKey", "1", "test").unwrap());
    }
}
