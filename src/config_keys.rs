//! The settings each server understands, by RocketMQ key name (Ferrocket's
//! own keys where RocketMQ has none). Each `apply_*` returns `Ok(false)` for
//! a key it does not know, so the caller can warn about it.

use crate::properties::{invalid, parse_bool, parse_port, parse_value, Setting};
use ferrocket_broker::{
    BrokerConfig, BrokerRole, CommitLogWriteMode, FlushDiskType, MetricsConfig, MetricsExporter,
};
use ferrocket_namesrv::NamesrvConfig;

pub fn apply_namesrv(
    config: &mut NamesrvConfig,
    key: &str,
    setting: &Setting,
) -> Result<bool, String> {
    match key {
        "listenAddr" => config.listen_addr = parse_value(key, setting)?,
        "listenPort" => config.listen_port = parse_port(key, setting)?,
        "brokerExpiryMs" => config.broker_expiry_ms = positive(key, setting)?,
        "scanNotActiveBrokerInterval" | "scanIntervalMs" => {
            config.scan_interval_ms = positive(key, setting)?
        }
        "unregisterOnDisconnect" => config.unregister_on_disconnect = parse_bool(key, setting)?,
        "kvConfigEntriesMax" => config.kv_limits.entries_max = positive_count(key, setting)?,
        key if apply_server_limits(&mut config.limits, key, setting)? => {}
        key if metrics_keys(&mut config.metrics, key, setting)? => {
            if !matches!(
                config.metrics.exporter,
                MetricsExporter::Disable | MetricsExporter::Prom
            ) {
                return Err(invalid(
                    key,
                    setting,
                    "the name server exports PROM only (OTLP_GRPC and LOG are the broker's)",
                ));
            }
        }
        key if tls_keys(&mut config.tls, key, setting)? => {}
        "kvConfigBytesMax" => config.kv_limits.bytes_max = positive_count(key, setting)?,
        "deleteTopicWithBrokerRegistration" => {
            config.delete_topic_with_broker_registration = parse_bool(key, setting)?
        }
        "supportActingMaster" => config.acting.support_acting_master = parse_bool(key, setting)?,
        "notifyMinBrokerIdChanged" => {
            config.acting.notify_min_broker_id_changed = parse_bool(key, setting)?
        }
        // Empty keeps the KV config in memory only.
        "kvConfigPath" => {
            config.kv_config_path = Some(setting.value.as_str())
                .filter(|v| !v.is_empty())
                .map(Into::into)
        }
        // RocketMQ settings with no effect here, accepted so a Java
        // namesrv.conf loads without noise.
        "aclEnable" => config.acl_enable = parse_bool(key, setting)?,
        "aclAdminSignatureWindowMs" => {
            config.acl_admin_signature_window_ms = parse_value(key, setting)?
        }
        "rocketmqHome" => {
            config.rocketmq_home = Some(setting.value.as_str())
                .filter(|v| !v.is_empty())
                .map(Into::into)
        }
        "configStorePath" | "orderMessageEnable" => {}
        // Checked here; the embedded controller is configured from the same
        // settings (`config_controller`).
        "enableControllerInNamesrv" => {
            parse_bool(key, setting)?;
        }
        _ => return Ok(false),
    }
    Ok(true)
}

/// What one group of a server's keys answers: `Ok(false)` for a key the
/// group does not know.
type KeyGroup<C> = fn(&mut C, &str, &Setting) -> Result<bool, String>;

/// The broker's keys, by group; a key belongs to one group only.
const BROKER_KEY_GROUPS: [KeyGroup<BrokerConfig>; 11] = [
    broker_identity_keys,
    broker_replication_keys,
    broker_store_keys,
    broker_retention_keys,
    broker_shard_keys,
    broker_limit_keys,
    broker_consume_keys,
    broker_metrics_keys,
    broker_tls_keys,
    crate::auth_keys::broker_auth_keys,
    crate::compaction_keys::broker_compaction_keys,
];

pub fn apply_broker(
    config: &mut BrokerConfig,
    key: &str,
    setting: &Setting,
) -> Result<bool, String> {
    for group in BROKER_KEY_GROUPS {
        if group(config, key, setting)? {
            return Ok(true);
        }
    }
    // RocketMQ settings with no effect here, accepted so a Java
    // broker.conf loads without noise.
    Ok(matches!(
        key,
        "destroyMapedFileIntervalForcibly"
            | "deleteCommitLogFilesInterval"
            | "deleteConsumeQueueFilesInterval"
    ))
}

