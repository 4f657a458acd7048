//! When a connection last moved, for the server's sweeper: a connection
//! with nothing in flight and no bytes either way for `idle_timeout_ms`
//! (Java's `serverChannelMaxIdleTimeSeconds`), a frame begun but not
//! finished within `partial_frame_timeout_ms`, or a socket that has taken
//! none of our output for `write_stall_timeout_ms` (a client that does not
//! read its responses) is closed.

use std::cell::Cell;
use std::time::{Duration, Instant};

use super::ServerLimits;

/// Why the sweeper closes a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Expiry {
    Idle,
    PartialFrame,
    WriteStall,
}

impl Expiry {
    pub(crate) fn reason(self) -> &'static str {
        match self {
            Expiry::Idle => "idle for longer than the idle timeout",
            Expiry::PartialFrame => "a frame was begun but not finished in time",
            Expiry::WriteStall => "the client has not read its responses in time",
        }
    }
}

pub(crate) struct Watch {
    last_io: Cell<Instant>,
    partial_since: Cell<Option<Instant>>,
    write_blocked_since: Cell<Option<Instant>>,
}

impl Watch {
    pub(crate) fn new() -> Self {
        Self {
            last_io: Cell::new(Instant::now()),
            partial_since: Cell::new(None),
            write_blocked_since: Cell::new(None),
        }
    }

    /// Bytes were read or written.
    pub(crate) fn moved(&self) {
        self.last_io.set(Instant::now());
    }

    /// After the reader took every whole frame: whether a partial one is
    /// left in the buffer.
    pub(crate) fn partial_frame(&self, partial: bool) {
        match (partial, self.partial_since.get()) {
            (true, None) => self.partial_since.set(Some(Instant::now())),
            (false, Some(_)) => self.partial_since.set(None),
            _ => {}
        }
    }

    /// The socket took no bytes (`true`) or took some (`false`).
    pub(crate) fn write_blocked(&self, blocked: bool) {
        match (blocked, self.write_blocked_since.get()) {
            (true, None) => self.write_blocked_since.set(Some(Instant::now())),
            (false, Some(_)) => self.write_blocked_since.set(None),
            _ => {}
        }
    }

    /// Whether the socket has refused our output for at least `min` (a
    /// client that reads fast can fill its socket for an instant).
    pub(crate) fn write_blocked_for(&self, now: Instant, min: Duration) -> bool {
        self.write_blocked_since
            .get()
            .is_some_and(|since| now.saturating_duration_since(since) >= min)
    }

    pub(crate) fn expired(
        &self,
        now: Instant,
        limits: &ServerLimits,
        inflight: usize,
        queued_bytes: usize,
    ) -> Option<Expiry> {
        let older = |since: Instant, ms: u64| {
            now.saturating_duration_since(since) > Duration::from_millis(ms)
        };
        if let Some(since) = self.write_blocked_since.get() {
            if older(since, limits.write_stall_timeout_ms) {
                return Some(Expiry::WriteStall);
            }
        }
        if let Some(since) = self.partial_since.get() {
            if older(since, limits.partial_frame_timeout_ms) {
                return Some(Expiry::PartialFrame);
            }
        }
        let quiet = inflight == 0 && queued_bytes == 0;
        (quiet && older(self.last_io.get(), limits.idle_timeout_ms)).then_some(Expiry::Idle)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> ServerLimits {
        ServerLimits {
            idle_timeout_ms: 1_000,
            partial_frame_timeout_ms: 500,
            write_stall_timeout_ms: 200,
            ..ServerLimits::default()
        }
    }

    #[test]
    fn each_timeout_fires_only_in_its_own_situation() {
        let watch = Watch::new();
        let start = Instant::now();
        let at = |ms: u64| start + Duration::from_millis(ms);
        let limits = limits();
        assert_eq!(watch.expired(at(900), &limits, 0, 0), None);
        assert_eq!(watch.expired(at(1_100), &limits, 0, 0), Some(Expiry::Idle));
        // A held request or queued output is not idleness.
        assert_eq!(watch.expired(at(1_100), &limits, 1, 0), None);
        assert_eq!(watch.expired(at(1_100), &limits, 0, 10), None);
        watch.partial_frame(true);
        assert_eq!(watch.expired(at(400), &limits, 1, 0), None);
        assert_eq!(
            watch.expired(at(600), &limits, 1, 0),
            Some(Expiry::PartialFrame)
        );
        watch.partial_frame(false);
        watch.write_blocked(true);
        assert_eq!(
            watch.expired(at(300), &limits, 1, 10),
            Some(Expiry::WriteStall)
        );
        watch.write_blocked(false);
        assert_eq!(watch.expired(at(300), &limits, 1, 10), None);
    }
}
