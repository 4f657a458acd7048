//! The exporter's settings, by RocketMQ 5's `BrokerConfig` names (the
//! name server takes the same keys).

use std::net::{IpAddr, SocketAddr};

/// `metricsPromExporterPort`'s default on a broker (and proxy), as Java's.
pub const METRICS_PROM_PORT_DEFAULT: u16 = 5557;
/// The name server's default (Java's exports nothing): one more, so a
/// broker and a name server on one host (`ferrocket start`) both fit.
pub const NAMESRV_METRICS_PROM_PORT_DEFAULT: u16 = 5558;
/// Most `metricsLabel` pairs (each is added to every series).
pub const METRICS_LABELS_MAX: usize = 16;

/// `metricGrpcExporterTimeOutInMills`'s default, as Java's.
pub const GRPC_TIMEOUT_MS_DEFAULT: u64 = 3_000;
/// `metricGrpcExporterIntervalInMills`'s default, as Java's.
pub const GRPC_INTERVAL_MS_DEFAULT: u64 = 60_000;
/// `metricLoggingExporterIntervalInMills`'s default, as Java's.
pub const LOG_INTERVAL_MS_DEFAULT: u64 = 10_000;
/// Shortest export interval taken (a smaller one is refused at start).
pub const EXPORT_INTERVAL_MS_MIN: u64 = 100;
/// Most `metricsGrpcExporterHeader` pairs.
pub const GRPC_HEADERS_MAX: usize = 16;

/// `metricsExporterType`: Java's DISABLE(0), OTLP_GRPC(1), PROM(2), LOG(3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MetricsExporter {
    #[default]
    Disable,
    /// Pushes to an OpenTelemetry collector (`metricsGrpcExporterTarget`).
    OtlpGrpc,
    /// Serves `/metrics` for Prometheus.
    Prom,
    /// Writes the metrics to the server's log.
    Log,
}

impl MetricsExporter {
    /// Parses Java's names or ordinals; `Err` explains a refused one.
    pub fn parse(text: &str) -> Result<Self, String> {
        match text.trim().to_ascii_uppercase().as_str() {
            "DISABLE" | "0" | "" => Ok(Self::Disable),
            "OTLP_GRPC" | "1" => Ok(Self::OtlpGrpc),
            "PROM" | "2" => Ok(Self::Prom),
            "LOG" | "3" => Ok(Self::Log),
            _ => Err("expected DISABLE, OTLP_GRPC, PROM or LOG".into()),
        }
    }

    /// Java's name.
    pub fn name(self) -> &'static str {
        match self {
            Self::Disable => "DISABLE",
            Self::OtlpGrpc => "OTLP_GRPC",
            Self::Prom => "PROM",
            Self::Log => "LOG",
        }
    }
}

/// Which exporter runs, and its settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetricsConfig {
    /// `metricsExporterType`.
    pub exporter: MetricsExporter,
    /// `metricsPromExporterHost`; empty: `brokerIP1`, else the broker's
    /// listen address (Java binds brokerIP1).
    pub prom_host: String,
    /// `metricsPromExporterPort`; 0 picks a free port (tests).
    pub prom_port: Option<u16>,
    /// `metricsLabel` (`k1:v1,k2:v2`): extra labels on every series.
    pub labels: Vec<(String, String)>,
    /// `metricsInDelta`: Java then labels every series
    /// `aggregation="delta"` (its Prometheus reader stays cumulative).
    pub in_delta: bool,
    /// `metricsGrpcExporterTarget`: the collector, `http://host:port`.
    pub grpc_target: String,
    /// `metricsGrpcExporterHeader` (`k1:v1,k2:v2`): gRPC metadata sent
    /// with every export.
    pub grpc_headers: Vec<(String, String)>,
    /// `metricGrpcExporterTimeOutInMills`: one export's deadline.
    pub grpc_timeout_ms: u64,
    /// `metricGrpcExporterIntervalInMills`: time between exports.
    pub grpc_interval_ms: u64,
    /// `metricLoggingExporterIntervalInMills`: time between `LOG` writes.
    pub log_interval_ms: u64,
}

impl Default for MetricsConfig {
    fn default() -> Self {
        Self {
            exporter: MetricsExporter::Disable,
            prom_host: String::new(),
            prom_port: None,
            labels: Vec::new(),
            in_delta: false,
            grpc_target: String::new(),
            grpc_headers: Vec::new(),
            grpc_timeout_ms: GRPC_TIMEOUT_MS_DEFAULT,
            grpc_interval_ms: GRPC_INTERVAL_MS_DEFAULT,
            log_interval_ms: LOG_INTERVAL_MS_DEFAULT,
        }
    }
}

