//! Broker configuration. Field docs give the RocketMQ property name
//! (`BrokerConfig` / `MessageStoreConfig`) that the CLI maps onto each.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;

use ferrocket_protocol::limits::MESSAGE_BODY_BYTES_MAX_DEFAULT;
use ferrocket_runtime::server::ServerLimits;
use ferrocket_runtime::shard::ShardsConfig;
use ferrocket_store::{retention, FlushMode, RetentionConfig, StoreConfig, WriteMode};

use crate::error::BrokerError;

mod auth;
mod controller_mode;
pub mod keys;
mod modes;
mod online;
mod replication;
mod store_paths;
pub mod tier;

pub use auth::{AuthConfig, Whitelist};
pub use controller_mode::*;
pub use ferrocket_metrics::config::{MetricsConfig, MetricsExporter, METRICS_PROM_PORT_DEFAULT};
pub use modes::{CommitLogWriteMode, FlushDiskType, ProxyMode};
pub use online::*;
pub use replication::*;

/// Default broker port (`listenPort`).
pub const LISTEN_PORT_DEFAULT: u16 = 10911;
/// Default cluster (`brokerClusterName`).
pub const CLUSTER_NAME_DEFAULT: &str = "DefaultCluster";
/// Default broker name (`brokerName`; Java uses the host name).
pub const BROKER_NAME_DEFAULT: &str = "broker-a";
/// Default queues of an auto-created topic (`defaultTopicQueueNums`).
pub const DEFAULT_TOPIC_QUEUE_NUMS: i32 = 8;
/// Default interval between registrations with the name servers
/// (`registerNameServerPeriod`).
pub const REGISTER_INTERVAL_MS_DEFAULT: u64 = 30_000;
/// Default wait for one name server call.
pub const REGISTER_TIMEOUT_MS_DEFAULT: u64 = 6_000;
/// Default consumer offset persistence interval (`flushConsumerOffsetInterval`).
pub const OFFSET_PERSIST_INTERVAL_MS_DEFAULT: u64 = 5_000;
/// Longest a pull may be held (the client asks for 15 s by default; a larger
/// request is capped here).
pub const SUSPEND_TIMEOUT_MS_MAX_DEFAULT: u64 = 30_000;
/// Most held pulls per shard; more are answered at once with PULL_NOT_FOUND.
pub const LONG_POLL_WAITERS_MAX_DEFAULT: usize = 100_000;
/// Default `topicCountMax`: most topics a broker holds (system, retry
/// and DLQ topics included); creating one more is refused.
pub const TOPIC_COUNT_MAX_DEFAULT: usize = 200_000;
/// Default `subscriptionGroupCountMax`: most subscription groups, and most
/// producer or consumer groups with live clients.
pub const SUBSCRIPTION_GROUP_COUNT_MAX_DEFAULT: usize = 100_000;
/// Default `clientsPerGroupMax`: most live clients of one group.
pub const CLIENTS_PER_GROUP_MAX_DEFAULT: usize = 10_000;
/// Largest config of one topic or subscription group a client may set (a
/// group's JSON body, a topic's attributes string).
pub const CONFIG_ENTRY_BYTES_MAX: usize = 64 * 1024;
/// Most messages in one pull answer (`maxTransferCountOnMessageInMemory`).
pub const PULL_MESSAGES_MAX_DEFAULT: usize = 32;
/// Most bytes in one pull answer (`maxTransferBytesOnMessageInMemory`).
pub const PULL_BYTES_MAX_DEFAULT: usize = 256 * 1024;
/// A client silent this long is dropped (`channelExpiredTimeout`).
pub const CLIENT_EXPIRY_MS_DEFAULT: u64 = 120_000;
/// RocketMQ's 18 delay levels (`messageDelayLevel`).
pub const MESSAGE_DELAY_LEVEL_DEFAULT: &str =
    "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h";
