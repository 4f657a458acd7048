//! The push exporters (`metricsExporterType=OTLP_GRPC` and `LOG`) on a
//! thread of their own: the server gathers its figures at each interval
//! and offers them here; the thread sends them to the collector (bounded
//! by `metricGrpcExporterTimeOutInMills`) or writes them to the log. A
//! slow or unreachable collector costs the server nothing but a skipped
//! export and a rate-limited warning.

use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};
use std::time::{Duration, Instant, SystemTime};

use opentelemetry_otlp::{MetricExporter, WithExportConfig, WithTonicConfig};
use opentelemetry_sdk::metrics::exporter::PushMetricExporter;
use opentelemetry_sdk::Resource;
use tonic::metadata::{MetadataKey, MetadataMap, MetadataValue};

use crate::config::{MetricsConfig, MetricsExporter};
use crate::family::{Data, Family};
use crate::otlp;

/// At most one warning about failed exports per this long.
const WARN_EVERY: Duration = Duration::from_secs(60);
/// Longest error text a warning quotes (the exporter's are debug dumps).
const ERROR_CHARS_MAX: usize = 300;
/// The log target of `LOG`'s lines.
pub const LOG_TARGET: &str = "ferrocket::metrics";

/// Takes gathered figures for the exporter thread.
#[derive(Debug)]
pub struct Pusher {
    to_thread: SyncSender<Vec<Family>>,
    /// How often the server should gather and offer.
    pub interval: Duration,
}

impl Pusher {
    /// Starts the exporter `config` asks for (`None` for DISABLE and PROM);
    /// `resource` goes with every OTLP export. `Err`: settings the exporter
    /// refuses (a bad target or header).
    pub fn start(
        config: &MetricsConfig,
        resource: &[(String, String)],
    ) -> Result<Option<Pusher>, String> {
        // One batch waits while one is exported; more are skipped.
        let (to_thread, from_server) = sync_channel::<Vec<Family>>(1);
        let interval_ms = match config.exporter {
            MetricsExporter::OtlpGrpc => {
                let sender = OtlpSender::new(config, otlp::resource(resource))?;
                spawn("metrics-otlp", move || sender.run(from_server))?;
                config.grpc_interval_ms
            }
            MetricsExporter::Log => {
                spawn("metrics-log", move || log_loop(from_server))?;
                config.log_interval_ms
            }
            MetricsExporter::Disable | MetricsExporter::Prom => return Ok(None),
        };
        Ok(Some(Pusher {
            to_thread,
            interval: Duration::from_millis(interval_ms),
        }))
    }

    /// Hands `families` to the thread; `false` when the last batch is
    /// still waiting (this one is dropped) or the thread is gone.
    pub fn offer(&self, families: Vec<Family>) -> bool {
        match self.to_thread.try_send(families) {
            Ok(()) => true,
            Err(TrySendError::Full(_)) => {
                tracing::debug!("metrics export still running; this interval's figures skipped");
                false
            }
            Err(TrySendError::Disconnected(_)) => false,
        }
    }
}

fn spawn(name: &str, body: impl FnOnce() + Send + 'static) -> Result<(), String> {
    std::thread::Builder::new()
        .name(name.into())
        .spawn(body)
        .map(drop)
        .map_err(|e| format!("cannot start the {name} thread: {e}"))
}

/// The OTLP side: a one-thread tokio runtime and the exporter's channel
/// (connected lazily, on the first export).
struct OtlpSender {
    runtime: tokio::runtime::Runtime,
    exporter: MetricExporter,
    resource: Resource,
    timeout: Duration,
    target: String,
    start: SystemTime,
}

impl OtlpSender {
    fn new(config: &MetricsConfig, resource: Resource) -> Result<Self, String> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| format!("metrics export runtime: {e}"))?;
        let timeout = Duration::from_millis(config.grpc_timeout_ms);
        let target = config.grpc_target.trim().to_string();
        let metadata = metadata(&config.grpc_headers)?;
        // The channel is made inside the runtime (tonic spawns its worker).
        let exporter = {
            let _inside = runtime.enter();
            MetricExporter::builder()
                .with_tonic()
                .with_endpoint(target.clone())
                .with_timeout(timeout)
                .with_metadata(metadata)
                .build()
                .map_err(|e| format!("metricsGrpcExporterTarget `{target}`: {e}"))?
        };
        Ok(Self {
            runtime,
            exporter,
            resource,
            timeout,
            target,
            start: SystemTime::now(),
        })
    }

    fn run(self, batches: Receiver<Vec<Family>>) {
        tracing::info!(target = %self.target, "exporting metrics over OTLP gRPC");
        let mut failures = Failures::default();
        while let Ok(families) = batches.recv() {
            let mut metrics =
                otlp::resource_metrics(&self.resource, &families, self.start, SystemTime::now());
            let exported = self.runtime.block_on(async {
                tokio::time::timeout(self.timeout, self.exporter.export(&mut metrics)).await
            });
            match exported {
                Ok(Ok(())) => failures.succeeded(&self.target),
                Ok(Err(e)) => failures.failed(&self.target, &e.to_string()),
                Err(_) => failures.failed(&self.target, "timed out"),
            }
        }
        if let Err(e) = self.exporter.shutdown() {
            tracing::debug!("metrics exporter shutdown: {e}");
        }
    }
}

