//! Latency histograms (HDR, nanosecond values) and their summaries.
//!
//! Values are recorded in nanoseconds with 3 significant digits; anything
//! above [`LATENCY_NS_MAX`] is clamped to it (and still counted), so a stuck
//! request shows up as a huge max rather than vanishing.

use hdrhistogram::Histogram;
use serde::Serialize;

/// Smallest latency told apart from zero: 100 ns.
pub const LATENCY_NS_LOW: u64 = 100;
/// Largest latency recorded exactly: 60 s (larger values are clamped).
pub const LATENCY_NS_MAX: u64 = 60_000_000_000;
/// Significant decimal digits kept by every histogram.
pub const SIGNIFICANT_DIGITS: u8 = 3;

/// A latency histogram in nanoseconds.
#[derive(Debug, Clone)]
pub struct LatencyHistogram {
    inner: Histogram<u64>,
}

impl Default for LatencyHistogram {
    fn default() -> Self {
        Self::new()
    }
}

impl LatencyHistogram {
    pub fn new() -> Self {
        // The bounds are constants that satisfy the crate's preconditions
        // (low >= 1, high >= 2 * low, digits <= 5): failing is a bug here.
        match Histogram::new_with_bounds(LATENCY_NS_LOW, LATENCY_NS_MAX, SIGNIFICANT_DIGITS) {
            Ok(inner) => Self { inner },
            Err(error) => panic!("constant histogram bounds rejected: {error:?}"),
        }
    }

    /// Records one latency (clamped into the histogram's range).
    pub fn record_ns(&mut self, latency_ns: u64) {
        let value = latency_ns.clamp(LATENCY_NS_LOW, LATENCY_NS_MAX);
        self.inner.saturating_record(value);
    }

    pub fn len(&self) -> u64 {
        self.inner.len()
    }

    pub fn is_empty(&self) -> bool {
        self.inner.is_empty()
    }

    /// Adds every value of `other`.
    pub fn merge(&mut self, other: &LatencyHistogram) {
        // Same bounds on both sides, so adding cannot fail; if it ever did,
        // fall back to re-recording each bucket.
        if self.inner.add(&other.inner).is_err() {
            for value in other.inner.iter_recorded() {
                self.inner
                    .saturating_record_n(value.value_iterated_to(), value.count_at_value());
            }
        }
    }

    pub fn reset(&mut self) {
        self.inner.reset();
    }

    /// Latency at `percentile` (0..=100) in nanoseconds; 0 when empty.
    pub fn percentile_ns(&self, percentile: f64) -> u64 {
        if self.is_empty() {
            return 0;
        }
        self.inner.value_at_percentile(percentile)
    }

    pub fn max_ns(&self) -> u64 {
        if self.is_empty() {
            0
        } else {
            self.inner.max()
        }
    }

    pub fn min_ns(&self) -> u64 {
        if self.is_empty() {
            0
        } else {
            self.inner.min()
        }
    }

    pub fn mean_ns(&self) -> f64 {
        if self.is_empty() {
            0.0
        } else {
            self.inner.mean()
        }
    }

    /// The summary printed in tables and written to JSON.
    pub fn summary(&self) -> LatencySummary {
        let us = |ns: u64| ns as f64 / 1_000.0;
        LatencySummary {
            count: self.len(),
            min_us: us(self.min_ns()),
            mean_us: self.mean_ns() / 1_000.0,
            p50_us: us(self.percentile_ns(50.0)),
            p90_us: us(self.percentile_ns(90.0)),
            p99_us: us(self.percentile_ns(99.0)),
            p999_us: us(self.percentile_ns(99.9)),
            p9999_us: us(self.percentile_ns(99.99)),
            max_us: us(self.max_ns()),
            curve: self.percentile_curve(),
        }
    }

    /// Points of the percentile distribution for plots: percentiles
    /// `100 * (1 - 10^(-k/4))` for k = 0, 1, ... up to the resolution the
    /// sample count supports, then the max (as percentile 100).
    pub fn percentile_curve(&self) -> Vec<CurvePoint> {
        if self.is_empty() {
            return Vec::new();
        }
        let mut points = Vec::new();
        for k in 0..=CURVE_STEPS_MAX {
            let tail = 10f64.powf(-(k as f64) / 4.0);
            // Beyond 1/count the percentile is just the max again.
            if k > 0 && tail * (self.len() as f64) < 1.0 {
                break;
            }
            let percentile = 100.0 * (1.0 - tail);
            points.push(CurvePoint {
                percentile,
                latency_us: self.percentile_ns(percentile) as f64 / 1_000.0,
            });
        }
        points.push(CurvePoint {
            percentile: 100.0,
            latency_us: self.max_ns() as f64 / 1_000.0,
        });
        points
    }
}

