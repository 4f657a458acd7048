//! Fixed-rate load with coordinated-omission-correct timing.
//!
//! A [`Schedule`] says when request number `k` is meant to be sent:
//! `start + k / rate`. A pacing thread releases one permit per request as
//! its intended time passes; any idle worker takes the next permit and the
//! matching ticket, sends, and measures latency from the *intended* time,
//! not from when it managed to send. When the system under test stalls,
//! permits pile up and the queueing delay lands in the measured latencies
//! (as wrk2 does), instead of the load generator quietly slowing down.
//!
//! The pacing thread sleeps with 1 ns timer slack and wakes at least every
//! [`PACER_TICK_NS_MIN`]; a request is released at most that late, and its
//! latency still counts from its intended time.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use tokio::sync::Semaphore;

/// Shortest sleep of the pacing thread: bounds its wake-ups to 20k/s.
pub const PACER_TICK_NS_MIN: u64 = 50_000;
/// Longest sleep, so a stop request is noticed quickly.
pub const PACER_TICK_NS_MAX: u64 = 10_000_000;
/// Most permits waiting at once; beyond this the load generator is hopelessly
/// behind and further backlog would only grow memory, not change results.
pub const PERMITS_PENDING_MAX: usize = 1 << 40;

/// When each request of a fixed-rate run is meant to start.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Schedule {
    interval_ns: f64,
}

impl Schedule {
    /// `None` for a rate that is not a positive finite number.
    pub fn from_rate(requests_per_s: f64) -> Option<Self> {
        if !(requests_per_s.is_finite() && requests_per_s > 0.0) {
            return None;
        }
        Some(Self {
            interval_ns: 1e9 / requests_per_s,
        })
    }

    /// Intended start of request `ticket`, in ns after the schedule's start.
    pub fn offset_ns(&self, ticket: u64) -> u64 {
        (ticket as f64 * self.interval_ns) as u64
    }

    /// How many requests are due `elapsed_ns` after the start (request 0
    /// is due at once).
    pub fn due(&self, elapsed_ns: u64) -> u64 {
        (elapsed_ns as f64 / self.interval_ns).floor() as u64 + 1
    }

    /// How long the pacing thread sleeps when `released` requests are out
    /// and `elapsed_ns` have passed: until the next one is due, within the
    /// tick bounds.
    pub fn sleep_ns(&self, released: u64, elapsed_ns: u64) -> u64 {
        let next = self.offset_ns(released);
        next.saturating_sub(elapsed_ns)
            .clamp(PACER_TICK_NS_MIN, PACER_TICK_NS_MAX)
    }
}

/// A running fixed-rate schedule shared by all workers of one run.
pub struct Pacer {
    start: Instant,
    schedule: Schedule,
    permits: Arc<Semaphore>,
    next_ticket: AtomicU64,
    stop: Arc<AtomicBool>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl std::fmt::Debug for Pacer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pacer")
            .field("schedule", &self.schedule)
            .field("next_ticket", &self.next_ticket.load(Ordering::Relaxed))
            .finish()
    }
}

impl Pacer {
    /// Starts releasing requests at `schedule`'s rate from now.
    pub fn start(schedule: Schedule) -> Result<Arc<Pacer>, std::io::Error> {
        let permits = Arc::new(Semaphore::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let start = Instant::now();
        let thread = std::thread::Builder::new()
            .name("bench-pacer".into())
            .spawn({
                let permits = permits.clone();
                let stop = stop.clone();
                move || pace(start, schedule, &permits, &stop)
            })?;
        Ok(Arc::new(Pacer {
            start,
            schedule,
            permits,
            next_ticket: AtomicU64::new(0),
            stop,
            thread: Mutex::new(Some(thread)),
        }))
    }

    /// Waits for the next due request and returns its intended start time;
    /// `None` once the pacer is stopped.
    pub async fn next(&self) -> Option<Instant> {
        let permit = self.permits.acquire().await.ok()?;
        permit.forget();
        let ticket = self.next_ticket.fetch_add(1, Ordering::Relaxed);
        Some(self.start + Duration::from_nanos(self.schedule.offset_ns(ticket)))
    }

    /// The next request if one is due now, without waiting.
    pub fn try_next(&self) -> Option<Instant> {
        let permit = self.permits.try_acquire().ok()?;
        permit.forget();
        let ticket = self.next_ticket.fetch_add(1, Ordering::Relaxed);
        Some(self.start + Duration::from_nanos(self.schedule.offset_ns(ticket)))
    }

    /// Stops releasing requests and wakes every waiting worker with `None`.
    pub fn stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
        self.permits.close();
        let thread = self
            .thread
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .take();
        if let Some(thread) = thread {
            let _ = thread.join();
        }
    }
}

