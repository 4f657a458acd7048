//! OpenMetrics text written with the `prometheus-client` crate's encoder
//! from figures gathered at scrape time: families of counters, gauges and
//! fixed-bucket histograms, each series with the server's common labels
//! first. Names follow what RocketMQ 5.1.4+ exposes through OpenTelemetry's
//! Prometheus exporter: the encoder adds `_total` to counters, and a unit
//! given to a family becomes a suffix (`rocketmq_rpc_latency_milliseconds`).

use std::fmt;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;
pub use prometheus_client::registry::Unit;

use crate::family::{Data, Family, FullLabels};
use crate::histogram::Histogram;

/// The exposition's content type.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// One series' own labels.
pub type Labels = Vec<(&'static str, String)>;

/// Writes one scrape's families from `T`.
pub type WriteFamilies<T> = fn(&mut Writer<'_, '_>, &T) -> fmt::Result;

/// The whole exposition of `data`, written by `write`, every series
/// carrying `common` labels first.
pub fn render<T: fmt::Debug + Send + Sync + 'static>(
    data: T,
    common: Vec<(String, String)>,
    write: WriteFamilies<T>,
) -> String {
    let mut registry = Registry::default();
    registry.register_collector(Box::new(Families {
        data,
        common,
        write,
    }));
    let mut out = String::new();
    // Writing into a String cannot fail.
    prometheus_client::encoding::text::encode(&mut out, &registry).expect("encoding into a String");
    out
}

/// The same families as plain data (for the push exporters): what
/// [`render`] would write, every series with `common` labels first.
pub fn collect<T>(data: &T, common: &[(String, String)], write: WriteFamilies<T>) -> Vec<Family> {
    let mut families = Vec::new();
    let mut writer = Writer {
        sink: Sink::Collect(&mut families),
        common,
    };
    // Collecting into a Vec cannot fail.
    write(&mut writer, data).expect("collecting families");
    families
}

struct Families<T> {
    data: T,
    common: Vec<(String, String)>,
    write: WriteFamilies<T>,
}

impl<T: fmt::Debug> fmt::Debug for Families<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Families")
            .field("data", &self.data)
            .finish()
    }
}

impl<T: fmt::Debug + Send + Sync + 'static> Collector for Families<T> {
    fn encode(&self, mut encoder: DescriptorEncoder) -> fmt::Result {
        let mut writer = Writer {
            sink: Sink::Prom(&mut encoder),
            common: &self.common,
        };
        (self.write)(&mut writer, &self.data)
    }
}

/// Writes families with the common labels on every series: encoded for
/// `/metrics`, or collected as [`Family`] data for the push exporters.
pub struct Writer<'a, 'b> {
    sink: Sink<'a, 'b>,
    common: &'a [(String, String)],
}

enum Sink<'a, 'b> {
    Prom(&'a mut DescriptorEncoder<'b>),
    Collect(&'a mut Vec<Family>),
}

impl<'b> Writer<'_, 'b> {
    /// The common labels, then the series' own; values escaped for the
    /// text format (the crate's encoder writes them as given).
    fn full(&self, labels: Labels) -> FullLabels {
        let escaped = matches!(self.sink, Sink::Prom(_));
        let value = |v: &str| if escaped { escape(v) } else { v.to_string() };
        // A series' own label wins over a common one of the same name: a
        // label twice would make Prometheus refuse the whole scrape.
        let mut all: FullLabels = (self.common.iter())
            .filter(|(k, _)| !labels.iter().any(|(own, _)| own == k))
            .map(|(k, v)| (k.clone(), value(v)))
            .collect();
        all.extend(labels.into_iter().map(|(k, v)| (k.to_string(), value(&v))));
        all
    }

    fn collecting(&self) -> bool {
        matches!(self.sink, Sink::Collect(_))
    }

    /// Keeps the family (when collecting).
    fn push(&mut self, name: &str, help: &str, unit: Option<Unit>, data: Data) -> fmt::Result {
        if let Sink::Collect(families) = &mut self.sink {
            families.push(Family {
                name: name.to_string(),
                help: help.to_string(),
                unit,
                data,
            });
        }
        Ok(())
    }

