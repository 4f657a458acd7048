//! One scrape's figures as plain data: the families a server's write
//! function emits, with every series' full labels. The push exporters
//! (OTLP and LOG) read these; `/metrics` encodes the same calls directly.

use crate::histogram::Histogram;
use prometheus_client::registry::Unit;

/// Label pairs, the common ones first.
pub type FullLabels = Vec<(String, String)>;

/// One metric family.
#[derive(Debug, Clone)]
pub struct Family {
    /// The name as written (`rocketmq_messages_in`): what OpenTelemetry
    /// instruments carry; Prometheus adds `_total` and the unit.
    pub name: String,
    pub help: String,
    pub unit: Option<Unit>,
    pub data: Data,
}

/// A family's series.
#[derive(Debug, Clone, PartialEq)]
pub enum Data {
    /// Monotonic, cumulative since the server started.
    Counter(Vec<(FullLabels, u64)>),
    Gauge(Vec<(FullLabels, i64)>),
    Histogram {
        /// Upper bounds; one more bucket holds +Inf.
        bounds: Vec<f64>,
        series: Vec<(FullLabels, Histogram)>,
    },
}

impl Family {
    /// How many series it has.
    pub fn len(&self) -> usize {
        match &self.data {
            Data::Counter(s) => s.len(),
            Data::Gauge(s) => s.len(),
            Data::Histogram { series, .. } => series.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The unit as RocketMQ's instruments name it (`bytes`, `milliseconds`).
pub fn unit_name(unit: Option<&Unit>) -> &str {
    unit.map_or("", Unit::as_str)
}