/// Where the broker listens, who it is and how it registers.
fn broker_identity_keys(
    config: &mut BrokerConfig,
    key: &str,
    setting: &Setting,
) -> Result<bool, String> {
    match key {
        "listenAddr" => config.listen_addr = parse_value(key, setting)?,
        "listenPort" => config.listen_port = parse_port(key, setting)?,
        "fastListenPortEnable" => config.fast_listen_port_enable = parse_bool(key, setting)?,
        "namesrvAddr" => config.namesrv_addr = setting.value.clone(),
        "brokerClusterName" => config.broker_cluster_name = non_empty(key, setting)?,
        "brokerName" => config.broker_name = non_empty(key, setting)?,
        "brokerId" => config.broker_id = parse_value(key, setting)?,
        "brokerIP1" => config.broker_ip1 = setting.value.clone(),
        "brokerPermission" => config.broker_permission = parse_value(key, setting)?,
        "registerBrokerIntervalMs" | "registerNameServerPeriod" => {
            config.register_broker_interval_ms = positive(key, setting)?
        }
        "registerBrokerTimeoutMills" => config.register_broker_timeout_ms = positive(key, setting)?,
        "channelExpiredTimeout" => config.client_expiry_ms = positive(key, setting)?,
        "regionId" => config.region_id = setting.value.clone(),
        "traceOn" => config.trace_on = parse_bool(key, setting)?,
        "aclEnable" => config.acl_enable = parse_bool(key, setting)?,
        "aclAdminSignatureWindowMs" => {
            config.acl_admin_signature_window_ms = parse_value(key, setting)?
        }
        "rocketmqHome" => {
            config.rocketmq_home = Some(setting.value.as_str())
                .filter(|v| !v.is_empty())
                .map(Into::into)
        }
        _ => return Ok(false),
    }
    Ok(true)
}

/// The exporters (RocketMQ 5's `metrics*` keys); OTLP and LOG are the
/// broker's only.
fn broker_metrics_keys(
    config: &mut BrokerConfig,
    key: &str,
    setting: &Setting,
) -> Result<bool, String> {
    let metrics = &mut config.metrics;
    match key {
        "metricsGrpcExporterTarget" => metrics.grpc_target = setting.value.trim().to_string(),
        "metricsGrpcExporterHeader" => {
            metrics.grpc_headers = MetricsConfig::parse_headers(&setting.value)
                .map_err(|e| invalid(key, setting, &e))?
        }
        "metricGrpcExporterTimeOutInMills" => metrics.grpc_timeout_ms = positive(key, setting)?,
        "metricGrpcExporterIntervalInMills" => metrics.grpc_interval_ms = positive(key, setting)?,
        "metricLoggingExporterIntervalInMills" => metrics.log_interval_ms = positive(key, setting)?,
        _ => return metrics_keys(metrics, key, setting),
    }
    Ok(true)
}

/// TLS: Java's `tls.*` system properties, and `useTLS` (registration).
fn broker_tls_keys(
    config: &mut BrokerConfig,
    key: &str,
    setting: &Setting,
) -> Result<bool, String> {
    if key == "useTLS" {
        config.use_tls = Some(parse_bool(key, setting)?);
        return Ok(true);
    }
    tls_keys(&mut config.tls, key, setting)
}

/// The `tls.*` keys, the same on every server.
fn tls_keys(
    tls: &mut ferrocket_tls::TlsSettings,
    key: &str,
    setting: &Setting,
) -> Result<bool, String> {
    tls.set(key, &setting.value)
        .map_err(|e| format!("{}: {e}", setting.origin))
}

/// The exporter's keys, the same on the broker and the name server.
fn metrics_keys(metrics: &mut MetricsConfig, key: &str, setting: &Setting) -> Result<bool, String> {
    match key {
        "metricsExporterType" => {
            metrics.exporter =
                MetricsExporter::parse(&setting.value).map_err(|e| invalid(key, setting, &e))?
        }
        "metricsPromExporterHost" => metrics.prom_host = setting.value.trim().to_string(),
        "metricsPromExporterPort" => metrics.prom_port = Some(parse_value(key, setting)?),
        "metricsLabel" => {
            metrics.labels = MetricsConfig::parse_labels(&setting.value)
                .map_err(|e| invalid(key, setting, &e))?
        }
        "metricsInDelta" => metrics.in_delta = parse_bool(key, setting)?,
        _ => return Ok(false),
    }
    Ok(true)
}

