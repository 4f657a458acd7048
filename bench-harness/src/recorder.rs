//! Where workers record results, and how the once-a-second sampler
//! collects them.
//!
//! Each connection (and each consumer) records into its own [`Shard`], a
//! mutex that only its own tasks and the sampler touch, so recording stays
//! cheap and uncontended. The sampler drains all shards every second into
//! one [`Counts`] for the progress line and the timeline, and adds it to the
//! run's totals once warm-up is over.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

use ferrocket_client::error::response_code_name;
use ferrocket_client::ClientError;
use serde::Serialize;

use crate::hist::LatencyHistogram;

/// Why a request failed, as counted in the error table.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum ErrorKind {
    /// The server answered this response code.
    Code(i32),
    Timeout,
    Closed,
    Connect,
    Io,
    Protocol,
    /// A pull body that did not decode as stored records.
    BadRecords,
    Other,
}

impl ErrorKind {
    pub fn from_client(error: &ClientError) -> Self {
        match error {
            ClientError::Response { code, .. } => ErrorKind::Code(*code),
            ClientError::Timeout { .. } => ErrorKind::Timeout,
            ClientError::Closed { .. } => ErrorKind::Closed,
            ClientError::Connect { .. } => ErrorKind::Connect,
            ClientError::Io { .. } => ErrorKind::Io,
            ClientError::Protocol(_) => ErrorKind::Protocol,
            _ => ErrorKind::Other,
        }
    }

    /// Label used as the key of the error table.
    pub fn label(&self) -> String {
        match self {
            ErrorKind::Code(code) => format!("code {code} {}", response_code_name(*code)),
            ErrorKind::Timeout => "timeout".into(),
            ErrorKind::Closed => "connection closed".into(),
            ErrorKind::Connect => "connect failed".into(),
            ErrorKind::Io => "i/o error".into(),
            ErrorKind::Protocol => "undecodable response".into(),
            ErrorKind::BadRecords => "undecodable pull body".into(),
            ErrorKind::Other => "other".into(),
        }
    }
}

/// What happened during some interval, summed over shards.
#[derive(Debug, Clone, Default)]
pub struct Counts {
    /// Send latency: acknowledgement, or oneway enqueue.
    pub send_latency: LatencyHistogram,
    /// Pull round trips that brought messages (empty long polls excluded).
    pub pull_latency: LatencyHistogram,
    /// Send-to-receive latency of messages this run sent (e2e mode).
    pub e2e_latency: LatencyHistogram,
    /// Send requests, failed ones included.
    pub requests: u64,
    /// Pull requests, failed ones included (empty long polls excluded).
    pub pulls: u64,
    pub sent_msgs: u64,
    pub sent_bytes: u64,
    pub received_msgs: u64,
    pub received_bytes: u64,
    /// Requests that failed, by [`ErrorKind::label`].
    pub errors: BTreeMap<String, u64>,
}

impl Counts {
    pub fn error_total(&self) -> u64 {
        self.errors.values().sum()
    }

    /// Adds everything in `other`.
    pub fn merge(&mut self, other: &Counts) {
        self.send_latency.merge(&other.send_latency);
        self.pull_latency.merge(&other.pull_latency);
        self.e2e_latency.merge(&other.e2e_latency);
        self.requests += other.requests;
        self.pulls += other.pulls;
        self.sent_msgs += other.sent_msgs;
        self.sent_bytes += other.sent_bytes;
        self.received_msgs += other.received_msgs;
        self.received_bytes += other.received_bytes;
        for (label, count) in &other.errors {
            *self.errors.entry(label.clone()).or_default() += count;
        }
    }

    /// Moves everything out, leaving zeroes (histograms keep their memory).
    pub fn drain_into(&mut self, out: &mut Counts) {
        out.merge(self);
        self.send_latency.reset();
        self.pull_latency.reset();
        self.e2e_latency.reset();
        self.requests = 0;
        self.pulls = 0;
        self.sent_msgs = 0;
        self.sent_bytes = 0;
        self.received_msgs = 0;
        self.received_bytes = 0;
        self.errors.clear();
    }

    /// A successful send of `msgs` messages carrying `bytes` body bytes.
    pub fn sent(&mut self, latency_ns: u64, msgs: u64, bytes: u64) {
        self.send_latency.record_ns(latency_ns);
        self.requests += 1;
        self.sent_msgs += msgs;
        self.sent_bytes += bytes;
    }

    /// A failed send.
    pub fn send_failed(&mut self, kind: &ErrorKind) {
        self.requests += 1;
        *self.errors.entry(kind.label()).or_default() += 1;
    }

    /// An error that is not a failed request (e.g. a bad pull body).
    pub fn note_error(&mut self, kind: &ErrorKind) {
        *self.errors.entry(kind.label()).or_default() += 1;
    }