/// Default longest timer delay (`timerMaxDelaySec`): 3 days.
pub const TIMER_MAX_DELAY_SEC_DEFAULT: u64 = 3 * 24 * 3600;
/// Largest `timerMaxDelaySec` (the timer wheel spans twice it: 60 days).
pub const TIMER_MAX_DELAY_SEC_MAX: u64 = 30 * 24 * 3600;
/// Default age before a half message is checked (`transactionTimeOut`).
pub const TRANSACTION_TIMEOUT_MS_DEFAULT: u64 = 6_000;
/// Default check period (`transactionCheckInterval`).
pub const TRANSACTION_CHECK_INTERVAL_MS_DEFAULT: u64 = 30_000;
/// Default checks before a rollback (`transactionCheckMax`).
pub const TRANSACTION_CHECK_MAX_DEFAULT: u32 = 15;

/// Everything a broker is started with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerConfig {
    /// Address to listen on (the CLI's `--listen-addr`).
    pub listen_addr: IpAddr,
    /// `listenPort`. 0 picks a free port (tests).
    pub listen_port: u16,
    /// `fastListenPortEnable`: also serve on `listenPort - 2`, the Java
    /// broker's "fast" (VIP channel) port, which a Java slave asks for its
    /// master's topics and timer state and clients with `vipChannelEnabled`
    /// use. Off by default (Java always listens there).
    pub fast_listen_port_enable: bool,
    /// `namesrvAddr`: name servers as `host:port;host:port` (empty: none).
    pub namesrv_addr: String,
    /// `brokerClusterName`.
    pub broker_cluster_name: String,
    /// `brokerName`.
    pub broker_name: String,
    /// `brokerId`: 0 is the master.
    pub broker_id: i64,
    /// `brokerIP1`: the address clients are told to use. Empty: the listen
    /// address, or 127.0.0.1 when listening on every interface.
    pub broker_ip1: String,
    /// `storePathRootDir`.
    pub store_path_root_dir: PathBuf,
    /// `storePathCommitLog` as given: the CommitLog is always
    /// `{storePathRootDir}/commitlog`, so any other path is refused (a Java
    /// broker.conf pointing elsewhere must not open an empty CommitLog).
    pub store_path_commit_log: Option<PathBuf>,
    /// `storePathConsumeQueue` as given: likewise `{storePathRootDir}/consumequeue`.
    pub store_path_consume_queue: Option<PathBuf>,
    /// `flushDiskType`.
    pub flush_disk_type: FlushDiskType,
    /// `flushIntervalCommitLog`, for async flush.
    pub flush_interval_commit_log_ms: u64,
    /// `syncFlushTimeout`, for sync flush.
    pub sync_flush_timeout_ms: u64,
    /// CommitLog write mode (Ferrocket's own).
    pub write_mode: CommitLogWriteMode,
    /// `autoCreateTopicEnable`.
    pub auto_create_topic_enable: bool,
    /// `clusterTopicEnable`: the cluster name topic takes sends and pulls.
    pub cluster_topic_enable: bool,
    /// `brokerTopicEnable`: the broker name topic takes sends and pulls.
    pub broker_topic_enable: bool,
    /// `defaultTopicQueueNums`.
    pub default_topic_queue_nums: i32,
    /// `mappedFileSizeCommitLog`.
    pub mapped_file_size_commit_log: u64,
    /// `maxMessageSize`: largest message body (for a batch, the whole body).
    pub max_message_size: usize,
    /// `registerBrokerIntervalMs` (`registerNameServerPeriod`).
    pub register_broker_interval_ms: u64,
    /// Wait for one name server call (`registerBrokerTimeoutMills`).
    pub register_broker_timeout_ms: u64,
    /// `flushConsumerOffsetInterval`.
    pub offset_persist_interval_ms: u64,
    /// Shards (executors); 0 means one per core of `shard_cores`, or with
    /// no `shard_cores` the host's default (one shard on 1-2 cores, else
    /// one per core but the first; `host_shard_cores`).
    pub shard_count: usize,
    /// Cores the shards run on; empty means every online core.
    pub shard_cores: Vec<usize>,
    /// Pin each shard's thread to its core.
    pub pin_shards: bool,
    /// `appenderCore`: pin the CommitLog appender thread to this core;
    /// `None` leaves it to the kernel's scheduler.
    pub appender_core: Option<usize>,
    /// `appenderInShard`: with one shard, run the CommitLog appender on the
    /// shard's own executor instead of a thread of its own. `None` (auto):
    /// yes when there is one shard and no `appenderCore`.
    pub appender_in_shard: Option<bool>,
    /// `longPollingEnable`: hold pulls with the suspend flag.
    pub long_polling_enable: bool,
    /// Cap on a pull's `suspendTimeoutMillis`.
    pub suspend_timeout_ms_max: u64,
    /// Most held pulls per shard.
    pub long_poll_waiters_max: usize,
    /// `maxTransferCountOnMessageInMemory`.
    pub pull_messages_max: usize,
    /// `maxTransferBytesOnMessageInMemory`.
    pub pull_bytes_max: usize,
    /// `channelExpiredTimeout`: clients without a heartbeat this long are dropped.
    pub client_expiry_ms: u64,
    /// `regionId`, returned in send responses (`MSG_REGION`).
    pub region_id: String,
    /// `traceOn`, returned in send responses (`TRACE_ON`).
    pub trace_on: bool,
    /// `aclEnable`: check every request against ACL 1.0's accounts
    /// (`{rocketmqHome}/conf/plain_acl.yml` and `conf/acl/*.yml`).
    pub acl_enable: bool,
    /// `aclAdminSignatureWindowMs` (Ferrocket's; 0, the default, is off):
    /// a request signed by an admin account must carry a stamp of its own
    /// code and a time this close to the broker's clock
    /// (`ferrocket_acl::stamp`).
    pub acl_admin_signature_window_ms: u64,
    /// `rocketmqHome`: where `conf/` is; unset: `$ROCKETMQ_HOME`.
    pub rocketmq_home: Option<PathBuf>,
    /// `innerClientAuthenticationCredentials` (`{"accessKey": ..,
    /// "secretKey": ..}`): what the broker signs its own requests with —
    /// registrations with ACL-protected name servers, a slave's calls to
    /// its master.
    pub inner_credentials: Option<(String, String)>,
    /// ACL 2.0: users and ACLs (`authenticationEnabled`, ...).
    pub auth: AuthConfig,
    /// `messageDelayLevel`: the delay of each level, "1s 5s ... 2h".
    pub message_delay_level: String,
    /// `enablePropertyFilter`: evaluate SQL92 subscriptions on pulls.
    pub enable_property_filter: bool,
    /// `autoCreateSubscriptionGroup`: create unknown groups on first use.
    pub auto_create_subscription_group: bool,
    /// `timerMaxDelaySec`: longest delay a timer message may ask for.
    pub timer_max_delay_sec: u64,
    /// `recallMessageEnable`: take RECALL_MESSAGE (off by default, as Java).
    pub recall_message_enable: bool,
    /// `transactionTimeOut`: a half message younger than this is not checked.
    pub transaction_timeout_ms: u64,
    /// `transactionCheckInterval`: how often half messages are checked.
    pub transaction_check_interval_ms: u64,
    /// `transactionCheckMax`: checks before a half message is rolled back.
    pub transaction_check_max: u32,
    /// `fileReservedTime` (hours, kept here in ms; Ferrocket's
    /// `fileReservedTimeMs` sets ms directly): age after which a CommitLog
    /// segment may be deleted.
    pub file_reserved_time_ms: u64,
    /// `deleteWhen`: local hours of the day when expired segments go.
    pub delete_when: Vec<u8>,
    /// `diskMaxUsedSpaceRatio` (percent): above it, expired segments go at
    /// any hour.
    pub disk_max_used_space_ratio: u8,
    /// Above this disk usage (percent) the oldest segments go even when not
    /// expired (RocketMQ's `diskSpaceCleanForciblyRatio` property, 0.85).
    pub disk_space_clean_forcibly_ratio: u8,
    /// `diskSpaceWarningLevelRatio` (percent; Java's 0.90 form is accepted
    /// too): at this disk usage the broker stops taking writes, answers
    /// sends SERVICE_NOT_AVAILABLE "disk full" and registers read-only,
    /// until usage is below it again.
    pub disk_space_warning_level_ratio: u8,
    /// `cleanFileForciblyEnable`.
    pub clean_file_forcibly_enable: bool,
    /// Compaction topics: `enableCompaction`, `compactionScheduleInternal`,
    /// `maxOffsetMapSize`.
    pub compaction: crate::services::compaction::CompactionConfig,
    /// `cleanResourceInterval`: how often retention runs.
    pub clean_resource_interval_ms: u64,
    /// `topicCountMax` (Ferrocket's own).
    pub topic_count_max: usize,
    /// `subscriptionGroupCountMax` (Ferrocket's own).
    pub subscription_group_count_max: usize,
    /// `clientsPerGroupMax` (Ferrocket's own).
    pub clients_per_group_max: usize,
    /// Per-connection and per-shard limits of the Remoting server
    /// (`serverChannelMaxIdleTimeSeconds` and Ferrocket's own keys).
    pub server_limits: ServerLimits,
    /// `brokerRole` and the HA settings.
    pub replication: ReplicationConfig,
    /// `enableControllerMode` and its keys: role and id from a controller.
    pub controller_mode: ControllerModeConfig,
    /// Tiered storage to object storage (`tieredStorageLevel` and its keys).
    pub tier: tier::TierKeys,
    /// The Prometheus endpoint (`metricsExporterType=PROM` and its keys).
    pub metrics: MetricsConfig,
    /// `brokerPermission`: 6 reads and writes; without the write bit (2)
    /// the broker registers its topics read-only, so producers go
    /// elsewhere; without the read bit (4) it refuses pulls and pops.
    pub broker_permission: i32,
    /// `enableProxy`: serve RocketMQ 5 (gRPC) clients on the broker's own
    /// port too, through an in-process proxy (see the README).
    pub enable_proxy: bool,
    /// `proxyMode`: how the in-broker gRPC endpoint reaches this broker:
    /// `local` (in process, through the runner's `LocalPort`) or `cluster` (Remoting
    /// through the name server, as `ferrocket proxy` does).
    pub proxy_mode: ProxyMode,
    /// `tls.*`: TLS on the broker's port (Java's `tls.server.mode` and
    /// friends, JVM system properties there).
    pub tls: ferrocket_tls::TlsSettings,
    /// `useTLS`: register with the name servers over TLS (unset: as
    /// `tls.enable`, else when `tls.server.mode=enforcing`).
    pub use_tls: Option<bool>,
}

