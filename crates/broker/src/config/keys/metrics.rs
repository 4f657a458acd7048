//! The broker's metrics settings, each declared once (see `keys`).

use super::*;

pub(super) static METRICS: &[Decl<BrokerConfig>] = &[
    decl!(
        "metricsGrpcExporterTarget",
        "(none)",
        start,
        "the collector's OTLP gRPC address, http://HOST:PORT",
        |c, _, s| c.metrics.grpc_target = s.value.trim().to_string(),
        |c| c.metrics.grpc_target.clone(),
    ),
    decl!(
        "metricsGrpcExporterHeader",
        "(none)",
        start,
        "gRPC metadata sent with each export",
        |c, k, s| c.metrics.grpc_headers =
            MetricsConfig::parse_headers(&s.value).map_err(|e| invalid(k, s, &e))?,
        |c| pairs(&c.metrics.grpc_headers),
    ),
    decl!(
        "metricGrpcExporterTimeOutInMills",
        "3000",
        start,
        "one export's deadline",
        |c, k, s| c.metrics.grpc_timeout_ms = positive(k, s)?,
        |c| c.metrics.grpc_timeout_ms.to_string(),
    ),
    decl!(
        "metricGrpcExporterIntervalInMills",
        "60000",
        start,
        "time between exports",
        |c, k, s| c.metrics.grpc_interval_ms = positive(k, s)?,
        |c| c.metrics.grpc_interval_ms.to_string(),
    ),
    decl!(
        "metricLoggingExporterIntervalInMills",
        "10000",
        start,
        "time between LOG writes",
        |c, k, s| c.metrics.log_interval_ms = positive(k, s)?,
        |c| c.metrics.log_interval_ms.to_string(),
    ),
    decl!(
        "metricsExporterType",
        "`DISABLE`",
        start,
        "DISABLE, PROM, OTLP_GRPC or LOG",
        |c, k, s| c.metrics.exporter =
            MetricsExporter::parse(&s.value).map_err(|e| invalid(k, s, &e))?,
        |c| c.metrics.exporter.name().to_string(),
    ),
    decl!(
        "metricsPromExporterHost",
        "",
        start,
        "host /metrics listens on; empty: brokerIP1, else the listen address",
        |c, _, s| c.metrics.prom_host = s.value.trim().to_string(),
        |c| c.metrics.prom_host.clone(),
    ),
    decl!(
        "metricsPromExporterPort",
        "5557",
        start,
        "port /metrics listens on; 0 picks a free port",
        |c, k, s| c.metrics.prom_port = Some(parse_value(k, s)?),
        |c| c
            .metrics
            .prom_port
            .unwrap_or(crate::METRICS_PROM_PORT_DEFAULT)
            .to_string(),
    ),
    decl!(
        "metricsLabel",
        "",
        start,
        "extra labels on every series, k1:v1,k2:v2",
        |c, k, s| c.metrics.labels =
            MetricsConfig::parse_labels(&s.value).map_err(|e| invalid(k, s, &e))?,
    ),
    decl!(
        "metricsInDelta",
        "`false`",
        start,
        "label every series aggregation=\"delta\", as Java does",
        |c, k, s| c.metrics.in_delta = parse_bool(k, s)?,
    ),
];
