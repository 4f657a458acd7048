//! Start/stop flags and the message budget shared by the workers of one
//! run window.

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicUsize, Ordering};

use tokio::sync::Notify;

/// Shared by every worker of a window.
#[derive(Debug)]
pub struct Control {
    stop_producers: AtomicBool,
    stop_consumers: AtomicBool,
    measuring: AtomicBool,
    /// Messages still to send once measuring, when a count is set.
    remaining: AtomicI64,
    limited: bool,
    /// Consumer tasks still running.
    consumers_active: AtomicUsize,
    /// Signalled when the budget runs out or the last consumer ends.
    pub wake: Notify,
}

impl Control {
    /// `message_budget`: stop after this many measured messages.
    pub fn new(message_budget: Option<u64>) -> Self {
        Self {
            stop_producers: AtomicBool::new(false),
            stop_consumers: AtomicBool::new(false),
            measuring: AtomicBool::new(false),
            remaining: AtomicI64::new(
                message_budget.map_or(i64::MAX, |n| i64::try_from(n).unwrap_or(i64::MAX)),
            ),
            limited: message_budget.is_some(),
            consumers_active: AtomicUsize::new(0),
            wake: Notify::new(),
        }
    }

    pub fn producers_stopped(&self) -> bool {
        self.stop_producers.load(Ordering::Relaxed)
    }

    pub fn consumers_stopped(&self) -> bool {
        self.stop_consumers.load(Ordering::Relaxed)
    }

    pub fn stop_producers(&self) {
        self.stop_producers.store(true, Ordering::Relaxed);
    }

    pub fn stop_consumers(&self) {
        self.stop_consumers.store(true, Ordering::Relaxed);
    }

    pub fn start_measuring(&self) {
        self.measuring.store(true, Ordering::Relaxed);
    }

    pub fn is_measuring(&self) -> bool {
        self.measuring.load(Ordering::Relaxed)
    }

    /// Claims `msgs` messages of the budget before sending them. Always
    /// true during warm-up or without a budget; false once the budget is
    /// spent (the last successful claim wakes the window).
    pub fn claim(&self, msgs: u64) -> bool {
        if !self.limited || !self.is_measuring() {
            return true;
        }
        let msgs = i64::try_from(msgs).unwrap_or(i64::MAX);
        let before = self.remaining.fetch_sub(msgs, Ordering::Relaxed);
        if before <= 0 {
            return false;
        }
        if before <= msgs {
            self.wake.notify_one();
        }
        true
    }

    /// True once a budget was set and fully claimed.
    pub fn budget_spent(&self) -> bool {
        self.limited && self.remaining.load(Ordering::Relaxed) <= 0
    }

    pub fn consumer_started(&self) {
        self.consumers_active.fetch_add(1, Ordering::Relaxed);
    }

    pub fn consumer_finished(&self) {
        if self.consumers_active.fetch_sub(1, Ordering::Relaxed) == 1 {
            self.wake.notify_one();
        }
    }

    pub fn consumers_active(&self) -> usize {
        self.consumers_active.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budget_counts_only_measured_messages() {
        let control = Control::new(Some(10));
        // Warm-up: unlimited.
        for _ in 0..100 {
            assert!(control.claim(4));
        }
        assert!(!control.budget_spent());
        control.start_measuring();
        assert!(control.claim(4));
        assert!(control.claim(4));
        // 8 of 10 claimed; the next batch of 4 overshoots but is the last.
        assert!(control.claim(4));
        assert!(control.budget_spent());
        assert!(!control.claim(1));
    }

    #[test]
    fn no_budget_never_runs_out() {
        let control = Control::new(None);
        control.start_measuring();
        for _ in 0..1000 {
            assert!(control.claim(1_000_000));
        }
        assert!(!control.budget_spent());
    }

    #[test]
    fn producers_and_consumers_stop_separately() {
        let control = Control::new(None);
        control.consumer_started();
        control.consumer_started();
        control.stop_producers();
        assert!(control.producers_stopped());
        assert!(!control.consumers_stopped());
        control.consumer_finished();
        assert_eq!(control.consumers_active(), 1);
        control.consumer_finished();
        assert_eq!(control.consumers_active(), 0);
        control.stop_consumers();
        assert!(control.consumers_stopped());
    }
}