impl Default for BrokerConfig {
    fn default() -> Self {
        let home = std::env::var_os("HOME").map_or_else(|| PathBuf::from("."), PathBuf::from);
        Self {
            listen_addr: IpAddr::V4(Ipv4Addr::LOCALHOST),
            listen_port: LISTEN_PORT_DEFAULT,
            fast_listen_port_enable: false,
            namesrv_addr: String::new(),
            broker_cluster_name: CLUSTER_NAME_DEFAULT.into(),
            broker_name: BROKER_NAME_DEFAULT.into(),
            broker_id: 0,
            broker_ip1: String::new(),
            store_path_root_dir: home.join("store"),
            store_path_commit_log: None,
            store_path_consume_queue: None,
            flush_disk_type: FlushDiskType::AsyncFlush,
            flush_interval_commit_log_ms: ferrocket_store::FLUSH_INTERVAL_MS_DEFAULT,
            sync_flush_timeout_ms: ferrocket_store::SYNC_FLUSH_TIMEOUT_MS_DEFAULT,
            write_mode: CommitLogWriteMode::Buffered,
            auto_create_topic_enable: true,
            cluster_topic_enable: true,
            broker_topic_enable: true,
            default_topic_queue_nums: DEFAULT_TOPIC_QUEUE_NUMS,
            mapped_file_size_commit_log: ferrocket_store::SEGMENT_BYTES_DEFAULT,
            max_message_size: MESSAGE_BODY_BYTES_MAX_DEFAULT,
            register_broker_interval_ms: REGISTER_INTERVAL_MS_DEFAULT,
            register_broker_timeout_ms: REGISTER_TIMEOUT_MS_DEFAULT,
            offset_persist_interval_ms: OFFSET_PERSIST_INTERVAL_MS_DEFAULT,
            shard_count: 0,
            shard_cores: Vec::new(),
            pin_shards: true,
            appender_core: None,
            appender_in_shard: None,
            long_polling_enable: true,
            suspend_timeout_ms_max: SUSPEND_TIMEOUT_MS_MAX_DEFAULT,
            long_poll_waiters_max: LONG_POLL_WAITERS_MAX_DEFAULT,
            pull_messages_max: PULL_MESSAGES_MAX_DEFAULT,
            pull_bytes_max: PULL_BYTES_MAX_DEFAULT,
            client_expiry_ms: CLIENT_EXPIRY_MS_DEFAULT,
            region_id: "DefaultRegion".into(),
            trace_on: true,
            acl_enable: false,
            acl_admin_signature_window_ms: 0,
            rocketmq_home: None,
            inner_credentials: None,
            auth: AuthConfig::default(),
            message_delay_level: MESSAGE_DELAY_LEVEL_DEFAULT.into(),
            enable_property_filter: false,
            auto_create_subscription_group: true,
            timer_max_delay_sec: TIMER_MAX_DELAY_SEC_DEFAULT,
            recall_message_enable: false,
            transaction_timeout_ms: TRANSACTION_TIMEOUT_MS_DEFAULT,
            transaction_check_interval_ms: TRANSACTION_CHECK_INTERVAL_MS_DEFAULT,
            transaction_check_max: TRANSACTION_CHECK_MAX_DEFAULT,
            file_reserved_time_ms: retention::FILE_RESERVED_HOURS_DEFAULT * 3_600_000,
            delete_when: vec![4],
            disk_max_used_space_ratio: retention::DISK_MAX_USED_PERCENT_DEFAULT,
            disk_space_clean_forcibly_ratio: retention::DISK_CLEAN_FORCIBLY_PERCENT_DEFAULT,
            disk_space_warning_level_ratio: ferrocket_store::DISK_WARNING_LEVEL_PERCENT_DEFAULT,
            clean_file_forcibly_enable: true,
            compaction: Default::default(),
            clean_resource_interval_ms: retention::CLEAN_INTERVAL_MS_DEFAULT,
            topic_count_max: TOPIC_COUNT_MAX_DEFAULT,
            subscription_group_count_max: SUBSCRIPTION_GROUP_COUNT_MAX_DEFAULT,
            clients_per_group_max: CLIENTS_PER_GROUP_MAX_DEFAULT,
            server_limits: ServerLimits::default(),
            replication: ReplicationConfig::default(),
            controller_mode: ControllerModeConfig::default(),
            tier: tier::TierKeys::default(),
            metrics: MetricsConfig::default(),
            broker_permission: ferrocket_protocol::body::perm::READ_WRITE,
            enable_proxy: false,
            proxy_mode: ProxyMode::Local,
            tls: ferrocket_tls::TlsSettings::default(),
            use_tls: None,
        }
    }
}

