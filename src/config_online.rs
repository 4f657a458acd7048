//! The broker's key table for GET_BROKER_CONFIG / UPDATE_BROKER_CONFIG:
//! keys are parsed by `config_keys` (the same words as for broker.conf),
//! and printed here, each as broker.conf spells it.

use std::path::PathBuf;

use ferrocket_broker::{BrokerConfig, ConfigKeys, FlushDiskType};

use crate::properties::Setting;

/// Where an online change's errors say it came from.
const ONLINE_ORIGIN: &str = "UPDATE_BROKER_CONFIG";

/// The table handed to the broker; `file` is the `-c` file, rewritten
/// with each online change.
pub fn online_keys(file: Option<PathBuf>) -> ConfigKeys {
    ConfigKeys {
        apply: apply_key,
        render,
        file,
    }
}

fn apply_key(config: &mut BrokerConfig, key: &str, value: &str) -> Result<bool, String> {
    let setting = Setting::from_flag(value.trim().to_string(), ONLINE_ORIGIN.into());
    crate::config_keys::apply_broker(config, key, &setting)
}

fn yes(value: bool) -> String {
    value.to_string()
}

/// Every key with a value in force, as broker.conf would set it.
fn render(c: &BrokerConfig) -> Vec<(String, String)> {
    let groups = [identity(c), store(c), consume(c)];
    groups
        .into_iter()
        .flatten()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
}

/// Who the broker is, where it listens, how it replicates.
fn identity(c: &BrokerConfig) -> Vec<(&'static str, String)> {
    let ha = &c.replication;
    vec![
        ("listenAddr", c.listen_addr.to_string()),
        ("listenPort", c.listen_port.to_string()),
        ("fastListenPortEnable", yes(c.fast_listen_port_enable)),
        ("namesrvAddr", c.namesrv_addr.clone()),
        ("brokerClusterName", c.broker_cluster_name.clone()),
        ("brokerName", c.broker_name.clone()),
        ("brokerId", c.broker_id.to_string()),
        ("brokerIP1", c.broker_ip1.clone()),
        ("brokerPermission", c.broker_permission.to_string()),
        (
            "registerBrokerIntervalMs",
            c.register_broker_interval_ms.to_string(),
        ),
        (
            "registerBrokerTimeoutMills",
            c.register_broker_timeout_ms.to_string(),
        ),
        ("channelExpiredTimeout", c.client_expiry_ms.to_string()),
        ("regionId", c.region_id.clone()),
        ("traceOn", yes(c.trace_on)),
        ("aclEnable", yes(c.acl_enable)),
        ("brokerRole", ha.broker_role.name().to_string()),
        (
            "haListenPort",
            ha.ha_port(c.listen_port)
                .map_or(String::new(), |p| p.to_string()),
        ),
        ("haMasterAddress", ha.ha_master_address.clone()),
        ("brokerIP2", ha.broker_ip2.clone()),
        ("slaveReadEnable", yes(ha.slave_read_enable)),
        ("inSyncReplicas", ha.in_sync_replicas.to_string()),
        ("enableProxy", yes(c.enable_proxy)),
        ("proxyMode", c.proxy_mode.name().to_string()),
        // Java's NettyClientConfig.useTLS: what registration does.
        ("useTLS", yes(c.tls.client_uses_tls(c.use_tls))),
        ("metricsExporterType", metrics_type(c).to_string()),
        ("metricsPromExporterHost", c.metrics.prom_host.clone()),
        (
            "metricsPromExporterPort",
            c.metrics
                .prom_port
                .unwrap_or(ferrocket_broker::METRICS_PROM_PORT_DEFAULT)
                .to_string(),
        ),
        ("metricsGrpcExporterTarget", c.metrics.grpc_target.clone()),
        ("metricsGrpcExporterHeader", pairs(&c.metrics.grpc_headers)),
        (
            "metricGrpcExporterTimeOutInMills",
            c.metrics.grpc_timeout_ms.to_string(),
        ),
        (
            "metricGrpcExporterIntervalInMills",
            c.metrics.grpc_interval_ms.to_string(),
        ),
        (
            "metricLoggingExporterIntervalInMills",
            c.metrics.log_interval_ms.to_string(),
        ),
    ]
}