impl MetricsConfig {
    /// Whether `/metrics` is served (`PROM`).
    pub fn enabled(&self) -> bool {
        self.exporter == MetricsExporter::Prom
    }

    /// Rejects an exporter the server could not run: `OTLP_GRPC` without a
    /// plain-HTTP target (Java logs an error and exports nothing), or an
    /// interval or timeout too small to be meant.
    pub fn validate(&self) -> Result<(), String> {
        match self.exporter {
            MetricsExporter::OtlpGrpc => {
                check_target(&self.grpc_target)?;
                if self.grpc_timeout_ms == 0 {
                    return Err("metricGrpcExporterTimeOutInMills must be positive".into());
                }
                check_interval("metricGrpcExporterIntervalInMills", self.grpc_interval_ms)
            }
            MetricsExporter::Log => {
                check_interval("metricLoggingExporterIntervalInMills", self.log_interval_ms)
            }
            MetricsExporter::Disable | MetricsExporter::Prom => Ok(()),
        }
    }

    /// Parses `metricsGrpcExporterHeader`: comma-separated `key:value`
    /// pairs (gRPC metadata; the key is lower-cased on the wire).
    pub fn parse_headers(text: &str) -> Result<Vec<(String, String)>, String> {
        let mut headers = Vec::new();
        for pair in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let Some((key, value)) = pair.split_once(':') else {
                return Err(format!("`{pair}` is not key:value"));
            };
            let key = key.trim();
            let key_ok = !key.is_empty()
                && (key.bytes()).all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b));
            if !key_ok || key.ends_with("-bin") {
                return Err(format!("`{key}` is not an ASCII gRPC metadata key"));
            }
            let value = value.trim();
            if !value.bytes().all(|b| (0x20..0x7f).contains(&b)) {
                return Err(format!("the value of `{key}` is not printable ASCII"));
            }
            headers.push((key.to_ascii_lowercase(), value.to_string()));
        }
        if headers.len() > GRPC_HEADERS_MAX {
            return Err(format!("at most {GRPC_HEADERS_MAX} headers"));
        }
        Ok(headers)
    }

    /// Where `/metrics` listens: the host as Java picks it (the set host,
    /// else `advertised` — a broker's brokerIP1 —, else the server's listen
    /// address), the set port or `default_port`.
    pub fn listen(
        &self,
        advertised: &str,
        listen_addr: IpAddr,
        default_port: u16,
    ) -> Result<SocketAddr, String> {
        let host = [self.prom_host.trim(), advertised.trim()]
            .into_iter()
            .find(|h| !h.is_empty());
        let ip = match host {
            Some(host) => host
                .parse::<IpAddr>()
                .map_err(|_| format!("metricsPromExporterHost `{host}` is not an IP address"))?,
            None => listen_addr,
        };
        Ok(SocketAddr::new(ip, self.prom_port.unwrap_or(default_port)))
    }

    /// Parses `metricsLabel`: comma-separated `key:value` pairs with
    /// Prometheus label names.
    pub fn parse_labels(text: &str) -> Result<Vec<(String, String)>, String> {
        let mut labels = Vec::new();
        for pair in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let Some((key, value)) = pair.split_once(':') else {
                return Err(format!("`{pair}` is not key:value"));
            };
            let key = key.trim();
            if !is_label_name(key) {
                return Err(format!("`{key}` is not a Prometheus label name"));
            }
            if RESERVED_LABELS.contains(&key) {
                return Err(format!(
                    "`{key}` is a label the server sets itself ({})",
                    RESERVED_LABELS.join(", ")
                ));
            }
            labels.push((key.to_string(), value.trim().to_string()));
        }
        if labels.len() > METRICS_LABELS_MAX {
            return Err(format!("at most {METRICS_LABELS_MAX} labels"));
        }
        Ok(labels)
    }
}

fn check_target(target: &str) -> Result<(), String> {
    let target = target.trim();
    if target.is_empty() {
        return Err(
            "metricsExporterType=OTLP_GRPC needs metricsGrpcExporterTarget \
                    (http://HOST:PORT of an OpenTelemetry collector)"
                .into(),
        );
    }
    let Some(rest) = target.strip_prefix("http://") else {
        return Err(format!(
            "metricsGrpcExporterTarget `{target}`: Ferrocket exports over plain HTTP/2 only; \
             write http://HOST:PORT (TLS to the collector is not supported)"
        ));
    };
    let authority = rest.trim_end_matches('/');
    if authority.is_empty() || authority.contains(['/', ' ', '?', '#']) {
        return Err(format!(
            "metricsGrpcExporterTarget `{target}` is not http://HOST:PORT"
        ));
    }
    Ok(())
}

