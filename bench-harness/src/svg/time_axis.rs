//! The throughput plot's time axis. When the warm-up came before the whole
//! measured run (produce, e2e), the axis counts seconds of the measured run,
//! so a 10 s run ends at 10 and the warm-up shows left of 0; otherwise
//! (compare, where each target warms up in its own first round) it counts
//! seconds since the start.

use super::nice_step;
use crate::recorder::Sample;

/// How close (a share of a tick step) the end of the run may fall short of
/// a tick and still end the axis there: samples end a few ms off the
/// second.
const SNAP_SHARE: f64 = 0.1;

/// A time axis on the samples' clock (seconds since the start).
#[derive(Debug, Clone, PartialEq)]
pub(super) struct TimeAxis {
    /// The axis ends here.
    pub hi: f64,
    /// Where 0 is: the end of the warm-up, or the start.
    pub zero: f64,
    /// Seconds between ticks.
    pub step: f64,
}

impl TimeAxis {
    pub(super) fn of<'a>(samples: impl Iterator<Item = &'a Sample> + Clone) -> TimeAxis {
        let zero = measured_start(samples.clone());
        let end = samples.map(|s| s.t_s).fold(1.0f64, f64::max) - zero;
        let step = nice_step(zero + end, 10);
        let snapped = (end / step).ceil() * step;
        let run = if snapped - end < SNAP_SHARE * step {
            snapped
        } else {
            end
        };
        TimeAxis {
            hi: zero + run,
            zero,
            step,
        }
    }

    /// Each tick's place on the samples' clock and its label.
    pub(super) fn ticks(&self) -> Vec<(f64, f64)> {
        let first = -(self.zero / self.step + 1e-9).floor();
        (0..)
            .map(|k| (first + k as f64) * self.step)
            // 3 x 0.1 is 0.30000000000000004.
            .map(|label| (self.zero + label, (label * 1e6).round() / 1e6))
            .take_while(|(at, _)| *at <= self.hi + 1e-9)
            .collect()
    }

    pub(super) fn caption(&self) -> &'static str {
        if self.zero > 0.0 {
            "seconds measured (faded, left of 0: warm-up)"
        } else {
            "seconds since start (faded: warm-up)"
        }
    }
}

/// The end of the warm-up when every warm-up sample comes before every
/// measured one, else 0.
fn measured_start<'a>(samples: impl Iterator<Item = &'a Sample> + Clone) -> f64 {
    let last_warm = samples
        .clone()
        .filter(|s| s.warmup)
        .map(|s| s.t_s)
        .fold(f64::NEG_INFINITY, f64::max);
    let first_measured = samples
        .filter(|s| !s.warmup)
        .map(|s| s.t_s)
        .fold(f64::INFINITY, f64::min);
    match last_warm.is_finite() && first_measured.is_finite() && last_warm < first_measured {
        true => last_warm,
        false => 0.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(t_s: f64, warmup: bool) -> Sample {
        Sample {
            t_s,
            target: "t".into(),
            warmup,
            sent_per_s: 1.0,
            received_per_s: 0.0,
            mb_per_s: 0.0,
            errors: 0,
            request_p99_us: 0.0,
            e2e_p99_us: 0.0,
            broker_cpu_pct: None,
        }
    }

    /// A 10 s run after a 2 s warm-up, one sample a second, as
    /// `produce --duration 10` records it (a few ms late each).
    fn ten_second_run() -> Vec<Sample> {
        (1..=12).map(|t| sample(t as f64 + 0.03, t <= 2)).collect()
    }

    #[test]
    fn a_ten_second_run_ends_the_axis_at_ten() {
        let samples = ten_second_run();
        let axis = TimeAxis::of(samples.iter());
        assert!((axis.zero - 2.03).abs() < 1e-9, "{axis:?}");
        assert!((axis.hi - axis.zero - 10.0).abs() < 1e-9, "{axis:?}");
        let labels: Vec<f64> = axis.ticks().into_iter().map(|(_, label)| label).collect();
        assert_eq!(labels.first(), Some(&-2.0), "{labels:?}");
        assert_eq!(labels.last(), Some(&10.0), "{labels:?}");
        assert!(labels.contains(&0.0), "{labels:?}");
        assert!(axis.caption().starts_with("seconds measured"));
    }

    #[test]
    fn a_run_cut_short_ends_where_it_ended() {
        // --messages stopped it after 6.5 s.
        let mut samples = ten_second_run();
        samples.truncate(8);
        samples.push(sample(9.53, false));
        let axis = TimeAxis::of(samples.iter());
        assert!((axis.hi - 9.53).abs() < 1e-9, "{axis:?}");
    }

    #[test]
    fn warm_ups_between_measured_rounds_keep_seconds_since_start() {
        // compare: A warms up and runs a round, then B does.
        let samples: Vec<Sample> = [(1.0, true), (2.0, false), (3.0, true), (4.0, false)]
            .into_iter()
            .map(|(t, warm)| sample(t, warm))
            .collect();
        let axis = TimeAxis::of(samples.iter());
        assert_eq!(axis.zero, 0.0);
        assert_eq!(axis.ticks().first(), Some(&(0.0, 0.0)));
        assert!(axis.caption().starts_with("seconds since start"));
    }
}