/// The store, its retention, its shards.
fn store(c: &BrokerConfig) -> Vec<(&'static str, String)> {
    let flush = match c.flush_disk_type {
        FlushDiskType::AsyncFlush => "ASYNC_FLUSH",
        FlushDiskType::SyncFlush => "SYNC_FLUSH",
    };
    let cores: Vec<String> = c.shard_cores.iter().map(ToString::to_string).collect();
    let when: Vec<String> = c.delete_when.iter().map(|h| format!("{h:02}")).collect();
    vec![
        (
            "storePathRootDir",
            c.store_path_root_dir.display().to_string(),
        ),
        ("flushDiskType", flush.to_string()),
        (
            "flushIntervalCommitLog",
            c.flush_interval_commit_log_ms.to_string(),
        ),
        ("syncFlushTimeout", c.sync_flush_timeout_ms.to_string()),
        (
            "mappedFileSizeCommitLog",
            c.mapped_file_size_commit_log.to_string(),
        ),
        ("maxMessageSize", c.max_message_size.to_string()),
        (
            "flushConsumerOffsetInterval",
            c.offset_persist_interval_ms.to_string(),
        ),
        (
            "fileReservedTime",
            (c.file_reserved_time_ms / 3_600_000).to_string(),
        ),
        ("deleteWhen", when.join(";")),
        (
            "diskMaxUsedSpaceRatio",
            c.disk_max_used_space_ratio.to_string(),
        ),
        (
            "diskSpaceCleanForciblyRatio",
            c.disk_space_clean_forcibly_ratio.to_string(),
        ),
        (
            "diskSpaceWarningLevelRatio",
            c.disk_space_warning_level_ratio.to_string(),
        ),
        ("cleanFileForciblyEnable", yes(c.clean_file_forcibly_enable)),
        (
            "cleanResourceInterval",
            c.clean_resource_interval_ms.to_string(),
        ),
        ("shardCount", c.shard_count.to_string()),
        ("shardCores", cores.join(",")),
        ("pinShards", yes(c.pin_shards)),
    ]
}

/// Topics, groups, clients, pulls, delays, timers and transactions.
fn consume(c: &BrokerConfig) -> Vec<(&'static str, String)> {
    let limits = &c.server_limits;
    vec![
        ("autoCreateTopicEnable", yes(c.auto_create_topic_enable)),
        (
            "defaultTopicQueueNums",
            c.default_topic_queue_nums.to_string(),
        ),
        ("topicCountMax", c.topic_count_max.to_string()),
        (
            "subscriptionGroupCountMax",
            c.subscription_group_count_max.to_string(),
        ),
        ("clientsPerGroupMax", c.clients_per_group_max.to_string()),
        (
            "autoCreateSubscriptionGroup",
            yes(c.auto_create_subscription_group),
        ),
        ("serverConnectionsMax", limits.connections_max.to_string()),
        ("idleTimeoutMs", limits.idle_timeout_ms.to_string()),
        ("longPollingEnable", yes(c.long_polling_enable)),
        ("suspendTimeoutMsMax", c.suspend_timeout_ms_max.to_string()),
        (
            "maxTransferCountOnMessageInMemory",
            c.pull_messages_max.to_string(),
        ),
        (
            "maxTransferBytesOnMessageInMemory",
            c.pull_bytes_max.to_string(),
        ),
        ("messageDelayLevel", c.message_delay_level.clone()),
        ("enablePropertyFilter", yes(c.enable_property_filter)),
        ("timerMaxDelaySec", c.timer_max_delay_sec.to_string()),
        ("recallMessageEnable", yes(c.recall_message_enable)),
        ("transactionTimeOut", c.transaction_timeout_ms.to_string()),
        (
            "transactionCheckInterval",
            c.transaction_check_interval_ms.to_string(),
        ),
        ("transactionCheckMax", c.transaction_check_max.to_string()),
    ]
}

/// `k1:v1,k2:v2`, as the key is written.
fn pairs(pairs: &[(String, String)]) -> String {
    let each: Vec<String> = pairs.iter().map(|(k, v)| format!("{k}:{v}")).collect();
    each.join(",")
}

fn metrics_type(c: &BrokerConfig) -> &'static str {
    c.metrics.exporter.name()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each printed key parses back to the same config: GET's output is
    /// a valid broker.conf for this broker.
    #[test]
    fn printed_keys_parse_back_to_the_same_config() {
        let config = BrokerConfig {
            broker_name: "b1".into(),
            trace_on: false,
            delete_when: vec![1, 13],
            ..BrokerConfig::default()
        };
        let mut parsed = BrokerConfig::default();
        for (key, value) in render(&config) {
            assert!(
                apply_key(&mut parsed, &key, &value).unwrap(),
                "{key} unknown"
            );
        }
        assert_eq!(render(&parsed), render(&config));
        assert_eq!(parsed.broker_name, "b1");
        assert!(!parsed.trace_on);
    }

    #[test]
    fn every_online_key_is_printed() {
        let printed: Vec<String> = render(&BrokerConfig::default())
            .into_iter()
            .map(|(k, _)| k)
            .collect();
        for key in ferrocket_broker::ONLINE_KEYS {
            assert!(printed.iter().any(|k| k == key), "{key} not printed");
        }
    }
}
