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
];

/// The exporter keys the name server takes too, declared in `ferrocket_metrics`.
pub(super) static PROM: &[Decl<BrokerConfig>] =
    ferrocket_metrics::prom_settings!(metrics, crate::METRICS_PROM_PORT_DEFAULT, "5557");
