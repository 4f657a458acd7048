//! Refusals a user needs to see (a v5 client refused by ACL, a route asked
//! for a topic nobody created, an unsigned request to a name server or a
//! controller) logged at WARN, at most [`REFUSALS_PER_WINDOW`] lines per
//! [`REFUSAL_WINDOW_MS`] over the whole process, so a client retrying in a
//! loop cannot flood the log.

use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Lines logged per window at most.
pub const REFUSALS_PER_WINDOW: u32 = 5;
/// The window, in milliseconds.
pub const REFUSAL_WINDOW_MS: u64 = 10_000;

struct Window {
    started: Option<Instant>,
    logged: u32,
    left_out: u64,
}

static WINDOW: Mutex<Window> = Mutex::new(Window {
    started: None,
    logged: 0,
    left_out: 0,
});

/// Logs `line` at WARN unless this window's lines are spent.
pub fn log_refusal(line: std::fmt::Arguments<'_>) {
    let admitted = match WINDOW.lock() {
        Ok(mut window) => window.admit(Instant::now()),
        Err(poisoned) => poisoned.into_inner().admit(Instant::now()),
    };
    match admitted {
        None => {}
        Some(0) => tracing::warn!("{line}"),
        Some(n) => tracing::warn!("{line} ({n} more refusals in the last window not logged)"),
    }
}

impl Window {
    /// `Some(lines left out before this one)` when a line may be logged now.
    fn admit(&mut self, now: Instant) -> Option<u64> {
        let length = Duration::from_millis(REFUSAL_WINDOW_MS);
        if self
            .started
            .is_none_or(|started| now.duration_since(started) >= length)
        {
            let left_out = self.left_out;
            *self = Window {
                started: Some(now),
                logged: 1,
                left_out: 0,
            };
            return Some(left_out);
        }
        if self.logged < REFUSALS_PER_WINDOW {
            self.logged += 1;
            return Some(0);
        }
        self.left_out += 1;
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_logs_a_few_lines_then_counts_the_rest() {
        let mut window = Window {
            started: None,
            logged: 0,
            left_out: 0,
        };
        let start = Instant::now();
        let admitted: Vec<Option<u64>> = (0..8).map(|_| window.admit(start)).collect();
        let logged = admitted.iter().filter(|a| a.is_some()).count();
        assert_eq!(logged, REFUSALS_PER_WINDOW as usize, "{admitted:?}");
        let later = start + Duration::from_millis(REFUSAL_WINDOW_MS);
        assert_eq!(window.admit(later), Some(3));
    }
}
