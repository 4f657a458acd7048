//! The name server's settings, each declared once (see
//! `ferrocket_runtime::settings`): namesrv.conf, `--set`, "did you mean"
//! and the README's key tables read [`NAMESRV_SETTINGS`]. The embedded
//! controller's keys (`enableControllerInNamesrv=true`) are the controller
//! crate's.

use ferrocket_runtime::decl;
use ferrocket_runtime::settings::{
    invalid, parse_bool, parse_port, parse_value, positive, positive_count, Decl, Setting, Table,
};

use ferrocket_acl::{AdminAclSettings, ADMIN_ACL_SETTINGS};

use ferrocket_metrics::config::{MetricsExporter, NAMESRV_METRICS_PROM_PORT_DEFAULT};

use crate::NamesrvConfig;

/// Where an online change (UPDATE_NAMESRV_CONFIG) says its values came
/// from; `orderMessageEnable` tells an online `false` by it.
pub(crate) const ONLINE_ORIGIN: &str = "UPDATE_NAMESRV_CONFIG";

/// Every key the name server takes.
pub static NAMESRV_SETTINGS: Table<NamesrvConfig> = Table {
    sections: &[
        OWN,
        KV,
        &ACL,
        PATHS,
        METRICS,
        ferrocket_runtime::server_limit_settings!(limits),
        ferrocket_metrics::prom_settings!(metrics, NAMESRV_METRICS_PROM_PORT_DEFAULT, "5558"),
        &TLS,
    ],
};

/// `orderMessageEnable`: Java's default is `false`, so a file's `false` is
/// taken (and changes nothing); an online change to `false` is refused, as
/// it could not be honoured.
fn order_message_enable(key: &str, setting: &Setting) -> Result<(), String> {
    if !parse_bool(key, setting)? && setting.origin == ONLINE_ORIGIN {
        return Err("orderMessageEnable cannot be turned off: Ferrocket always \
                    serves a topic's order config (ORDER_TOPIC_CONFIG) with its route"
            .into());
    }
    Ok(())
}

/// The `tls.*` keys, declared in `ferrocket_tls`, on the name server's
/// `tls`.
static TLS: [Decl<NamesrvConfig>; ferrocket_tls::TLS_SETTINGS.len()] = ferrocket_runtime::settings::nested!(
    NamesrvConfig, tls: ferrocket_tls::TlsSettings = ferrocket_tls::TLS_SETTINGS
);

/// The admin ACL's keys (`aclEnable`, `aclAdminSignatureWindowMs`,
/// `rocketmqHome`), declared in `ferrocket_acl` (the controller takes
/// them too), on the name server's `acl`; GET_NAMESRV_CONFIG prints
/// `aclEnable` and `rocketmqHome`.
static ACL: [Decl<NamesrvConfig>; ADMIN_ACL_SETTINGS.len()] = ferrocket_runtime::settings::nested!(
    printed NamesrvConfig, acl: AdminAclSettings = ADMIN_ACL_SETTINGS
);

/// Where it listens, how it keeps brokers, acting master.
static OWN: &[Decl<NamesrvConfig>] = &[
    decl!(
        "listenAddr",
        "`127.0.0.1`",
        start,
        "address to listen on (Ferrocket key); 0.0.0.0 for every interface",
        |c, k, s| c.listen_addr = parse_value(k, s)?,
        |c| c.listen_addr.to_string(),
    ),
    decl!(
        "listenPort",
        "9876",
        start,
        "port the name server listens on",
        |c, k, s| c.listen_port = parse_port(k, s)?,
        |c| c.listen_port.to_string(),
    ),
    decl!(
        "brokerExpiryMs",
        "120000",
        start,
        "drop brokers silent this long",
        |c, k, s| c.broker_expiry_ms = positive(k, s)?,
        |c| c.broker_expiry_ms.to_string(),
    ),
    decl!(
        "scanNotActiveBrokerInterval" | "scanIntervalMs",
        "5000",
        start,
        "ms between looks for silent brokers",
        |c, k, s| c.scan_interval_ms = positive(k, s)?,
        |c| c.scan_interval_ms.to_string(),
    ),
    decl!(
        "unregisterOnDisconnect",
        "`true`",
        online,
        "unregister a broker when the connection it registered over closes",
        |c, k, s| c.unregister_on_disconnect = parse_bool(k, s)?,
        |c| c.unregister_on_disconnect.to_string(),
    ),
    decl!(
        "deleteTopicWithBrokerRegistration",
        "`false`",
        online,
        "drop a broker's topics missing from its registration",
        |c, k, s| c.delete_topic_with_broker_registration = parse_bool(k, s)?,
        |c| c.delete_topic_with_broker_registration.to_string(),
    ),
    decl!(
        "supportActingMaster",
        "`false`",
        start,
        "route a set whose master is gone to its acting master",
        |c, k, s| c.acting.support_acting_master = parse_bool(k, s)?,
        |c| c.acting.support_acting_master.to_string(),
    ),
    decl!(
        "notifyMinBrokerIdChanged",
        "`false`",
        start,
        "tell a set's brokers when its lowest broker id changes",
        |c, k, s| c.acting.notify_min_broker_id_changed = parse_bool(k, s)?,
        |c| c.acting.notify_min_broker_id_changed.to_string(),
    ),
    decl!(
        "enableControllerInNamesrv",
        "`false`",
        start,
        "run a controller beside the name server, on its own port",
        |_, k, s| parse_bool(k, s)?
    ),
];

