//! `rocketmq_rpc_latency` (`RemotingMetricsManager`): every request's time
//! from read to answer, by request and response code.

use std::fmt;
use std::time::Duration;

use ferrocket_protocol::codes::{request_code_name, response_code_name};
use foldhash::HashMap;

use crate::exposition::{milliseconds, Labels, Writer};
use crate::histogram::{Histogram, RPC_LATENCY_MS_BOUNDS};

/// Most (request, response) series one map keeps; later new pairs are
/// counted in `dropped` only (a client may send any request code).
pub const RPC_SERIES_MAX: usize = 4_096;

/// One series.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RpcKey {
    pub request_code: i32,
    pub response_code: i32,
    pub oneway: bool,
}

/// `request_code` / `response_code` values (`RemotingHelper`): the
/// lower-cased constant name, or the number for a code without one.
pub fn code_labels(request: i32, response: i32) -> (String, String) {
    (
        label(request_code_name(request), request),
        label(response_code_name(response), response),
    )
}

fn label(name: &str, code: i32) -> String {
    if name == "UNKNOWN" {
        code.to_string()
    } else {
        name.to_ascii_lowercase()
    }
}

/// The latency histograms of one executor (or, merged, of a server).
#[derive(Debug, Clone, Default)]
pub struct RpcLatencies {
    pub series: HashMap<RpcKey, Histogram>,
    /// Observations that found no room for a new series.
    pub dropped: u64,
}

impl RpcLatencies {
    pub fn observe(&mut self, key: RpcKey, elapsed: Duration) {
        let elapsed_ms = elapsed.as_secs_f64() * 1_000.0;
        if let Some(histogram) = self.series.get_mut(&key) {
            histogram.observe(RPC_LATENCY_MS_BOUNDS, elapsed_ms);
            return;
        }
        if self.series.len() >= RPC_SERIES_MAX {
            self.dropped += 1;
            return;
        }
        let mut histogram = Histogram::default();
        histogram.observe(RPC_LATENCY_MS_BOUNDS, elapsed_ms);
        self.series.insert(key, histogram);
    }

    pub fn merge(&mut self, other: &RpcLatencies) {
        for (key, theirs) in &other.series {
            self.series.entry(*key).or_default().merge(theirs);
        }
        self.dropped += other.dropped;
    }

    /// The family, with the codes' names ([`code_labels`]).
    pub fn write(&self, w: &mut Writer<'_, '_>) -> fmt::Result {
        let series = self
            .series
            .iter()
            .map(|(key, histogram)| {
                let (request, response) = code_labels(key.request_code, key.response_code);
                let result = if key.oneway { "oneway" } else { "success" };
                let labels: Labels = vec![
                    ("protocol_type", "remoting".to_string()),
                    ("request_code", request),
                    ("response_code", response),
                    ("result", result.to_string()),
                ];
                (labels, *histogram)
            })
            .collect();
        w.histogram(
            "rocketmq_rpc_latency",
            "Rpc latency",
            milliseconds(),
            RPC_LATENCY_MS_BOUNDS,
            series,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_named_as_java_names_them() {
        assert_eq!(
            code_labels(310, 0),
            ("send_message_v2".into(), "success".into())
        );
        assert_eq!(code_labels(987_654, -5).0, "987654");
    }

    #[test]
    fn new_series_past_the_cap_are_counted_as_dropped() {
        let mut rpc = RpcLatencies::default();
        for code in 0..RPC_SERIES_MAX as i32 + 2 {
            let key = RpcKey {
                request_code: code,
                response_code: 0,
                oneway: false,
            };
            rpc.observe(key, Duration::from_millis(2));
        }
        assert_eq!(rpc.series.len(), RPC_SERIES_MAX);
        assert_eq!(rpc.dropped, 2);
    }
}