/// Master/slave replication (`brokerRole` and the HA keys).
fn broker_replication_keys(
    config: &mut BrokerConfig,
    key: &str,
    setting: &Setting,
) -> Result<bool, String> {
    let ha = &mut config.replication;
    match key {
        "brokerRole" => {
            ha.broker_role = BrokerRole::parse(&setting.value).ok_or_else(|| {
                invalid(key, setting, "expected ASYNC_MASTER, SYNC_MASTER or SLAVE")
            })?
        }
        // Java: a value <= 0 means listenPort + 1.
        "haListenPort" => {
            let port: i64 = parse_value(key, setting)?;
            ha.ha_listen_port = match port {
                ..=0 => None,
                1..=65535 => Some(port as u16),
                _ => {
                    return Err(invalid(
                        key,
                        setting,
                        "expected a port, 1-65535, or 0 for listenPort + 1",
                    ))
                }
            }
        }
        key if config
            .controller_mode
            .apply(key, &setting.value)
            .map_err(|e| format!("{}: {e}", setting.origin))? => {}
        key if config
            .tier
            .apply(key, &setting.value)
            .map_err(|e| format!("{}: {e}", setting.origin))? => {}
        "haMasterAddress" => ha.ha_master_address = setting.value.trim().to_owned(),
        "brokerIP2" => ha.broker_ip2 = setting.value.trim().to_owned(),
        "haSendHeartbeatInterval" => ha.ha_heartbeat_interval_ms = positive(key, setting)?,
        "haHousekeepingInterval" => ha.ha_housekeeping_interval_ms = positive(key, setting)?,
        "haTransferBatchSize" => ha.ha_transfer_batch_bytes = positive_count(key, setting)?,
        "haMaxGapNotInSync" | "haSlaveFallbehindMax" => {
            ha.ha_max_gap_not_in_sync_bytes = positive(key, setting)? as i64
        }
        "slaveTimeout" => ha.slave_timeout_ms = positive(key, setting)?,
        "inSyncReplicas" => ha.in_sync_replicas = parse_value(key, setting)?,
        "haFlowControlEnable" => ha.ha_flow_control_enable = parse_bool(key, setting)?,
        "maxHaTransferByteInSecond" => ha.ha_transfer_bytes_per_sec_max = positive(key, setting)?,
        "slaveReadEnable" => ha.slave_read_enable = parse_bool(key, setting)?,
        "accessMessageInMemoryMaxRatio" => {
            ha.access_message_in_memory_max_ratio = parse_value(key, setting)?
        }
        "haTlsEnable" => ha.ha_tls_enable = parse_bool(key, setting)?,
        "haAuthSecret" => ha.ha_auth_secret = setting.value.trim().to_owned(),
        "enableSlaveActingMaster" => ha.enable_slave_acting_master = parse_bool(key, setting)?,
        "enableRemoteEscape" => ha.enable_remote_escape = parse_bool(key, setting)?,
        "brokerNotActiveTimeoutMillis" => ha.broker_not_active_timeout_ms = positive(key, setting)?,
        "brokerHeartbeatInterval" => ha.broker_heartbeat_interval_ms = positive(key, setting)?,
        "syncBrokerMemberGroupPeriod" => {
            ha.sync_broker_member_group_period_ms = positive(key, setting)?
        }
        _ => return Ok(false),
    }
    Ok(true)
}

/// The store: where it lives, how it writes and flushes.
fn broker_store_keys(
    config: &mut BrokerConfig,
    key: &str,
    setting: &Setting,
) -> Result<bool, String> {
    match key {
        "storePathRootDir" => config.store_path_root_dir = non_empty(key, setting)?.into(),
        "storePathCommitLog" => {
            config.store_path_commit_log = Some(non_empty(key, setting)?.into());
        }
        "storePathConsumeQueue" => {
            config.store_path_consume_queue = Some(non_empty(key, setting)?.into());
        }
        "enableProxy" => config.enable_proxy = parse_bool(key, setting)?,
        "proxyMode" => {
            config.proxy_mode = ferrocket_broker::ProxyMode::parse(&setting.value)
                .ok_or_else(|| invalid(key, setting, "expected local or cluster"))?
        }
        "flushDiskType" => {
            config.flush_disk_type = FlushDiskType::parse(&setting.value)
                .ok_or_else(|| invalid(key, setting, "expected ASYNC_FLUSH or SYNC_FLUSH"))?
        }
        "flushIntervalCommitLog" => config.flush_interval_commit_log_ms = positive(key, setting)?,
        "syncFlushTimeout" => config.sync_flush_timeout_ms = positive(key, setting)?,
        "writeMode" => {
            config.write_mode = CommitLogWriteMode::parse(&setting.value)
                .ok_or_else(|| invalid(key, setting, "expected buffered or direct"))?
        }
        "mappedFileSizeCommitLog" => config.mapped_file_size_commit_log = positive(key, setting)?,
        "maxMessageSize" => config.max_message_size = parse_value(key, setting)?,
        "flushConsumerOffsetInterval" => {
            config.offset_persist_interval_ms = positive(key, setting)?
        }
        _ => return Ok(false),
    }
    Ok(true)
}