fn check_interval(key: &str, ms: u64) -> Result<(), String> {
    if ms < EXPORT_INTERVAL_MS_MIN {
        return Err(format!("{key} {ms} is below {EXPORT_INTERVAL_MS_MIN} ms"));
    }
    Ok(())
}

/// Labels the servers set on their series, which `metricsLabel` may not.
const RESERVED_LABELS: &[&str] = &[
    "cluster",
    "node_type",
    "node_id",
    "aggregation",
    "le",
    "quantile",
    "shard",
    "topic",
    "consumer_group",
];

/// `[a-zA-Z_][a-zA-Z0-9_]*`, not starting with `__` (reserved).
fn is_label_name(name: &str) -> bool {
    let mut chars = name.chars();
    let first_ok = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
    first_ok && !name.starts_with("__") && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exporter_types_parse_as_java_names_them() {
        assert_eq!(MetricsExporter::parse("PROM"), Ok(MetricsExporter::Prom));
        assert_eq!(MetricsExporter::parse("2"), Ok(MetricsExporter::Prom));
        assert_eq!(
            MetricsExporter::parse("disable"),
            Ok(MetricsExporter::Disable)
        );
        assert_eq!(
            MetricsExporter::parse("OTLP_GRPC"),
            Ok(MetricsExporter::OtlpGrpc)
        );
        assert_eq!(MetricsExporter::parse("3"), Ok(MetricsExporter::Log));
        assert!(MetricsExporter::parse("nope").is_err());
    }

    #[test]
    fn otlp_needs_a_plain_http_target() {
        let mut config = MetricsConfig {
            exporter: MetricsExporter::OtlpGrpc,
            ..MetricsConfig::default()
        };
        assert!(config.validate().unwrap_err().contains("needs"));
        config.grpc_target = "collector:4317".into();
        assert!(config.validate().unwrap_err().contains("plain HTTP/2"));
        config.grpc_target = "http://collector:4317".into();
        assert_eq!(config.validate(), Ok(()));
        config.grpc_interval_ms = 10;
        assert!(config.validate().is_err());
    }

    #[test]
    fn headers_are_checked() {
        assert_eq!(
            MetricsConfig::parse_headers("Authorization:Bearer x, team : a").unwrap(),
            vec![
                ("authorization".into(), "Bearer x".into()),
                ("team".into(), "a".into())
            ]
        );
        assert!(MetricsConfig::parse_headers("novalue").is_err());
        assert!(MetricsConfig::parse_headers("bad key:v").is_err());
    }

    #[test]
    fn labels_are_checked() {
        assert_eq!(
            MetricsConfig::parse_labels("env:prod, dc : east").unwrap(),
            vec![("env".into(), "prod".into()), ("dc".into(), "east".into())]
        );
        assert!(MetricsConfig::parse_labels("env").is_err());
        assert!(MetricsConfig::parse_labels("1x:y").is_err());
        assert!(MetricsConfig::parse_labels("__name__:y").is_err());
        assert!(MetricsConfig::parse_labels("cluster:y").is_err());
    }

    #[test]
    fn host_is_chosen_as_java_does() {
        let local: IpAddr = "127.0.0.1".parse().unwrap();
        let config = MetricsConfig::default();
        assert_eq!(
            config.listen("", local, 5557).unwrap().to_string(),
            "127.0.0.1:5557"
        );
        assert_eq!(
            config
                .listen("10.0.0.5", local, 5557)
                .unwrap()
                .ip()
                .to_string(),
            "10.0.0.5"
        );
        let explicit = MetricsConfig {
            prom_host: "0.0.0.0".into(),
            prom_port: Some(9000),
            ..MetricsConfig::default()
        };
        assert_eq!(
            explicit
                .listen("10.0.0.5", local, 5557)
                .unwrap()
                .to_string(),
            "0.0.0.0:9000"
        );
        let bad = MetricsConfig {
            prom_host: "nohost".into(),
            ..MetricsConfig::default()
        };
        assert!(bad.listen("", local, 5557).is_err());
    }
}
