//! Messages in and out per second, as RocketMQ's runtime info reports them
//! (`putTps`, `getTransferedTps`: averages over the last 10 s, 1 min and
//! 10 min, space-separated; Java's StoreStatsService). Shard 0 samples
//! every shard's counters once a second into a bounded ring.

use std::collections::VecDeque;

/// How often the counters are sampled.
pub(crate) const THROUGHPUT_SAMPLE_INTERVAL_MS: u64 = 1_000;
/// The averaging windows, as Java reports them.
const WINDOWS_S: [u64; 3] = [10, 60, 600];
/// Samples kept: the longest window, plus the sample it starts from.
const SAMPLES_MAX: usize = 601;

/// One sample of the broker-wide counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Sample {
    /// Monotonic milliseconds since sampling began.
    pub at_ms: u64,
    pub put_messages: u64,
    pub got_messages: u64,
}

/// The message totals at the start of today and of yesterday (UTC days),
/// as Java's `BrokerStats` keeps them for runtime info's
/// `msgPutTotalTodayMorning`, `msgPutTotalYesterdayMorning` and the `Get`
/// pair (mqadmin's `clusterList -m` and `exportMetrics` subtract them).
/// Like Java's, they are 0 until the broker has seen a midnight.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Mornings {
    day: Option<i64>,
    pub put_today: u64,
    pub put_yesterday: u64,
    pub got_today: u64,
    pub got_yesterday: u64,
}

impl Mornings {
    /// The totals `put` and `got` seen on UTC day `day`: on the first
    /// sample of a new day they become today's morning totals.
    pub fn observe(&mut self, day: i64, put: u64, got: u64) {
        match self.day {
            Some(seen) if day > seen => {
                // Over a day with no sample nothing was counted.
                let consecutive = day == seen + 1;
                self.put_yesterday = if consecutive { self.put_today } else { put };
                self.got_yesterday = if consecutive { self.got_today } else { got };
                self.put_today = put;
                self.got_today = got;
                self.day = Some(day);
            }
            Some(_) => {}
            None => self.day = Some(day),
        }
    }
}

/// The last [`SAMPLES_MAX`] samples, oldest first.
#[derive(Debug, Default)]
pub(crate) struct Throughput {
    samples: VecDeque<Sample>,
    /// The day's first totals, updated with the samples.
    pub mornings: Mornings,
}

impl Throughput {
    pub fn push(&mut self, sample: Sample) {
        if let Some(last) = self.samples.back() {
            assert!(sample.at_ms >= last.at_ms, "samples go forward in time");
        }
        if self.samples.len() == SAMPLES_MAX {
            self.samples.pop_front();
        }
        self.samples.push_back(sample);
    }

    /// (`putTps`, `getTransferedTps`) in Java's form: "10s 60s 600s"
    /// averages with two decimals. A window longer than the samples kept
    /// so far averages over what there is; with fewer than two samples,
    /// every average is 0.
    pub fn report(&self) -> (String, String) {
        let mut put = Vec::with_capacity(WINDOWS_S.len());
        let mut got = Vec::with_capacity(WINDOWS_S.len());
        for window_s in WINDOWS_S {
            let (put_tps, got_tps) = self.average(window_s);
            put.push(format!("{put_tps:.2}"));
            got.push(format!("{got_tps:.2}"));
        }
        (put.join(" "), got.join(" "))
    }

    fn average(&self, window_s: u64) -> (f64, f64) {
        let Some(last) = self.samples.back() else {
            return (0.0, 0.0);
        };
        let since_ms = last.at_ms.saturating_sub(window_s * 1_000);
        let first = self
            .samples
            .iter()
            .find(|s| s.at_ms >= since_ms)
            .unwrap_or(last);
        let elapsed_ms = last.at_ms - first.at_ms;
        if elapsed_ms == 0 {
            return (0.0, 0.0);
        }
        let per_s = |later: u64, earlier: u64| {
            later.saturating_sub(earlier) as f64 * 1_000.0 / elapsed_ms as f64
        };
        (
            per_s(last.put_messages, first.put_messages),
            per_s(last.got_messages, first.got_messages),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(at_s: u64, put: u64, got: u64) -> Sample {
        Sample {
            at_ms: at_s * 1_000,
            put_messages: put,
            got_messages: got,
        }
    }

    #[test]
    fn averages_over_each_window_of_what_was_sampled() {
        let mut throughput = Throughput::default();
        assert_eq!(throughput.report().0, "0.00 0.00 0.00");
        throughput.push(sample(0, 0, 0));
        assert_eq!(throughput.report().0, "0.00 0.00 0.00");
        // 100 msg/s in for 50 s, then 10 msg/s for 10 s; 5 msg/s out.
        for s in 1..=50 {
            throughput.push(sample(s, 100 * s, 5 * s));
        }
        for s in 51..=60 {
            throughput.push(sample(s, 5_000 + 10 * (s - 50), 5 * s));
        }
        let (put, got) = throughput.report();
        assert_eq!(put, "10.00 85.00 85.00");
        assert_eq!(got, "5.00 5.00 5.00");
    }

    #[test]
    fn the_ring_is_bounded() {
        let mut throughput = Throughput::default();
        for s in 0..2_000 {
            throughput.push(sample(s, s * 3, 0));
        }
        assert_eq!(throughput.samples.len(), SAMPLES_MAX);
        assert_eq!(throughput.report().0, "3.00 3.00 3.00");
    }

    #[test]
    fn mornings_roll_at_midnight_only() {
        let mut mornings = Mornings::default();
        mornings.observe(100, 5, 3);
        assert_eq!((mornings.put_today, mornings.put_yesterday), (0, 0));
        mornings.observe(100, 9, 4);
        mornings.observe(101, 10, 6);
        assert_eq!((mornings.put_today, mornings.got_today), (10, 6));
        assert_eq!((mornings.put_yesterday, mornings.got_yesterday), (0, 0));
        mornings.observe(102, 15, 7);
        assert_eq!((mornings.put_today, mornings.put_yesterday), (15, 10));
        assert_eq!(mornings.got_yesterday, 6);
        mornings.observe(105, 20, 8);
        assert_eq!((mornings.put_today, mornings.put_yesterday), (20, 20));
        mornings.observe(104, 30, 9);
        assert_eq!(mornings.put_today, 20, "a day back changes nothing");
    }
}