impl BrokerConfig {
    /// The name servers, parsed from `namesrv_addr` (`;` or `,` separated).
    pub fn namesrv_addrs(&self) -> Result<Vec<SocketAddr>, BrokerError> {
        self.namesrv_addr
            .split([';', ','])
            .map(str::trim)
            .filter(|part| !part.is_empty())
            .map(|part| {
                use std::net::ToSocketAddrs;
                part.to_socket_addrs()
                    .ok()
                    .and_then(|mut addrs| addrs.next())
                    .ok_or_else(|| {
                        BrokerError::Config(format!("namesrvAddr entry `{part}` is not host:port"))
                    })
            })
            .collect()
    }

    /// The IP clients are told to use (`brokerIP1`).
    pub fn advertised_ip(&self) -> Result<IpAddr, BrokerError> {
        if self.broker_ip1.trim().is_empty() {
            return Ok(if self.listen_addr.is_unspecified() {
                IpAddr::V4(Ipv4Addr::LOCALHOST)
            } else {
                self.listen_addr
            });
        }
        self.broker_ip1.trim().parse().map_err(|_| {
            BrokerError::Config(format!(
                "brokerIP1 `{}` is not an IP address",
                self.broker_ip1
            ))
        })
    }

    /// The host of the HA address announced to name servers (`brokerIP2`,
    /// else `brokerIP1`'s).
    pub fn ha_ip(&self) -> Result<IpAddr, BrokerError> {
        let ip2 = self.replication.broker_ip2.trim();
        if ip2.is_empty() {
            return self.advertised_ip();
        }
        ip2.parse()
            .map_err(|_| BrokerError::Config(format!("brokerIP2 `{ip2}` is not an IP address")))
    }