    fn encoder(&mut self) -> &mut DescriptorEncoder<'b> {
        match &mut self.sink {
            Sink::Prom(encoder) => encoder,
            Sink::Collect(_) => unreachable!("collected families are never encoded"),
        }
    }

    pub fn counter(&mut self, name: &str, help: &str, series: Vec<(Labels, u64)>) -> fmt::Result {
        let full: Vec<_> = series.into_iter().map(|(l, v)| (self.full(l), v)).collect();
        if self.collecting() {
            return self.push(name, help, None, Data::Counter(full));
        }
        let mut metric = self
            .encoder()
            .encode_descriptor(name, help, None, MetricType::Counter)?;
        for (labels, value) in &full {
            let mut family = metric.encode_family(labels)?;
            family.encode_counter::<NoLabelSet, u64, f64>(value, None)?;
        }
        Ok(())
    }

    pub fn gauge(
        &mut self,
        name: &str,
        help: &str,
        unit: Option<Unit>,
        series: Vec<(Labels, i64)>,
    ) -> fmt::Result {
        let full: Vec<_> = series.into_iter().map(|(l, v)| (self.full(l), v)).collect();
        if self.collecting() {
            return self.push(name, help, unit, Data::Gauge(full));
        }
        let mut metric =
            self.encoder()
                .encode_descriptor(name, help, unit.as_ref(), MetricType::Gauge)?;
        for (labels, value) in &full {
            metric.encode_family(labels)?.encode_gauge(value)?;
        }
        Ok(())
    }

    pub fn histogram(
        &mut self,
        name: &str,
        help: &str,
        unit: Option<Unit>,
        bounds: &[f64],
        series: Vec<(Labels, Histogram)>,
    ) -> fmt::Result {
        let full: Vec<_> = series.into_iter().map(|(l, h)| (self.full(l), h)).collect();
        if self.collecting() {
            let bounds = bounds.to_vec();
            return self.push(
                name,
                help,
                unit,
                Data::Histogram {
                    bounds,
                    series: full,
                },
            );
        }
        let mut metric =
            self.encoder()
                .encode_descriptor(name, help, unit.as_ref(), MetricType::Histogram)?;
        for (labels, histogram) in &full {
            let buckets = histogram.buckets(bounds);
            let mut family = metric.encode_family(labels)?;
            family.encode_histogram::<NoLabelSet>(
                histogram.sum,
                histogram.count,
                &buckets,
                None,
            )?;
        }
        Ok(())
    }
}

/// A label value as the text format needs it: `\\`, `\"` and `\n` escaped.
fn escape(value: &str) -> String {
    if !value.contains(['\\', '"', '\n']) {
        return value.to_string();
    }
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// The unit RocketMQ gives its latencies.
pub fn milliseconds() -> Option<Unit> {
    Some(Unit::Other("milliseconds".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(w: &mut Writer<'_, '_>, value: &u64) -> fmt::Result {
        w.counter(
            "demo_requests",
            "Requests",
            vec![(vec![("path", "/a\"b".into())], *value)],
        )?;
        w.gauge("demo_size", "Size", Some(Unit::Bytes), vec![(vec![], 7)])
    }

    #[test]
    fn families_carry_common_labels_suffixes_and_escapes() {
        let text = render(3u64, vec![("env".into(), "x\ny".into())], write);
        assert!(text.contains("# TYPE demo_requests counter"), "{text}");
        assert!(
            text.contains(r#"demo_requests_total{env="x\ny",path="/a\"b"} 3"#),
            "{text}"
        );
        assert!(text.contains(r#"demo_size_bytes{env="x\ny"} 7"#), "{text}");
        assert!(text.ends_with("# EOF\n"));
    }

    #[test]
    fn collected_families_carry_names_and_unescaped_labels() {
        let families = collect(&3u64, &[("env".into(), "x\ny".into())], write);
        assert_eq!(families.len(), 2);
        assert_eq!(families[0].name, "demo_requests");
        let Data::Counter(series) = &families[0].data else {
            panic!("a counter: {families:?}");
        };
        let labels = vec![
            ("env".into(), "x\ny".into()),
            ("path".into(), "/a\"b".into()),
        ];
        assert_eq!(series, &vec![(labels, 3)]);
        assert_eq!(crate::family::unit_name(families[1].unit.as_ref()), "bytes");
    }
}
