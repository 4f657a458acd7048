//! The broker's log of refused sends, pulls and pops: a client sees only
//! its client library's wording (the C++ client says "No route info of
//! this topic" for most refusals), so the broker says at WARN who was
//! refused and why. At most [`REFUSALS_LOGGED_PER_WINDOW_MAX`] lines per
//! shard per window, so a misbehaving client cannot flood the log; the
//! ones left out are counted in the next line.

use std::cell::Cell;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use ferrocket_protocol::codes::{
    request_code, request_code_name, response_code, response_code_name,
};

/// Lines logged per shard per window at most.
pub(crate) const REFUSALS_LOGGED_PER_WINDOW_MAX: u32 = 10;
/// The window those lines are counted over.
const REFUSAL_WINDOW_MS: u64 = 1_000;

/// Whether a request of `request` answered `answer` was refused: any
/// answer but success and the ordinary outcomes a client handles itself
/// (stored but not yet flushed or replicated; nothing to pull yet; pull
/// from elsewhere). Other requests are not logged here.
pub(crate) fn is_refusal(request: i32, answer: i32) -> bool {
    use request_code::*;
    use response_code::*;
    match request {
        SEND_MESSAGE
        | SEND_MESSAGE_V2
        | SEND_BATCH_MESSAGE
        | SEND_REPLY_MESSAGE
        | SEND_REPLY_MESSAGE_V2
        | CONSUMER_SEND_MSG_BACK => !matches!(
            answer,
            SUCCESS | FLUSH_DISK_TIMEOUT | FLUSH_SLAVE_TIMEOUT | SLAVE_NOT_AVAILABLE
        ),
        PULL_MESSAGE | LITE_PULL_MESSAGE | POP_MESSAGE => !matches!(
            answer,
            SUCCESS | PULL_NOT_FOUND | PULL_RETRY_IMMEDIATELY | PULL_OFFSET_MOVED | POLLING_TIMEOUT
        ),
        _ => false,
    }
}

/// One shard's count of lines in the current window.
struct Window {
    started: Cell<Option<Instant>>,
    logged: Cell<u32>,
    left_out: Cell<u64>,
}

thread_local! {
    // One per shard: each shard runs on a thread of its own.
    static WINDOW: Window = const {
        Window {
            started: Cell::new(None),
            logged: Cell::new(0),
            left_out: Cell::new(0),
        }
    };
}

/// Logs one refusal at WARN unless this window's lines are spent.
pub(crate) fn log_refusal(peer: SocketAddr, request: i32, answer: i32, remark: &str) {
    let Some(left_out) = WINDOW.with(|window| window.admit(Instant::now())) else {
        return;
    };
    let also = match left_out {
        0 => String::new(),
        n => format!(" ({n} more refusals in the last window not logged)"),
    };
    tracing::warn!(
        "refused {} from {peer}: {} ({answer}): {remark}{also}",
        request_code_name(request),
        response_code_name(answer),
    );
}

impl Window {
    /// `Some(lines left out before this one)` when a line may be logged now.
    fn admit(&self, now: Instant) -> Option<u64> {
        let window = Duration::from_millis(REFUSAL_WINDOW_MS);
        let expired = self
            .started
            .get()
            .is_none_or(|started| now.duration_since(started) >= window);
        if expired {
            self.started.set(Some(now));
            self.logged.set(0);
        }
        if self.logged.get() >= REFUSALS_LOGGED_PER_WINDOW_MAX {
            self.left_out.set(self.left_out.get() + 1);
            return None;
        }
        self.logged.set(self.logged.get() + 1);
        Some(self.left_out.replace(0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_real_refusals_of_sends_and_pulls_count() {
        use request_code::*;
        use response_code::*;
        assert!(is_refusal(SEND_MESSAGE_V2, TOPIC_NOT_EXIST));
        assert!(is_refusal(SEND_BATCH_MESSAGE, MESSAGE_ILLEGAL));
        assert!(!is_refusal(SEND_MESSAGE, SUCCESS));
        assert!(!is_refusal(SEND_MESSAGE, FLUSH_DISK_TIMEOUT));
        assert!(is_refusal(PULL_MESSAGE, SUBSCRIPTION_NOT_EXIST));
        assert!(!is_refusal(PULL_MESSAGE, PULL_NOT_FOUND));
        assert!(!is_refusal(PULL_MESSAGE, PULL_OFFSET_MOVED));
        assert!(is_refusal(POP_MESSAGE, POLLING_FULL));
        assert!(!is_refusal(HEART_BEAT, SYSTEM_ERROR));
    }

    #[test]
    fn a_window_admits_its_lines_then_counts_the_rest() {
        let window = Window {
            started: Cell::new(None),
            logged: Cell::new(0),
            left_out: Cell::new(0),
        };
        let start = Instant::now();
        for _ in 0..REFUSALS_LOGGED_PER_WINDOW_MAX {
            assert_eq!(window.admit(start), Some(0));
        }
        assert_eq!(window.admit(start), None);
        assert_eq!(window.admit(start + Duration::from_millis(10)), None);
        let next = start + Duration::from_millis(REFUSAL_WINDOW_MS);
        assert_eq!(window.admit(next), Some(2));
        assert_eq!(window.admit(next), Some(0));
    }
}