/// The KV config and the order config.
static KV: &[Decl<NamesrvConfig>] = &[
    decl!(
        "kvConfigPath",
        "`~/namesrv/kvConfig.json` (`start`: `DATA_DIR/namesrv/kvConfig.json`)",
        start,
        "where PUT_KV_CONFIG state is kept; empty keeps it in memory only",
        |c, _, s| c.kv_config_path = Some(s.value.as_str())
            .filter(|v| !v.is_empty())
            .map(Into::into),
        |c| path_text(c.kv_config_path.as_deref()),
    ),
    decl!(
        "kvConfigEntriesMax",
        "100000",
        start,
        "most KV config entries (Ferrocket key)",
        |c, k, s| c.kv_limits.entries_max = positive_count(k, s)?,
        |c| c.kv_limits.entries_max.to_string(),
    ),
    decl!(
        "kvConfigBytesMax",
        "16777216",
        start,
        "most bytes of KV config (Ferrocket key)",
        |c, k, s| c.kv_limits.bytes_max = positive_count(k, s)?,
        |c| c.kv_limits.bytes_max.to_string(),
    ),
    decl!(
        "orderMessageEnable",
        "`true`",
        online,
        "no effect: a topic's order config is always served; `false` is refused online",
        |_, k, s| order_message_enable(k, s)?,
        |_| "true".to_string(),
    ),
];

/// RocketMQ's paths Ferrocket has no use for.
static PATHS: &[Decl<NamesrvConfig>] = &[decl!(
    "configStorePath",
    "",
    start,
    "no effect (Java's namesrv.properties path)",
    |_, _, _| {}
)];

/// The exporter: the name server serves PROM only.
static METRICS: &[Decl<NamesrvConfig>] = &[decl!(
    "metricsExporterType",
    "`DISABLE`",
    start,
    "DISABLE or PROM (OTLP_GRPC and LOG are the broker's)",
    |c, k, s| c.metrics.exporter = match MetricsExporter::parse(&s.value) {
        Ok(exporter @ (MetricsExporter::Disable | MetricsExporter::Prom)) => exporter,
        Ok(_) => {
            return Err(invalid(
                k,
                s,
                "the name server exports PROM only (OTLP_GRPC and LOG are the broker's)",
            ));
        }
        Err(e) => return Err(invalid(k, s, &e)),
    },
    |c| c.metrics.exporter.name().to_string()
)];

/// GET_NAMESRV_CONFIG's lines: the name server's own keys with a value
/// to print, in declaration order (the shared limits and exporter keys
/// are not shown, as Java's name server does not have them).
pub(crate) fn render_own(config: &NamesrvConfig) -> Vec<(String, String)> {
    let own = OWN.iter().chain(KV).chain(&ACL).chain(PATHS).chain(METRICS);
    own.filter_map(|decl| {
        decl.show
            .map(|show| (decl.name.to_string(), show(config, decl.name)))
    })
    .collect()
}

fn path_text(path: Option<&std::path::Path>) -> String {
    path.map(|p| p.display().to_string()).unwrap_or_default()
}

#[cfg(test)]
mod tests;
