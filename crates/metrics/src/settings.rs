//! The Prometheus exporter's keys, the same on the broker and the name
//! server: declared here once, for a config holding a [`MetricsConfig`]
//! in a field. `metricsExporterType` is each server's own (the name
//! server takes `PROM` only).
//!
//! [`MetricsConfig`]: crate::config::MetricsConfig

/// The declarations of `metricsPromExporterHost`, `metricsPromExporterPort`,
/// `metricsLabel` and `metricsInDelta` for a config whose `$field` is a
/// `MetricsConfig`, with the server's default port (a constant and its
/// text): `prom_settings!(metrics, METRICS_PROM_PORT_DEFAULT, "5557")`.
/// The caller depends on `ferrocket_runtime`.
#[macro_export]
macro_rules! prom_settings {
    ($field:ident, $port:expr, $port_text:literal) => {
        &[
            ::ferrocket_runtime::decl!(
                "metricsPromExporterHost",
                "",
                start,
                "host /metrics listens on; empty: the advertised, else the listen address",
                |c, _, s| c.$field.prom_host = s.value.trim().to_string(),
                |c| c.$field.prom_host.clone(),
            ),
            ::ferrocket_runtime::decl!(
                "metricsPromExporterPort",
                $port_text,
                start,
                "port /metrics listens on; 0 picks a free port",
                |c, k, s| c.$field.prom_port =
                    Some(::ferrocket_runtime::settings::parse_value(k, s)?),
                |c| c.$field.prom_port.unwrap_or($port).to_string(),
            ),
            ::ferrocket_runtime::decl!(
                "metricsLabel",
                "",
                start,
                "extra labels on every series, k1:v1,k2:v2",
                |c, k, s| c.$field.labels =
                    $crate::config::MetricsConfig::parse_labels(&s.value)
                        .map_err(|e| ::ferrocket_runtime::settings::invalid(k, s, &e))?,
            ),
            ::ferrocket_runtime::decl!(
                "metricsInDelta",
                "`false`",
                start,
                "label every series aggregation=\"delta\", as Java does",
                |c, k, s| c.$field.in_delta = ::ferrocket_runtime::settings::parse_bool(k, s)?,
            ),
        ]
    };
}
