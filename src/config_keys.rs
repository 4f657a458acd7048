//! The name server's settings, by RocketMQ key name (Ferrocket's own keys
//! where RocketMQ has none). `apply_namesrv` returns `Ok(false)` for a key
//! it does not know, so the caller can warn about it. The broker's are
//! declared in its crate (`ferrocket_broker::BROKER_SETTINGS`).

use crate::properties::{invalid, parse_bool, parse_port, parse_value, Setting};
use ferrocket_broker::{MetricsConfig, MetricsExporter};
use ferrocket_namesrv::NamesrvConfig;
use ferrocket_runtime::settings::{positive, positive_count};

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

#[cfg(test)]
mod tests {
    use super::*;

    fn setting(value: &str) -> Setting {
        Setting::from_flag(value.into(), "line 7".into())
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