/// Disk retention: how long files are kept and when they are deleted.
fn broker_retention_keys(
    config: &mut BrokerConfig,
    key: &str,
    setting: &Setting,
) -> Result<bool, String> {
    match key {
        "fileReservedTime" => {
            let hours = positive(key, setting)?;
            config.file_reserved_time_ms = hours
                .checked_mul(3_600_000)
                .ok_or_else(|| invalid(key, setting, "expected hours, at most 2562047788015"))?
        }
        // Ferrocket's own: the same in milliseconds (tests expire in seconds).
        "fileReservedTimeMs" => config.file_reserved_time_ms = parse_value(key, setting)?,
        "deleteWhen" => {
            config.delete_when = BrokerConfig::parse_delete_when(&setting.value)
                .map_err(|why| invalid(key, setting, &why))?
        }
        "diskMaxUsedSpaceRatio" => config.disk_max_used_space_ratio = percent(key, setting)?,
        "diskSpaceCleanForciblyRatio" => {
            config.disk_space_clean_forcibly_ratio = percent(key, setting)?
        }
        "diskSpaceWarningLevelRatio" => {
            config.disk_space_warning_level_ratio = ratio_percent(key, setting)?
        }
        "cleanFileForciblyEnable" => config.clean_file_forcibly_enable = parse_bool(key, setting)?,
        "cleanResourceInterval" => config.clean_resource_interval_ms = positive(key, setting)?,
        _ => return Ok(false),
    }
    Ok(true)
}

/// Shards, their cores and where the appender runs.
fn broker_shard_keys(
    config: &mut BrokerConfig,
    key: &str,
    setting: &Setting,
) -> Result<bool, String> {
    match key {
        "shardCount" => config.shard_count = parse_value(key, setting)?,
        "shardCores" => config.shard_cores = core_list(key, setting)?,
        "pinShards" => config.pin_shards = parse_bool(key, setting)?,
        "appenderInShard" => {
            config.appender_in_shard = match setting.value.as_str() {
                "" | "auto" => None,
                _ => Some(parse_bool(key, setting)?),
            }
        }
        "appenderCore" => {
            config.appender_core = if setting.value.is_empty() {
                None
            } else {
                Some(parse_value(key, setting)?)
            }
        }
        _ => return Ok(false),
    }
    Ok(true)
}

/// Topics, groups and clients: creation and counts; the server's limits.
fn broker_limit_keys(
    config: &mut BrokerConfig,
    key: &str,
    setting: &Setting,
) -> Result<bool, String> {
    match key {
        "autoCreateTopicEnable" => config.auto_create_topic_enable = parse_bool(key, setting)?,
        "defaultTopicQueueNums" => config.default_topic_queue_nums = parse_value(key, setting)?,
        "topicCountMax" => config.topic_count_max = positive_count(key, setting)?,
        "subscriptionGroupCountMax" => {
            config.subscription_group_count_max = positive_count(key, setting)?
        }
        "clientsPerGroupMax" => config.clients_per_group_max = positive_count(key, setting)?,
        "autoCreateSubscriptionGroup" => {
            config.auto_create_subscription_group = parse_bool(key, setting)?
        }
        key => return apply_server_limits(&mut config.server_limits, key, setting),
    }
    Ok(true)
}