    /// The RocketMQ home (`rocketmqHome`, else `$ROCKETMQ_HOME`), if any.
    pub fn rocketmq_home(&self) -> Option<PathBuf> {
        self.rocketmq_home.clone().or_else(|| {
            std::env::var_os("ROCKETMQ_HOME")
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        })
    }

    /// Whether a broker of `shard_count` shards runs its appender on its
    /// shard (see `appender_in_shard`).
    pub fn appender_runs_in_shard(&self, shard_count: usize) -> bool {
        self.appender_in_shard
            .unwrap_or(shard_count == 1 && self.appender_core.is_none())
    }

    /// Rejects values the broker cannot run with.
    pub fn validate(&self) -> Result<(), BrokerError> {
        let bad = |reason: String| Err(BrokerError::Config(reason));
        self.controller_mode
            .validate()
            .map_err(BrokerError::Config)?;
        store_paths::check(self).map_err(BrokerError::Config)?;
        self.tier.store_config().map_err(BrokerError::Config)?;
        self.metrics.validate().map_err(BrokerError::Config)?;
        if self.broker_name.trim().is_empty() {
            return bad("brokerName is empty".into());
        }
        if self.broker_cluster_name.trim().is_empty() {
            return bad("brokerClusterName is empty".into());
        }
        if !(1..=1024).contains(&self.default_topic_queue_nums) {
            return bad(format!(
                "defaultTopicQueueNums {} is outside 1..=1024",
                self.default_topic_queue_nums
            ));
        }
        if self.appender_in_shard == Some(true) && self.appender_core.is_some() {
            return bad(
                "appenderInShard runs the appender on the shard's core; unset appenderCore".into(),
            );
        }
        if let Some(core) = self.appender_core {
            let online = ferrocket_runtime::shard::online_cores();
            if !online.contains(&core) {
                return bad(format!(
                    "appenderCore {core} is not an online core (online: {online:?})"
                ));
            }
        }
        if self.max_message_size == 0 {
            return bad("maxMessageSize must be positive".into());
        }
        if !(0..=7).contains(&self.broker_permission) {
            return bad(format!(
                "brokerPermission {} is outside 0..=7 (4 read, 2 write, 6 both)",
                self.broker_permission
            ));
        }
        if self.register_broker_interval_ms == 0 || self.offset_persist_interval_ms == 0 {
            return bad("registration and offset persistence intervals must be positive".into());
        }
        if self.pull_messages_max == 0 || self.pull_bytes_max == 0 {
            return bad("pull limits must be positive".into());
        }
        if self.timer_max_delay_sec == 0 || self.timer_max_delay_sec > TIMER_MAX_DELAY_SEC_MAX {
            return bad(format!(
                "timerMaxDelaySec {} is outside 1..={TIMER_MAX_DELAY_SEC_MAX}",
                self.timer_max_delay_sec
            ));
        }
        if self.transaction_check_interval_ms == 0 {
            return bad("transactionCheckInterval must be positive".into());
        }
        self.store_config()
            .validate()
            .map_err(|e| BrokerError::Config(e.to_string()))?;
        self.namesrv_addrs()?;
        self.advertised_ip()?;
        self.ha_ip()?;
        self.replication
            .validate(self.broker_id, self.listen_port)?;
        Ok(())
    }

