//! The broker's settings, each declared once: its name and aliases, its
//! default, whether it changes online, a one-line description, how it is
//! parsed and how GET_BROKER_CONFIG prints it. broker.conf, `--set`,
//! UPDATE_BROKER_CONFIG, "did you mean", `ferrocket broker --help` and the
//! README's key tables all read [`BROKER_SETTINGS`].

mod auth;
mod compaction;
mod consume;
mod controller_mode;
mod identity;
mod limits;
mod metrics;
mod replication;
mod shards;
mod store;
mod tier;

use ferrocket_runtime::decl;
use ferrocket_runtime::settings::{
    core_list, invalid, non_empty, parse_bool, parse_port, parse_value, percent, positive,
    positive_count, ratio_percent, Decl, Setting, Table,
};

use super::{BrokerConfig, BrokerRole, CommitLogWriteMode, FlushDiskType, MetricsConfig};
use super::{MetricsExporter, ProxyMode, Whitelist};

/// Every key the broker takes.
pub static BROKER_SETTINGS: Table<BrokerConfig> = Table {
    sections: &[
        identity::IDENTITY,
        metrics::METRICS,
        metrics::PROM,
        replication::REPLICATION,
        store::STORE,
        shards::SHARDS,
        limits::LIMITS,
        limits::SERVER_LIMITS,
        consume::CONSUME,
        compaction::COMPACTION,
        tier::TIER,
        controller_mode::CONTROLLER_MODE,
        auth::AUTH,
        auth::AUTH_CLASSES,
        auth::AUTH_CACHES,
        &TLS,
        IGNORED,
    ],
};

/// The `tls.*` keys, declared in `ferrocket_tls`, on the broker's `tls`.
static TLS: [Decl<BrokerConfig>; ferrocket_tls::TLS_SETTINGS.len()] = ferrocket_runtime::settings::nested!(
    BrokerConfig, tls: ferrocket_tls::TlsSettings = ferrocket_tls::TLS_SETTINGS
);

/// RocketMQ settings with no effect here, taken so a Java broker.conf
/// loads without noise.
static IGNORED: &[Decl<BrokerConfig>] = &[
    decl!(
        "destroyMapedFileIntervalForcibly",
        "",
        start,
        "no effect: a deleted segment a reader still maps stays readable until it lets go",
        |_, _, _| {}
    ),
    decl!(
        "deleteCommitLogFilesInterval",
        "",
        start,
        "no effect (Java's pause between two segment deletions)",
        |_, _, _| {}
    ),
    decl!(
        "deleteConsumeQueueFilesInterval",
        "",
        start,
        "no effect (Java's pause between two ConsumeQueue deletions)",
        |_, _, _| {}
    ),
];

fn yes(value: bool) -> String {
    value.to_string()
}

fn flush_name(flush: FlushDiskType) -> &'static str {
    match flush {
        FlushDiskType::AsyncFlush => "ASYNC_FLUSH",
        FlushDiskType::SyncFlush => "SYNC_FLUSH",
    }
}

/// `k1:v1,k2:v2`, as the key is written.
fn pairs(pairs: &[(String, String)]) -> String {
    let each: Vec<String> = pairs.iter().map(|(k, v)| format!("{k}:{v}")).collect();
    each.join(",")
}

/// Every key with a value to print, as broker.conf would set it.
pub(crate) fn render(config: &BrokerConfig) -> Vec<(String, String)> {
    BROKER_SETTINGS.render(config)
}

#[cfg(test)]
mod tests;
