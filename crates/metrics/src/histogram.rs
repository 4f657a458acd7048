//! Fixed-bucket histograms with the bucket bounds RocketMQ registers for
//! each metric (its OpenTelemetry views), in a fixed array: observing
//! allocates nothing.

/// `rocketmq_message_size`: 1 KiB, 4 KiB, 512 KiB, 1, 2 and 4 MiB.
pub const MESSAGE_SIZE_BOUNDS: &[f64] = &[
    1024.0,
    4096.0,
    524_288.0,
    1_048_576.0,
    2_097_152.0,
    4_194_304.0,
];
/// `rocketmq_rpc_latency` (milliseconds).
pub const RPC_LATENCY_MS_BOUNDS: &[f64] =
    &[1.0, 3.0, 5.0, 7.0, 10.0, 100.0, 1000.0, 2000.0, 3000.0];
/// `rocketmq_finish_message_latency` (Java records seconds under its "ms"
/// unit; so do we, so dashboards read the same).
pub const FINISH_LATENCY_S_BOUNDS: &[f64] = &[5.0, 60.0, 600.0, 3600.0, 43_200.0, 86_400.0];

/// Most bounds of any histogram above; one more bucket holds +Inf.
const BOUNDS_MAX: usize = 9;

/// Counts per bucket (not cumulative; the encoder sums them), the sum and
/// the count of what was observed.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Histogram {
    buckets: [u64; BOUNDS_MAX + 1],
    pub sum: f64,
    pub count: u64,
}

impl Histogram {
    /// Counts `value` in the first bucket whose bound is at least it.
    pub fn observe(&mut self, bounds: &[f64], value: f64) {
        assert!(bounds.len() <= BOUNDS_MAX, "histogram has too many bounds");
        let bucket = bounds
            .iter()
            .position(|bound| value <= *bound)
            .unwrap_or(bounds.len());
        self.buckets[bucket] += 1;
        self.sum += value;
        self.count += 1;
    }

    pub fn merge(&mut self, other: &Histogram) {
        for (mine, theirs) in self.buckets.iter_mut().zip(other.buckets.iter()) {
            *mine += theirs;
        }
        self.sum += other.sum;
        self.count += other.count;
    }

    /// (upper bound, count) per bucket, +Inf last as `f64::MAX`: the form
    /// the `prometheus-client` encoder takes (it writes them cumulative).
    pub fn buckets(&self, bounds: &[f64]) -> Vec<(f64, u64)> {
        let uppers = bounds.iter().copied().chain([f64::MAX]);
        let out: Vec<(f64, u64)> = uppers.zip(self.buckets.iter().copied()).collect();
        assert_eq!(
            out.iter().map(|(_, n)| n).sum::<u64>(),
            self.count,
            "buckets add up to the count"
        );
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_land_in_their_buckets_and_accumulate() {
        let mut h = Histogram::default();
        for value in [0.5, 1.0, 2.0, 10.0, 5000.0] {
            h.observe(RPC_LATENCY_MS_BOUNDS, value);
        }
        let mut other = Histogram::default();
        other.observe(RPC_LATENCY_MS_BOUNDS, 4.0);
        h.merge(&other);
        let buckets = h.buckets(RPC_LATENCY_MS_BOUNDS);
        assert_eq!(buckets.len(), RPC_LATENCY_MS_BOUNDS.len() + 1);
        assert_eq!(buckets[0], (1.0, 2));
        assert_eq!(buckets[1], (3.0, 1));
        assert_eq!(buckets[2], (5.0, 1));
        assert_eq!(buckets[4], (10.0, 1));
        assert_eq!(buckets.last().copied(), Some((f64::MAX, 1)));
        assert_eq!(h.count, 6);
        assert!((h.sum - 5017.5).abs() < 1e-9);
    }
}