    /// Parses a `deleteWhen` value ("04", "01;13") into hours of the day.
    pub fn parse_delete_when(text: &str) -> Result<Vec<u8>, String> {
        ferrocket_store::parse_delete_when(text)
    }

    /// The store's configuration.
    pub fn store_config(&self) -> StoreConfig {
        let mut store = StoreConfig::new(&self.store_path_root_dir);
        store.segment_bytes = self.mapped_file_size_commit_log;
        store.write_mode = match self.write_mode {
            CommitLogWriteMode::Buffered => WriteMode::Buffered,
            CommitLogWriteMode::Direct => WriteMode::Direct,
        };
        store.flush_mode = match self.flush_disk_type {
            FlushDiskType::AsyncFlush => FlushMode::Async {
                interval_ms: self.flush_interval_commit_log_ms,
            },
            FlushDiskType::SyncFlush => FlushMode::Sync {
                timeout_ms: self.sync_flush_timeout_ms,
            },
        };
        store.retention = RetentionConfig {
            file_reserved_ms: self.file_reserved_time_ms,
            delete_when: self.delete_when.clone(),
            disk_max_used_percent: self.disk_max_used_space_ratio,
            disk_clean_forcibly_percent: self.disk_space_clean_forcibly_ratio,
            clean_forcibly: self.clean_file_forcibly_enable,
            disk_warning_level_percent: self.disk_space_warning_level_ratio,
            clean_interval_ms: self.clean_resource_interval_ms,
        };
        store.replica = self.replication.broker_role.is_slave();
        store.schedule_delays_ms =
            crate::services::delay_levels::DelayLevels::parse(&self.message_delay_level)
                .map(|levels| {
                    levels
                        .levels()
                        .filter_map(|level| levels.delay_ms(level))
                        .collect()
                })
                .unwrap_or_default();
        // A master's HA links run on shard 0 and push every written batch.
        store.notify_written_shard = (!store.replica).then_some(0);
        store.dispatch_gated = self.dispatch_gated();
        // A static slave's copy is the master's to offload. In controller
        // mode every replica keeps the tier in either role: as slave it
        // follows the set's remote manifest (reads, retention and the local
        // budget count offloaded segments) and uploads nothing; promoted,
        // it uploads from where that manifest ends.
        store.tier = match store.replica && !self.controller_mode.enabled {
            true => None,
            false => self.tier.store_config().ok().flatten(),
        };
        if let Some(tier) = &mut store.tier {
            tier.owner = tier::owner(&self.broker_cluster_name, &self.broker_name);
        }
        store
    }