fn metadata(headers: &[(String, String)]) -> Result<MetadataMap, String> {
    let mut map = MetadataMap::new();
    for (key, value) in headers {
        let bad = |what: &str| format!("metricsGrpcExporterHeader `{key}`: {what}");
        let key = MetadataKey::from_bytes(key.as_bytes()).map_err(|e| bad(&e.to_string()))?;
        let value = MetadataValue::try_from(value.as_str()).map_err(|e| bad(&e.to_string()))?;
        map.append(key, value);
    }
    Ok(map)
}

/// Failed exports, warned about at most once per [`WARN_EVERY`].
#[derive(Debug, Default)]
struct Failures {
    /// Failures since the last success.
    count: u64,
    last_warned: Option<Instant>,
}

impl Failures {
    fn failed(&mut self, target: &str, error: &str) {
        self.count += 1;
        let due = (self.last_warned).is_none_or(|at| at.elapsed() >= WARN_EVERY);
        if due {
            self.last_warned = Some(Instant::now());
            let error: String = error.chars().take(ERROR_CHARS_MAX).collect();
            tracing::warn!(
                target,
                failed_in_a_row = self.count,
                "metrics export to the OTLP collector failed: {error}"
            );
        }
    }

    fn succeeded(&mut self, target: &str) {
        if self.count > 0 {
            tracing::info!(target, "metrics export to the OTLP collector works again");
        }
        *self = Self::default();
    }
}

/// `LOG`: each batch to the log, a line per series.
fn log_loop(batches: Receiver<Vec<Family>>) {
    while let Ok(families) = batches.recv() {
        for family in &families {
            for line in lines(family) {
                tracing::info!(target: LOG_TARGET, "{line}");
            }
        }
    }
}

/// A family's series as log lines: `name{k="v",...} value`, a histogram
/// with its count, sum and per-bucket counts.
pub fn lines(family: &Family) -> Vec<String> {
    let name = &family.name;
    let series = |labels: &[(String, String)]| {
        let pairs: Vec<String> = (labels.iter()).map(|(k, v)| format!("{k}={v:?}")).collect();
        format!("{name}{{{}}}", pairs.join(","))
    };
    match &family.data {
        Data::Counter(all) => (all.iter())
            .map(|(labels, value)| format!("{} {value}", series(labels)))
            .collect(),
        Data::Gauge(all) => (all.iter())
            .map(|(labels, value)| format!("{} {value}", series(labels)))
            .collect(),
        Data::Histogram {
            bounds,
            series: all,
        } => (all.iter())
            .map(|(labels, histogram)| {
                let buckets: Vec<String> = (histogram.buckets(bounds).into_iter())
                    .map(|(le, n)| match le {
                        f64::MAX => format!("+Inf:{n}"),
                        le => format!("{le}:{n}"),
                    })
                    .collect();
                format!(
                    "{} count={} sum={} buckets=[{}]",
                    series(labels),
                    histogram.count,
                    histogram.sum,
                    buckets.join(",")
                )
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::histogram::{Histogram, MESSAGE_SIZE_BOUNDS};

    #[test]
    fn log_lines_name_every_series() {
        let labels = vec![("topic".to_string(), "T\"1".to_string())];
        let counter = Family {
            name: "rocketmq_messages_in".into(),
            help: String::new(),
            unit: None,
            data: Data::Counter(vec![(labels.clone(), 3)]),
        };
        assert_eq!(
            lines(&counter),
            vec![r#"rocketmq_messages_in{topic="T\"1"} 3"#.to_string()]
        );
        let mut sizes = Histogram::default();
        sizes.observe(MESSAGE_SIZE_BOUNDS, 10.0);
        let histogram = Family {
            name: "rocketmq_message_size".into(),
            help: String::new(),
            unit: None,
            data: Data::Histogram {
                bounds: MESSAGE_SIZE_BOUNDS.to_vec(),
                series: vec![(labels, sizes)],
            },
        };
        let line = &lines(&histogram)[0];
        assert!(line.contains("count=1 sum=10 buckets=[1024:1,"), "{line}");
        assert!(line.ends_with("+Inf:0]"), "{line}");
    }

    #[test]
    fn failures_warn_once_a_minute_and_reset_on_success() {
        let mut failures = Failures::default();
        failures.failed("t", "down");
        let first = failures.last_warned;
        failures.failed("t", "down");
        assert_eq!(failures.last_warned, first, "no second warning at once");
        assert_eq!(failures.count, 2);
        failures.succeeded("t");
        assert_eq!(failures.count, 0);
    }

    #[test]
    fn bad_headers_are_refused() {
        assert!(metadata(&[("ok".into(), "v".into())]).is_ok());
        assert!(metadata(&[("bad key".into(), "v".into())]).is_err());
    }
}
