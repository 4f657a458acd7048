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

/// `metricsExporterType`: Java's DISABLE(0), OTLP_GRPC(1), PROM(2), LOG(3).
/// Ferrocket serves PROM only; the other two are refused at start.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MetricsExporter {
    #[default]
    Disable,
    Prom,
}

impl MetricsExporter {
    /// Parses Java's names or ordinals; `Err` explains a refused one.
    pub fn parse(text: &str) -> Result<Self, String> {
        match text.trim().to_ascii_uppercase().as_str() {
            "DISABLE" | "0" | "" => Ok(Self::Disable),
            "PROM" | "2" => Ok(Self::Prom),
            "OTLP_GRPC" | "1" | "LOG" | "3" => Err(format!(
                "{text} is not supported by Ferrocket; use PROM (a Prometheus /metrics endpoint)"
            )),
            _ => Err("expected DISABLE, PROM, OTLP_GRPC or LOG".into()),
        }
    }
}

/// What `/metrics` serves and where.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
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
}

impl MetricsConfig {
    pub fn enabled(&self) -> bool {
        self.exporter == MetricsExporter::Prom
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
        assert!(MetricsExporter::parse("OTLP_GRPC")
            .unwrap_err()
            .contains("use PROM"));
        assert!(MetricsExporter::parse("nope").is_err());
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
