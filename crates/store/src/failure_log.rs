//! Logging a periodic write's failures without a line per try. On a full
//! disk the checkpoint, the timer store and the transaction state each
//! failed once a second, every second, three log lines a second for as
//! long as the disk stayed full. Now the first failure is logged, then at
//! most one line per [`FAILURE_LOG_INTERVAL_MS`] saying how many were not,
//! and one line when the write succeeds again.

use std::cell::RefCell;
use std::fmt::Display;
use std::time::{Duration, Instant};

/// Least time between two logged failures of one write.
pub const FAILURE_LOG_INTERVAL_MS: u64 = 60_000;

/// How bad a failure is, as it is logged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureLevel {
    Warn,
    Error,
}

/// The failures of one periodic write (`what`: "checkpoint write").
#[derive(Debug)]
pub struct RepeatedFailure {
    what: &'static str,
    level: FailureLevel,
    state: RefCell<FailureState>,
}

/// What a failure or a success means for the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verdict {
    /// Log this failure; `unlogged` failures since the last logged one.
    Log { unlogged: u64 },
    /// Count it; say nothing now.
    Quiet,
    /// The write succeeds again after `failures` in a row.
    Recovered { failures: u64 },
}

#[derive(Debug, Default)]
struct FailureState {
    /// Failures in a row; 0 while the write succeeds.
    failures: u64,
    /// Failures since the last logged one.
    unlogged: u64,
    last_logged: Option<Instant>,
}

impl FailureState {
    fn failed(&mut self, now: Instant, interval: Duration) -> Verdict {
        self.failures += 1;
        let due = self
            .last_logged
            .map_or(true, |at| now.saturating_duration_since(at) >= interval);
        if self.failures > 1 && !due {
            self.unlogged += 1;
            return Verdict::Quiet;
        }
        let unlogged = std::mem::take(&mut self.unlogged);
        self.last_logged = Some(now);
        Verdict::Log { unlogged }
    }

    fn succeeded(&mut self) -> Verdict {
        let failures = std::mem::take(&mut self.failures);
        self.unlogged = 0;
        self.last_logged = None;
        match failures {
            0 => Verdict::Quiet,
            failures => Verdict::Recovered { failures },
        }
    }
}

impl RepeatedFailure {
    pub fn new(what: &'static str, level: FailureLevel) -> Self {
        Self {
            what,
            level,
            state: RefCell::new(FailureState::default()),
        }
    }

    /// One more failure of the write.
    pub fn failed(&self, error: &dyn Display) {
        let interval = Duration::from_millis(FAILURE_LOG_INTERVAL_MS);
        let verdict = self.state.borrow_mut().failed(Instant::now(), interval);
        let Verdict::Log { unlogged } = verdict else {
            return;
        };
        let what = self.what;
        match self.level {
            FailureLevel::Warn => tracing::warn!(%error, unlogged, "{what} failed"),
            FailureLevel::Error => tracing::error!(%error, unlogged, "{what} failed"),
        }
    }

    /// The write succeeded: says so once after failures.
    pub fn succeeded(&self) {
        if let Verdict::Recovered { failures } = self.state.borrow_mut().succeeded() {
            tracing::info!(failures, "{} succeeds again", self.what);
        }
    }

    /// Logs a write's outcome.
    pub fn record<E: Display>(&self, outcome: &Result<(), E>) {
        match outcome {
            Ok(()) => self.succeeded(),
            Err(error) => self.failed(error),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_failure_then_one_a_minute_then_the_recovery() {
        let interval = Duration::from_secs(60);
        let start = Instant::now();
        let at = |secs: u64| start + Duration::from_secs(secs);
        let mut state = FailureState::default();
        assert_eq!(state.succeeded(), Verdict::Quiet);
        assert_eq!(state.failed(at(0), interval), Verdict::Log { unlogged: 0 });
        for second in 1..60 {
            assert_eq!(state.failed(at(second), interval), Verdict::Quiet);
        }
        assert_eq!(
            state.failed(at(60), interval),
            Verdict::Log { unlogged: 59 }
        );
        assert_eq!(state.failed(at(61), interval), Verdict::Quiet);
        assert_eq!(state.succeeded(), Verdict::Recovered { failures: 62 });
        assert_eq!(state.succeeded(), Verdict::Quiet);
        // A new run of failures is logged at once.
        assert_eq!(state.failed(at(62), interval), Verdict::Log { unlogged: 0 });
    }
}