impl Drop for Pacer {
    fn drop(&mut self) {
        self.stop();
    }
}

fn pace(start: Instant, schedule: Schedule, permits: &Semaphore, stop: &AtomicBool) {
    set_fine_timer_slack();
    let mut released = 0u64;
    while !stop.load(Ordering::Relaxed) {
        let elapsed_ns = start.elapsed().as_nanos() as u64;
        let due = schedule.due(elapsed_ns);
        if due > released {
            let room = PERMITS_PENDING_MAX.saturating_sub(permits.available_permits());
            let add = usize::try_from(due - released)
                .unwrap_or(usize::MAX)
                .min(room);
            permits.add_permits(add);
            released = due;
        }
        std::thread::sleep(Duration::from_nanos(
            schedule.sleep_ns(released, elapsed_ns),
        ));
    }
}

/// Asks the kernel not to coalesce this thread's timers (default slack is
/// 50 us). Failure only makes pacing coarser.
fn set_fine_timer_slack() {
    // SAFETY: PR_SET_TIMERSLACK takes one integer argument and touches only
    // the calling thread's timer slack.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedule_spaces_requests_evenly() {
        let schedule = Schedule::from_rate(1_000.0).unwrap();
        assert_eq!(schedule.offset_ns(0), 0);
        assert_eq!(schedule.offset_ns(1), 1_000_000);
        assert_eq!(schedule.offset_ns(2_500), 2_500_000_000);
    }

    #[test]
    fn due_counts_requests_whose_time_has_come() {
        let schedule = Schedule::from_rate(1_000.0).unwrap();
        assert_eq!(schedule.due(0), 1);
        assert_eq!(schedule.due(999_999), 1);
        assert_eq!(schedule.due(1_000_000), 2);
        assert_eq!(schedule.due(10_500_000), 11);
        // Consistent with offset_ns: request k is due once its offset passed.
        for k in [0u64, 1, 7, 1_000, 123_456] {
            assert!(schedule.due(schedule.offset_ns(k)) > k);
        }
    }

    #[test]
    fn sleeps_stay_within_the_tick_bounds() {
        let slow = Schedule::from_rate(1.0).unwrap();
        assert_eq!(slow.sleep_ns(1, 0), PACER_TICK_NS_MAX);
        let fast = Schedule::from_rate(1_000_000.0).unwrap();
        assert_eq!(fast.sleep_ns(5, 0), PACER_TICK_NS_MIN);
        let medium = Schedule::from_rate(5_000.0).unwrap(); // 200 us apart
        assert_eq!(medium.sleep_ns(1, 50_000), 150_000);
        // Behind schedule: sleep the minimum, never a negative amount.
        assert_eq!(medium.sleep_ns(1, 10_000_000), PACER_TICK_NS_MIN);
    }

    #[test]
    fn invalid_rates_give_no_schedule() {
        assert!(Schedule::from_rate(0.0).is_none());
        assert!(Schedule::from_rate(-5.0).is_none());
        assert!(Schedule::from_rate(f64::NAN).is_none());
        assert!(Schedule::from_rate(f64::INFINITY).is_none());
    }

    #[test]
    fn intended_times_follow_the_schedule_not_the_worker() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        runtime.block_on(async {
            let pacer = Pacer::start(Schedule::from_rate(10_000.0).unwrap()).unwrap();
            let mut times = Vec::new();
            for _ in 0..5 {
                times.push(pacer.next().await.unwrap());
            }
            // Tickets are handed out in order, 100 us apart, whatever the
            // worker's own timing was.
            for pair in times.windows(2) {
                assert_eq!(pair[1] - pair[0], Duration::from_micros(100));
            }
            pacer.stop();
            assert!(pacer.next().await.is_none());
            assert!(pacer.try_next().is_none());
        });
    }
}
