//! The earliest pending deliver time (see "Next due time" in the module
//! doc for what it costs).

use super::TimerStore;

impl TimerStore {
    /// The earliest deliver time of the pending (held, undelivered) timers;
    /// `None` when there are none. It may be in the past (delivery lags).
    /// A timer loop can sleep until then (or until the next `add`).
    ///
    /// Cached; recomputed after the earliest timer is marked delivered, a
    /// truncation, or `open` (see the module doc for the cost). Should a
    /// log read fail, the start of the second that failed is returned (a
    /// lower bound: `due` then reports the error).
    pub fn next_due_ms(&self) -> Option<i64> {
        if let Some(cached) = self.next_due.get() {
            return cached;
        }
        let next = self.compute_next_due();
        self.next_due.set(Some(next));
        next
    }

    fn compute_next_due(&self) -> Option<i64> {
        if self.pending == 0 {
            return None;
        }
        // Loaded seconds are all before the unloaded ones, and every
        // undelivered timer of a loaded second is in `ready`.
        if let Some(&(at, _)) = self.ready.keys().next() {
            return Some(at);
        }
        // Each slot once, in second order from the first unloaded second.
        // A slot may hold a second a whole wheel or more ahead (delivery
        // lagging): those come after every second of this walk.
        let from = self.loaded_through;
        let slots = self.wheel.len() as i64;
        let mut later = Vec::new();
        for second in from..from.saturating_add(slots) {
            let slot = self.wheel.slot(second);
            if slot.is_empty() || slot.second < from {
                continue;
            }
            if slot.second != second {
                later.push(slot.second);
                continue;
            }
            if let Some(at) = self.earliest_pending_in(second) {
                return Some(at);
            }
        }
        later.sort_unstable();
        later
            .into_iter()
            .find_map(|second| self.earliest_pending_in(second))
    }

    /// The earliest undelivered timer of an unloaded second.
    fn earliest_pending_in(&self, second: i64) -> Option<i64> {
        match self.live_chain(second) {
            Ok(chain) => chain
                .into_iter()
                .map(|(key, _)| key)
                .filter(|&key| self.is_undelivered(key))
                .map(|(at, _)| at)
                .min(),
            Err(err) => {
                tracing::warn!(second, %err, "timer chain unreadable while finding the next due time");
                Some(second.saturating_mul(1000))
            }
        }
    }
}
