//! A scrape's [`Family`] data in the OpenTelemetry SDK's metric model, as
//! its OTLP exporter takes it: counters as monotonic cumulative sums,
//! gauges, and explicit-bucket histograms with RocketMQ's bounds. The names
//! and units are the instruments' (`rocketmq_messages_in`,
//! `rocketmq_rpc_latency` in `milliseconds`); every series' labels become
//! the data point's attributes, as Java's broker sends them.

use std::borrow::Cow;
use std::time::SystemTime;

use opentelemetry::{InstrumentationScope, KeyValue};
use opentelemetry_sdk::metrics::data::{
    Aggregation, Gauge, GaugeDataPoint, Histogram, HistogramDataPoint, Metric, ResourceMetrics,
    ScopeMetrics, Sum, SumDataPoint,
};
use opentelemetry_sdk::metrics::Temporality;
use opentelemetry_sdk::Resource;

use crate::family::{unit_name, Data, Family, FullLabels};

/// The meter's name, as Java's broker names it.
pub const SCOPE_NAME: &str = "broker-meter";

/// The resource every export carries.
pub fn resource(attributes: &[(String, String)]) -> Resource {
    let pairs = attributes
        .iter()
        .map(|(k, v)| KeyValue::new(k.clone(), v.clone()));
    Resource::builder_empty().with_attributes(pairs).build()
}

/// One export: `families` as of `now`, cumulative since `start`.
pub fn resource_metrics(
    resource: &Resource,
    families: &[Family],
    start: SystemTime,
    now: SystemTime,
) -> ResourceMetrics {
    let metrics = (families.iter())
        .filter(|f| !f.is_empty())
        .map(|family| Metric {
            name: Cow::Owned(family.name.clone()),
            description: Cow::Owned(family.help.clone()),
            unit: Cow::Owned(unit_name(family.unit.as_ref()).to_string()),
            data: data(&family.data, start, now),
        })
        .collect();
    let scope = InstrumentationScope::builder(SCOPE_NAME)
        .with_version(env!("CARGO_PKG_VERSION"))
        .build();
    ResourceMetrics {
        resource: resource.clone(),
        scope_metrics: vec![ScopeMetrics { scope, metrics }],
    }
}

fn data(data: &Data, start: SystemTime, now: SystemTime) -> Box<dyn Aggregation> {
    match data {
        Data::Counter(series) => Box::new(Sum {
            data_points: (series.iter())
                .map(|(labels, value)| SumDataPoint {
                    attributes: attributes(labels),
                    value: *value,
                    exemplars: Vec::new(),
                })
                .collect(),
            start_time: start,
            time: now,
            temporality: Temporality::Cumulative,
            is_monotonic: true,
        }),
        Data::Gauge(series) => Box::new(Gauge {
            data_points: (series.iter())
                .map(|(labels, value)| GaugeDataPoint {
                    attributes: attributes(labels),
                    value: *value,
                    exemplars: Vec::new(),
                })
                .collect(),
            start_time: None,
            time: now,
        }),
        Data::Histogram { bounds, series } => Box::new(Histogram {
            data_points: (series.iter())
                .map(|(labels, histogram)| HistogramDataPoint {
                    attributes: attributes(labels),
                    count: histogram.count,
                    bounds: bounds.clone(),
                    bucket_counts: (histogram.buckets(bounds).into_iter())
                        .map(|(_, n)| n)
                        .collect(),
                    min: None,
                    max: None,
                    sum: histogram.sum,
                    exemplars: Vec::new(),
                })
                .collect(),
            start_time: start,
            time: now,
            temporality: Temporality::Cumulative,
        }),
    }
}

fn attributes(labels: &FullLabels) -> Vec<KeyValue> {
    (labels.iter())
        .map(|(k, v)| KeyValue::new(k.clone(), v.clone()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::histogram::{Histogram as Buckets, RPC_LATENCY_MS_BOUNDS};

    #[test]
    fn families_become_sums_gauges_and_histograms() {
        let labels: FullLabels = vec![("topic".into(), "T".into())];
        let mut latency = Buckets::default();
        latency.observe(RPC_LATENCY_MS_BOUNDS, 2.0);
        let families = vec![
            Family {
                name: "rocketmq_messages_in".into(),
                help: "in".into(),
                unit: None,
                data: Data::Counter(vec![(labels.clone(), 5)]),
            },
            Family {
                name: "rocketmq_rpc_latency".into(),
                help: "rpc".into(),
                unit: crate::exposition::milliseconds(),
                data: Data::Histogram {
                    bounds: RPC_LATENCY_MS_BOUNDS.to_vec(),
                    series: vec![(labels, latency)],
                },
            },
            Family {
                name: "empty".into(),
                help: String::new(),
                unit: None,
                data: Data::Gauge(Vec::new()),
            },
        ];
        let now = SystemTime::now();
        let rm = resource_metrics(&resource(&[]), &families, now, now);
        let metrics = &rm.scope_metrics[0].metrics;
        assert_eq!(metrics.len(), 2, "empty families are left out");
        let sum = metrics[0].data.as_any().downcast_ref::<Sum<u64>>().unwrap();
        assert_eq!(sum.data_points[0].value, 5);
        assert_eq!(metrics[1].unit, "milliseconds");
        let any = metrics[1].data.as_any();
        let histogram = any.downcast_ref::<Histogram<f64>>().unwrap();
        let point = &histogram.data_points[0];
        assert_eq!(point.bucket_counts.len(), point.bounds.len() + 1);
        assert_eq!(point.bucket_counts[1], 1);
    }
}