/// Most steps of the percentile curve (k = 24 is the 99.9999th percentile).
const CURVE_STEPS_MAX: u32 = 24;

/// One point of a percentile plot.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CurvePoint {
    pub percentile: f64,
    pub latency_us: f64,
}

/// Percentiles of one latency histogram, in microseconds.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct LatencySummary {
    pub count: u64,
    pub min_us: f64,
    pub mean_us: f64,
    pub p50_us: f64,
    pub p90_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
    pub p9999_us: f64,
    pub max_us: f64,
    /// Percentile curve for plotting (omitted from tables).
    pub curve: Vec<CurvePoint>,
}

impl LatencySummary {
    /// (label, value) pairs in table order.
    pub fn columns(&self) -> [(&'static str, f64); 6] {
        [
            ("p50", self.p50_us),
            ("p90", self.p90_us),
            ("p99", self.p99_us),
            ("p99.9", self.p999_us),
            ("p99.99", self.p9999_us),
            ("max", self.max_us),
        ]
    }
}

/// Formats microseconds with a unit that keeps 3-4 significant digits.
pub fn format_us(us: f64) -> String {
    if us < 1_000.0 {
        format!("{us:.1} µs")
    } else if us < 1_000_000.0 {
        format!("{:.2} ms", us / 1_000.0)
    } else {
        format!("{:.2} s", us / 1_000_000.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_of_a_uniform_sample() {
        let mut hist = LatencyHistogram::new();
        for us in 1..=10_000u64 {
            hist.record_ns(us * 1_000);
        }
        let summary = hist.summary();
        assert_eq!(summary.count, 10_000);
        // 3 significant digits: within 0.1 % of the exact value.
        let close = |got: f64, want: f64| (got - want).abs() <= want * 0.001 + 1.0;
        assert!(close(summary.p50_us, 5_000.0), "p50 {}", summary.p50_us);
        assert!(close(summary.p90_us, 9_000.0), "p90 {}", summary.p90_us);
        assert!(close(summary.p99_us, 9_900.0), "p99 {}", summary.p99_us);
        assert!(close(summary.p999_us, 9_990.0), "p99.9 {}", summary.p999_us);
        assert!(close(summary.max_us, 10_000.0), "max {}", summary.max_us);
        assert!(close(summary.min_us, 1.0));
        assert!(close(summary.mean_us, 5_000.5));
    }

    #[test]
    fn out_of_range_values_are_clamped_not_dropped() {
        let mut hist = LatencyHistogram::new();
        hist.record_ns(0);
        hist.record_ns(u64::MAX);
        assert_eq!(hist.len(), 2);
        assert!(hist.min_ns() >= LATENCY_NS_LOW / 2);
        assert!(hist.max_ns() >= LATENCY_NS_MAX - LATENCY_NS_MAX / 1000);
    }

    #[test]
    fn merge_adds_counts_and_keeps_extremes() {
        let mut a = LatencyHistogram::new();
        let mut b = LatencyHistogram::new();
        a.record_ns(1_000);
        b.record_ns(2_000_000);
        b.record_ns(3_000);
        a.merge(&b);
        assert_eq!(a.len(), 3);
        assert!((a.max_ns() as f64 - 2_000_000.0).abs() < 2_000_000.0 * 0.001);
        a.reset();
        assert!(a.is_empty());
        assert_eq!(a.summary().p99_us, 0.0);
    }

    #[test]
    fn curve_is_monotonic_and_ends_at_max() {
        let mut hist = LatencyHistogram::new();
        for i in 0..100_000u64 {
            hist.record_ns(1_000 + (i * 7919) % 5_000_000);
        }
        let curve = hist.percentile_curve();
        // 100k samples resolve down to 1e-5: k = 0..=20, plus the max.
        assert_eq!(curve.len(), 22);
        for pair in curve.windows(2) {
            assert!(pair[1].percentile >= pair[0].percentile);
            assert!(pair[1].latency_us >= pair[0].latency_us);
        }
        let last = curve.last().unwrap();
        assert_eq!(last.percentile, 100.0);
        assert_eq!(last.latency_us, hist.max_ns() as f64 / 1_000.0);
        assert!(LatencyHistogram::new().percentile_curve().is_empty());
    }

    #[test]
    fn microseconds_get_a_readable_unit() {
        assert_eq!(format_us(12.34), "12.3 µs");
        assert_eq!(format_us(1_234.0), "1.23 ms");
        assert_eq!(format_us(2_500_000.0), "2.50 s");
    }
}
