//! What a window keeps while it samples its workers: the message tally and
//! the clock and CPU probes of the measured part.

use std::time::{Duration, Instant};

use crate::proc_stat::{CpuProbe, CpuTicks};
use crate::recorder::Counts;

/// A tick this close to a phase boundary counts as reaching it.
const BOUNDARY_SLACK_MS: u64 = 20;

/// Messages counted over a window: all that were sent and received, and the
/// measured counts.
#[derive(Default)]
pub struct Tally {
    pub totals: Counts,
    pub sent: u64,
    pub received: u64,
}

impl Tally {
    /// Counts messages without adding them to the measured totals.
    pub fn count(&mut self, counts: &Counts) {
        self.sent += counts.sent_msgs;
        self.received += counts.received_msgs;
    }

    /// Counts messages and adds them to the measured totals.
    pub fn absorb(&mut self, counts: &Counts) {
        self.count(counts);
        self.totals.merge(counts);
    }
}

/// The clock and CPU probes of one window.
pub struct Meter {
    broker_probe: Option<CpuProbe>,
    client_probe: CpuProbe,
    pub window_start: Instant,
    warmup: Duration,
    measure: Duration,
    pub measuring: bool,
    measure_start: Instant,
    /// Broker and client CPU when the measured part started.
    cpu_start: (Option<CpuTicks>, CpuTicks),
    pub last_tick: Instant,
    pub last_broker: Option<CpuTicks>,
}

impl Meter {
    /// Starts the window's clock now; without warm-up it measures at once.
    pub fn start(broker_probe: Option<CpuProbe>, warmup: Duration, measure: Duration) -> Meter {
        let client_probe = CpuProbe::this_process();
        let window_start = Instant::now();
        let cpu_start = (
            broker_probe.as_ref().map(CpuProbe::sample),
            client_probe.sample(),
        );
        Meter {
            window_start,
            warmup,
            measure,
            measuring: warmup.is_zero(),
            measure_start: window_start,
            last_broker: cpu_start.0,
            cpu_start,
            last_tick: window_start,
            broker_probe,
            client_probe,
        }
    }

    pub fn broker_sample(&self) -> Option<CpuTicks> {
        self.broker_probe.as_ref().map(CpuProbe::sample)
    }

    /// Broker CPU since the last tick, in percent of one core.
    pub fn broker_pct(&self, now: Instant, broker_now: Option<CpuTicks>) -> Option<f64> {
        match (&self.broker_probe, self.last_broker, broker_now) {
            (Some(probe), Some(before), Some(after)) => {
                let dt = now
                    .saturating_duration_since(self.last_tick)
                    .as_secs_f64()
                    .max(1e-9);
                Some(100.0 * probe.seconds(after.saturating_sub(&before).total()) / dt)
            }
            _ => None,
        }
    }

    pub fn warmup_over(&self, now: Instant) -> bool {
        now + Duration::from_millis(BOUNDARY_SLACK_MS) >= self.window_start + self.warmup
    }

    pub fn measure_over(&self, now: Instant) -> bool {
        now + Duration::from_millis(BOUNDARY_SLACK_MS) >= self.measure_start + self.measure
    }

    pub fn begin_measuring(&mut self, now: Instant, broker_now: Option<CpuTicks>) {
        self.measuring = true;
        self.measure_start = now;
        self.cpu_start = (broker_now, self.client_probe.sample());
    }

    /// Seconds from the start of the measured part to `end`.
    pub fn measured_s(&self, end: Instant) -> f64 {
        end.saturating_duration_since(self.measure_start)
            .as_secs_f64()
    }

    /// Broker (where probed) and client CPU used since the measured part
    /// started.
    pub fn cpu_used(&self) -> (Option<CpuTicks>, CpuTicks) {
        let broker = match (&self.broker_probe, self.cpu_start.0) {
            (Some(probe), Some(before)) => Some(probe.sample().saturating_sub(&before)),
            _ => None,
        };
        let client = self.client_probe.sample().saturating_sub(&self.cpu_start.1);
        (broker, client)
    }
}