/// Pulls, filters, delays, timers and transactions.
fn broker_consume_keys(
    config: &mut BrokerConfig,
    key: &str,
    setting: &Setting,
) -> Result<bool, String> {
    match key {
        "longPollingEnable" => config.long_polling_enable = parse_bool(key, setting)?,
        "suspendTimeoutMsMax" => config.suspend_timeout_ms_max = positive(key, setting)?,
        "maxTransferCountOnMessageInMemory" => {
            config.pull_messages_max = parse_value(key, setting)?
        }
        "maxTransferBytesOnMessageInMemory" => config.pull_bytes_max = parse_value(key, setting)?,
        "messageDelayLevel" => config.message_delay_level = non_empty(key, setting)?,
        "enablePropertyFilter" => config.enable_property_filter = parse_bool(key, setting)?,
        "timerMaxDelaySec" => config.timer_max_delay_sec = positive(key, setting)?,
        "recallMessageEnable" => config.recall_message_enable = parse_bool(key, setting)?,
        "transactionTimeOut" => config.transaction_timeout_ms = parse_value(key, setting)?,
        "transactionCheckInterval" => {
            config.transaction_check_interval_ms = positive(key, setting)?
        }
        "transactionCheckMax" => config.transaction_check_max = parse_value(key, setting)?,
        _ => return Ok(false),
    }
    Ok(true)
}

fn positive(key: &str, setting: &Setting) -> Result<u64, String> {
    let value: u64 = parse_value(key, setting)?;
    if value == 0 {
        return Err(invalid(key, setting, "expected a whole number, 1 or more"));
    }
    Ok(value)
}

/// Keys of the Remoting server's limits, for the broker and the name server.
fn apply_server_limits(
    limits: &mut ferrocket_runtime::server::ServerLimits,
    key: &str,
    setting: &Setting,
) -> Result<bool, String> {
    match key {
        "serverChannelMaxIdleTimeSeconds" | "channelMaxIdleTimeSeconds" => {
            limits.idle_timeout_ms = positive(key, setting)?.saturating_mul(1000)
        }
        "idleTimeoutMs" => limits.idle_timeout_ms = positive(key, setting)?,
        "partialFrameTimeoutMs" => limits.partial_frame_timeout_ms = positive(key, setting)?,
        "writeStallTimeoutMs" => limits.write_stall_timeout_ms = positive(key, setting)?,
        "connectionInflightBytesMax" => limits.inflight_bytes_max = positive_count(key, setting)?,
        "connectionWriteQueueBytesMax" => {
            limits.write_queue_bytes_max = positive_count(key, setting)?
        }
        "shardHeldBytesMax" => limits.shard_bytes_max = positive_count(key, setting)?,
        "serverConnectionsMax" => limits.connections_max = positive_count(key, setting)?,
        _ => return Ok(false),
    }
    Ok(true)
}

fn positive_count(key: &str, setting: &Setting) -> Result<usize, String> {
    let value: usize = parse_value(key, setting)?;
    if value == 0 {
        return Err(invalid(key, setting, "expected a whole number, 1 or more"));
    }
    Ok(value)
}

fn percent(key: &str, setting: &Setting) -> Result<u8, String> {
    let value: u8 = parse_value(key, setting)?;
    if value == 0 || value > 100 {
        return Err(invalid(key, setting, "expected a percentage, 1-100"));
    }
    Ok(value)
}

/// A percentage written either way: `90`, or Java's ratio form `0.90`.
fn ratio_percent(key: &str, setting: &Setting) -> Result<u8, String> {
    if !setting.value.contains('.') {
        return percent(key, setting);
    }
    match setting.value.trim().parse::<f64>() {
        Ok(ratio) if ratio > 0.0 && ratio <= 1.0 => Ok((ratio * 100.0).round().max(1.0) as u8),
        _ => Err(invalid(
            key,
            setting,
            "expected a percentage, 1-100, or a ratio such as 0.90",
        )),
    }
}

fn non_empty(key: &str, setting: &Setting) -> Result<String, String> {
    if setting.value.is_empty() {
        return Err(invalid(key, setting, "must not be empty"));
    }
    Ok(setting.value.clone())
}