    /// A failed pull.
    pub fn pull_failed(&mut self, kind: &ErrorKind) {
        self.pulls += 1;
        *self.errors.entry(kind.label()).or_default() += 1;
    }

    /// A pull that came back (with or without messages).
    pub fn pulled(&mut self, latency_ns: u64, msgs: u64, bytes: u64) {
        self.pull_latency.record_ns(latency_ns);
        self.pulls += 1;
        self.received_msgs += msgs;
        self.received_bytes += bytes;
    }
}

/// One connection's or consumer's slot.
#[derive(Debug, Default)]
pub struct Shard {
    counts: Mutex<Counts>,
}

impl Shard {
    pub fn lock(&self) -> MutexGuard<'_, Counts> {
        self.counts
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// All shards of one run window.
#[derive(Debug, Default)]
pub struct Recorder {
    shards: Mutex<Vec<Arc<Shard>>>,
}

impl Recorder {
    pub fn new() -> Self {
        Self::default()
    }

    /// A new shard, drained by [`Recorder::drain`] from now on.
    pub fn shard(&self) -> Arc<Shard> {
        let shard = Arc::new(Shard::default());
        self.shards
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .push(shard.clone());
        shard
    }

    /// Everything recorded since the last drain.
    pub fn drain(&self) -> Counts {
        let shards = self
            .shards
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone();
        let mut out = Counts::default();
        for shard in shards {
            shard.lock().drain_into(&mut out);
        }
        out
    }
}

/// One second of the throughput-over-time plot.
#[derive(Debug, Clone, Serialize)]
pub struct Sample {
    /// Seconds since the start of the run (end of this interval).
    pub t_s: f64,
    /// Which target (compare mode) or the mode name.
    pub target: String,
    /// Warm-up intervals are plotted but not counted.
    pub warmup: bool,
    pub sent_per_s: f64,
    pub received_per_s: f64,
    /// Body megabytes (10^6) per second, of the headline direction.
    pub mb_per_s: f64,
    pub errors: u64,
    pub request_p99_us: f64,
    pub e2e_p99_us: f64,
    /// Broker CPU in percent of one core over this interval, when watched.
    pub broker_cpu_pct: Option<f64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drain_collects_every_shard_once() {
        let recorder = Recorder::new();
        let a = recorder.shard();
        let b = recorder.shard();
        a.lock().sent(1_000, 1, 100);
        a.lock().sent(2_000, 1, 100);
        b.lock().sent(3_000, 4, 400);
        b.lock().send_failed(&ErrorKind::Code(14));
        b.lock().pull_failed(&ErrorKind::Timeout);
        b.lock().send_failed(&ErrorKind::Code(14));

        let first = recorder.drain();
        assert_eq!(first.sent_msgs, 6);
        assert_eq!(first.sent_bytes, 600);
        assert_eq!(first.requests, 5);
        assert_eq!(first.pulls, 1);
        assert_eq!(first.send_latency.len(), 3);
        assert_eq!(first.errors.get("code 14 SERVICE_NOT_AVAILABLE"), Some(&2));
        assert_eq!(first.errors.get("timeout"), Some(&1));
        assert_eq!(first.error_total(), 3);

        let second = recorder.drain();
        assert_eq!(second.sent_msgs, 0);
        assert!(second.send_latency.is_empty());
        assert!(second.errors.is_empty());
    }

    #[test]
    fn merge_sums_both_directions() {
        let mut total = Counts::default();
        let mut interval = Counts::default();
        interval.pulled(5_000, 32, 32 * 1024);
        interval.e2e_latency.record_ns(700_000);
        total.merge(&interval);
        total.merge(&interval);
        assert_eq!(total.received_msgs, 64);
        assert_eq!(total.received_bytes, 65_536);
        assert_eq!(total.e2e_latency.len(), 2);
        assert_eq!(total.pulls, 2);
        assert_eq!(total.requests, 0);
        assert_eq!(total.pull_latency.len(), 2);
        assert!(total.send_latency.is_empty());
    }

    #[test]
    fn error_labels_name_the_response_code() {
        assert_eq!(ErrorKind::Code(17).label(), "code 17 TOPIC_NOT_EXIST");
        assert_eq!(ErrorKind::Code(9999).label(), "code 9999 UNKNOWN");
        let closed = ClientError::Closed {
            addr: "x".into(),
            reason: "y".into(),
        };
        assert_eq!(ErrorKind::from_client(&closed), ErrorKind::Closed);
        let response = ClientError::Response {
            code: 2,
            remark: String::new(),
        };
        assert_eq!(ErrorKind::from_client(&response), ErrorKind::Code(2));
    }
}
