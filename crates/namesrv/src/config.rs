//! Name server settings. The CLI fills them from a properties file and flags.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};

use ferrocket_runtime::server::ServerLimits;

/// RocketMQ's name server port.
pub const LISTEN_PORT_DEFAULT: u16 = 9876;
/// A broker silent this long is dropped (RocketMQ `DEFAULT_BROKER_CHANNEL_EXPIRED_TIME`).
pub const BROKER_EXPIRY_MS_DEFAULT: u64 = 120_000;
/// How often silent brokers are looked for (`scanNotActiveBrokerInterval`).
pub const SCAN_INTERVAL_MS_DEFAULT: u64 = 5_000;
/// How often `run` checks its stop flag.
pub const STOP_POLL_INTERVAL_MS_DEFAULT: u64 = 100;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamesrvConfig {
    pub listen_addr: IpAddr,
    /// 0 picks a free port (tests).
    pub listen_port: u16,
    /// Default expiry of a broker that sends no `heartbeatTimeoutMillis`.
    pub broker_expiry_ms: u64,
    pub scan_interval_ms: u64,
    /// Unregister a broker when the connection it registered over closes,
    /// as RocketMQ does (`BrokerHousekeepingService`).
    pub unregister_on_disconnect: bool,
    /// Drop a broker's topics missing from its registration
    /// (`deleteTopicWithBrokerRegistration`, off in RocketMQ too).
    pub delete_topic_with_broker_registration: bool,
    /// `supportActingMaster` and `notifyMinBrokerIdChanged` (slave acting
    /// master; both off as in RocketMQ).
    pub acting: crate::route::ActingSettings,
    pub stop_poll_interval_ms: u64,
    pub limits: ServerLimits,
    /// Where the KV config is persisted (`kvConfigPath`); `None` keeps it
    /// in memory only. The CLI defaults it to [`kv_config_path_under`] the
    /// home directory, as RocketMQ does.
    pub kv_config_path: Option<PathBuf>,
    /// `kvConfigEntriesMax` and `kvConfigBytesMax` (Ferrocket's own).
    pub kv_limits: crate::kv::KvLimits,
    /// `aclEnable`, `aclAdminSignatureWindowMs`, `rocketmqHome`: write
    /// requests need an admin account (`crate::acl`).
    pub acl: ferrocket_acl::AdminAclSettings,
    /// The Prometheus endpoint (`metricsExporterType=PROM` and the broker's
    /// other `metrics*` keys; default port 5558).
    pub metrics: ferrocket_metrics::config::MetricsConfig,
    /// `tls.*`: TLS on the name server's port (Java's `tls.server.mode`).
    pub tls: ferrocket_tls::TlsSettings,
}

impl Default for NamesrvConfig {
    fn default() -> Self {
        Self {
            listen_addr: IpAddr::V4(Ipv4Addr::LOCALHOST),
            listen_port: LISTEN_PORT_DEFAULT,
            broker_expiry_ms: BROKER_EXPIRY_MS_DEFAULT,
            scan_interval_ms: SCAN_INTERVAL_MS_DEFAULT,
            unregister_on_disconnect: true,
            delete_topic_with_broker_registration: false,
            acting: Default::default(),
            stop_poll_interval_ms: STOP_POLL_INTERVAL_MS_DEFAULT,
            limits: ServerLimits::default(),
            kv_config_path: None,
            kv_limits: crate::kv::KvLimits::default(),
            acl: Default::default(),
            metrics: Default::default(),
            tls: Default::default(),
        }
    }
}

impl NamesrvConfig {
    pub fn listen_socket_addr(&self) -> SocketAddr {
        SocketAddr::new(self.listen_addr, self.listen_port)
    }
}

/// RocketMQ's KV config location under a home or data directory:
/// `DIR/namesrv/kvConfig.json`.
pub fn kv_config_path_under(dir: &Path) -> PathBuf {
    dir.join("namesrv").join("kvConfig.json")
}