fn core_list(key: &str, setting: &Setting) -> Result<Vec<usize>, String> {
    setting
        .value
        .split(',')
        .filter(|part| !part.trim().is_empty())
        .map(|part| {
            part.trim()
                .parse::<usize>()
                .map_err(|_| invalid(key, setting, "expected core numbers, comma-separated: 0,1"))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setting(value: &str) -> Setting {
        Setting::from_flag(value.into(), "line 7".into())
    }

    #[test]
    fn broker_keys_apply_and_reject() {
        let mut config = BrokerConfig::default();
        assert!(apply_broker(&mut config, "brokerName", &setting("b1")).unwrap());
        assert!(apply_broker(&mut config, "flushDiskType", &setting("SYNC_FLUSH")).unwrap());
        assert!(apply_broker(&mut config, "shardCores", &setting("0, 2")).unwrap());
        assert!(apply_broker(&mut config, "appenderCore", &setting("1")).unwrap());
        assert_eq!(config.appender_core, Some(1));
        assert!(apply_broker(&mut config, "appenderCore", &setting("one")).is_err());
        assert!(apply_broker(&mut config, "appenderInShard", &setting("false")).unwrap());
        assert_eq!(config.appender_in_shard, Some(false));
        assert!(apply_broker(&mut config, "appenderInShard", &setting("auto")).unwrap());
        assert_eq!(config.appender_in_shard, None);
        assert_eq!(config.broker_name, "b1");
        assert_eq!(config.flush_disk_type, FlushDiskType::SyncFlush);
        assert_eq!(config.shard_cores, vec![0, 2]);
        assert!(!apply_broker(&mut config, "noSuchKey", &setting("1")).unwrap());
        let error = apply_broker(&mut config, "listenPort", &setting("70000")).unwrap_err();
        assert!(
            error.contains("listenPort") && error.contains("line 7"),
            "{error}"
        );
        assert!(apply_broker(&mut config, "flushDiskType", &setting("SOMETIMES")).is_err());
        assert!(apply_broker(&mut config, "fileReservedTime", &setting("48")).unwrap());
        assert_eq!(config.file_reserved_time_ms, 48 * 3_600_000);
        assert!(apply_broker(&mut config, "fileReservedTimeMs", &setting("1500")).unwrap());
        assert_eq!(config.file_reserved_time_ms, 1500);
        assert!(apply_broker(&mut config, "deleteWhen", &setting("01;13")).unwrap());
        assert_eq!(config.delete_when, vec![1, 13]);
        assert!(apply_broker(&mut config, "deleteWhen", &setting("25")).is_err());
        assert!(apply_broker(&mut config, "diskMaxUsedSpaceRatio", &setting("101")).is_err());
        apply_broker(&mut config, "diskSpaceWarningLevelRatio", &setting("0.95")).unwrap();
        assert_eq!(config.disk_space_warning_level_ratio, 95);
        apply_broker(&mut config, "diskSpaceWarningLevelRatio", &setting("80")).unwrap();
        assert_eq!(config.disk_space_warning_level_ratio, 80);
        assert!(apply_broker(&mut config, "diskSpaceWarningLevelRatio", &setting("1.5")).is_err());
        assert!(apply_broker(
            &mut config,
            "destroyMapedFileIntervalForcibly",
            &setting("1")
        )
        .unwrap());
    }

    #[test]
    fn replication_keys_apply_with_javas_spellings() {
        let mut config = BrokerConfig::default();
        assert!(apply_broker(&mut config, "brokerRole", &setting("SLAVE")).unwrap());
        assert!(config.replication.broker_role.is_slave());
        assert!(apply_broker(&mut config, "brokerRole", &setting("PRIMARY")).is_err());
        assert!(apply_broker(&mut config, "haListenPort", &setting("-1")).unwrap());
        assert_eq!(config.replication.ha_listen_port, None);
        assert!(apply_broker(&mut config, "haListenPort", &setting("20912")).unwrap());
        assert_eq!(config.replication.ha_listen_port, Some(20912));
        assert!(apply_broker(&mut config, "haSlaveFallbehindMax", &setting("1024")).unwrap());
        assert_eq!(config.replication.ha_max_gap_not_in_sync_bytes, 1024);
        assert!(apply_broker(&mut config, "slaveReadEnable", &setting("true")).unwrap());
        assert!(config.replication.slave_read_enable);
        assert!(apply_broker(&mut config, "fastListenPortEnable", &setting("true")).unwrap());
        assert!(config.fast_listen_port_enable);
        // A slave keeps brokerId 0 only until validation refuses it.
        assert!(config
            .validate()
            .unwrap_err()
            .to_string()
            .contains("brokerId > 0"));
    }

    #[test]
    fn namesrv_keys_apply() {
        let mut config = NamesrvConfig::default();
        assert!(apply_namesrv(&mut config, "listenPort", &setting("19876")).unwrap());
        assert_eq!(config.listen_port, 19876);
        assert!(apply_namesrv(&mut config, "brokerExpiryMs", &setting("0")).is_err());
        assert!(apply_namesrv(&mut config, "kvConfigPath", &setting("/x/kv.json")).unwrap());
        assert_eq!(config.kv_config_path, Some("/x/kv.json".into()));
        assert!(apply_namesrv(&mut config, "kvConfigPath", &setting("")).unwrap());
        assert_eq!(config.kv_config_path, None);
    }
}