    /// Controller mode's epoch file (`storePathEpochFile`).
    pub fn epoch_file(&self) -> ferrocket_store::epoch::file::EpochFile {
        let path = self.controller_mode.epoch_file(&self.store_path_root_dir);
        ferrocket_store::epoch::file::EpochFile::at(path)
    }

    /// Controller mode keeps ConsumeQueue dispatch at the confirm offset
    /// on a slave, and on a master whose sends wait for every in-sync
    /// replica (Java's `CommitLog.getConfirmOffset`; see `tasks::ha::gate`).
    pub fn dispatch_gated(&self) -> bool {
        let mode = &self.controller_mode;
        mode.enabled && (self.replication.broker_role.is_slave() || mode.all_ack_in_sync_state_set)
    }

    /// Where the shards run.
    pub fn shards_config(&self) -> ShardsConfig {
        ShardsConfig {
            shard_count: self.shard_count,
            cores: self.shard_cores.clone(),
            pin: self.pin_shards,
            name: "ferrocket-shard".into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_match_rocketmq() {
        let config = BrokerConfig::default();
        assert_eq!(config.listen_port, 10911);
        assert_eq!(config.broker_cluster_name, "DefaultCluster");
        assert_eq!(config.default_topic_queue_nums, 8);
        assert_eq!(config.max_message_size, 4 * 1024 * 1024);
        assert!(config.auto_create_topic_enable);
        assert!(config.validate().is_ok());
    }

    #[test]
    fn parses_namesrv_list_and_rejects_garbage() {
        let mut config = BrokerConfig {
            namesrv_addr: "127.0.0.1:9876; 127.0.0.1:9877".into(),
            ..BrokerConfig::default()
        };
        assert_eq!(config.namesrv_addrs().unwrap().len(), 2);
        config.namesrv_addr = "nonsense".into();
        assert!(config.validate().is_err());
        assert_eq!(
            FlushDiskType::parse("sync_flush"),
            Some(FlushDiskType::SyncFlush)
        );
        assert_eq!(FlushDiskType::parse("x"), None);
    }
}
