//! What the broker counts for its Prometheus endpoint, with RocketMQ 5's
//! metric names (`BrokerMetricsManager`, `RemotingMetricsManager`).
//!
//! Each shard counts into its own [`ShardMetrics`] (a `RefCell`, no atomics,
//! no allocation once a series exists); a scrape copies every shard's
//! [`Counters`] and sums them (`shard::metrics`), then adds the gauges it
//! reads at that moment, and [`render`] writes the exposition. Series are
//! capped ([`SERIES_MAX`] per shard): past the cap a new series is not
//! made and `ferrocket_metrics_series_dropped_total` counts what it missed.

pub(crate) mod gauges;
pub(crate) mod labels;
pub(crate) mod render;

use std::cell::{Cell, RefCell};
use std::time::Duration;

use ferrocket_metrics::histogram::{Histogram, FINISH_LATENCY_S_BOUNDS, MESSAGE_SIZE_BOUNDS};
pub(crate) use ferrocket_metrics::rpc::RpcKey;
use ferrocket_metrics::rpc::RpcLatencies;
use foldhash::HashMap;
pub(crate) use labels::{ConsumeMode, MessageType};

/// Most labelled series one shard keeps (topics × message types, groups ×
/// topics, request × response codes, ...).
pub(crate) const SERIES_MAX: usize = 100_000;

/// Messages sent to one topic, of one message type.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Inbound {
    pub messages: u64,
    /// Stored bytes (`rocketmq_throughput_in_total`: Java's wrote bytes).
    pub bytes: u64,
    /// One observation per request: its bytes per message, as Java's.
    pub size: Histogram,
}

/// Messages a group took from one topic.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Outbound {
    pub messages: u64,
    pub bytes: u64,
    /// Answers that carried them (Java's `times` of GROUP_GET_NUMS).
    pub calls: u64,
}

/// Transactions ended on one topic.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Ended {
    pub commits: u64,
    pub rollbacks: u64,
    /// Seconds from the half message's birth to its end.
    pub finish_latency_s: Histogram,
}

/// Everything one shard counted since it started.
#[derive(Debug, Clone, Default)]
pub(crate) struct Counters {
    /// By topic, then by [`MessageType`] index.
    pub inbound: HashMap<String, [Inbound; 4]>,
    /// By group, then topic, then `[not retry, retry]`.
    pub outbound: HashMap<String, HashMap<String, [Outbound; 2]>>,
    pub rpc: RpcLatencies,
    /// Messages sent to the group's DLQ, by group, then original topic.
    pub dlq: HashMap<String, HashMap<String, u64>>,
    /// By real topic.
    pub transactions: HashMap<String, Ended>,
    pub room: Room,
}

/// Series made so far, against [`SERIES_MAX`].
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Room {
    pub series: usize,
    /// Counts that found no room for a new series.
    pub dropped: u64,
}

impl Room {
    /// Takes room for one more series, or counts the miss.
    fn take(&mut self) -> bool {
        if self.series >= SERIES_MAX {
            self.dropped += 1;
            return false;
        }
        self.series += 1;
        true
    }
}

/// Runs `f` on `map[key]`, making the entry if there is room for it.
fn with_entry<V: Default>(
    map: &mut HashMap<String, V>,
    key: &str,
    room: &mut Room,
    f: impl FnOnce(&mut V, &mut Room),
) {
    if let Some(value) = map.get_mut(key) {
        f(value, room);
        return;
    }
    if room.take() {
        f(map.entry(key.to_string()).or_default(), room);
    }
}

impl Counters {
    /// Adds `other` in (a scrape sums every shard's).
    pub fn merge(&mut self, other: Counters) {
        for (topic, theirs) in other.inbound {
            let mine = self.inbound.entry(topic).or_default();
            for (m, t) in mine.iter_mut().zip(theirs.iter()) {
                m.messages += t.messages;
                m.bytes += t.bytes;
                m.size.merge(&t.size);
            }
        }
        for (group, topics) in other.outbound {
            let mine = self.outbound.entry(group).or_default();
            for (topic, theirs) in topics {
                let entry = mine.entry(topic).or_default();
                for (m, t) in entry.iter_mut().zip(theirs.iter()) {
                    m.messages += t.messages;
                    m.bytes += t.bytes;
                    m.calls += t.calls;
                }
            }
        }
        self.rpc.merge(&other.rpc);
        for (group, topics) in other.dlq {
            let mine = self.dlq.entry(group).or_default();
            for (topic, count) in topics {
                *mine.entry(topic).or_default() += count;
            }
        }
        for (topic, theirs) in other.transactions {
            let mine = self.transactions.entry(topic).or_default();
            mine.commits += theirs.commits;
            mine.rollbacks += theirs.rollbacks;
            mine.finish_latency_s.merge(&theirs.finish_latency_s);
        }
        self.room.series += other.room.series;
        self.room.dropped += other.room.dropped;
    }
}

/// One shard's counters.
#[derive(Debug, Default)]
pub(crate) struct ShardMetrics {
    counters: RefCell<Counters>,
    in_process_calls: Cell<u64>,
}

impl ShardMetrics {
    /// A send stored `messages` messages of `bytes` to `topic` (retry and
    /// DLQ topics are not counted, as in Java).
    pub fn count_in(&self, topic: &str, kind: MessageType, messages: u64, bytes: u64) {
        if messages == 0 || labels::retry_or_dlq(topic) {
            return;
        }
        let c = &mut *self.counters.borrow_mut();
        with_entry(&mut c.inbound, topic, &mut c.room, |types, _| {
            let entry = &mut types[kind as usize];
            entry.messages += messages;
            entry.bytes += bytes;
            entry
                .size
                .observe(MESSAGE_SIZE_BOUNDS, (bytes / messages) as f64);
        });
    }

    /// `group` took `messages` messages of `bytes` from `topic` (a pull's
    /// or a pop's answer; `retry`: from the pop retry topic).
    pub fn count_out(&self, group: &str, topic: &str, retry: bool, messages: u64, bytes: u64) {
        if messages == 0 {
            return;
        }
        let c = &mut *self.counters.borrow_mut();
        with_entry(&mut c.outbound, group, &mut c.room, |topics, room| {
            with_entry(topics, topic, room, |counts, _| {
                let entry = &mut counts[usize::from(retry)];
                entry.messages += messages;
                entry.bytes += bytes;
                entry.calls += 1;
            });
        });
    }

    /// One request answered after `elapsed`.
    pub fn observe_rpc(&self, key: RpcKey, elapsed: Duration) {
        self.counters.borrow_mut().rpc.observe(key, elapsed);
    }

    /// A request was answered in process (`proxyMode=local`).
    pub fn count_in_process(&self) {
        self.in_process_calls.set(self.in_process_calls.get() + 1);
    }

    pub fn in_process_calls(&self) -> u64 {
        self.in_process_calls.get()
    }

    /// A message of `topic` consumed by `group` went to the group's DLQ.
    pub fn count_dlq(&self, group: &str, topic: &str) {
        let c = &mut *self.counters.borrow_mut();
        with_entry(&mut c.dlq, group, &mut c.room, |topics, room| {
            with_entry(topics, topic, room, |count, _| *count += 1);
        });
    }

    /// A transaction on `topic` ended, `age_s` after its half message was born.
    pub fn count_end_transaction(&self, topic: &str, commit: bool, age_s: f64) {
        let c = &mut *self.counters.borrow_mut();
        with_entry(&mut c.transactions, topic, &mut c.room, |ended, _| {
            if commit {
                ended.commits += 1;
            } else {
                ended.rollbacks += 1;
            }
            ended
                .finish_latency_s
                .observe(FINISH_LATENCY_S_BOUNDS, age_s);
        });
    }

    /// Reads everything counted so far, in place.
    pub fn with<R>(&self, f: impl FnOnce(&Counters) -> R) -> R {
        f(&self.counters.borrow())
    }

    /// A copy of everything counted so far.
    pub fn snapshot(&self) -> Counters {
        self.counters.borrow().clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_land_in_their_series_and_merge() {
        let a = ShardMetrics::default();
        a.count_in("orders", MessageType::Normal, 2, 2048);
        a.count_in("orders", MessageType::Delay, 1, 100);
        a.count_in("%RETRY%g", MessageType::Normal, 1, 100);
        a.count_out("g", "orders", false, 3, 300);
        a.count_dlq("g", "orders");
        let key = RpcKey {
            request_code: 310,
            response_code: 0,
            oneway: false,
        };
        a.observe_rpc(key, Duration::from_micros(1500));
        let b = ShardMetrics::default();
        b.count_in("orders", MessageType::Normal, 1, 10);
        b.count_out("g", "orders", true, 1, 10);
        let mut total = a.snapshot();
        total.merge(b.snapshot());
        let orders = total.inbound["orders"];
        assert_eq!(orders[MessageType::Normal as usize].messages, 3);
        assert_eq!(orders[MessageType::Normal as usize].bytes, 2058);
        assert_eq!(orders[MessageType::Normal as usize].size.count, 2);
        assert_eq!(orders[MessageType::Delay as usize].messages, 1);
        assert!(!total.inbound.contains_key("%RETRY%g"));
        let out = total.outbound["g"]["orders"];
        assert_eq!((out[0].messages, out[1].messages), (3, 1));
        assert_eq!(total.dlq["g"]["orders"], 1);
        assert_eq!(total.rpc.series[&key].count, 1);
    }

    #[test]
    fn series_past_the_cap_are_dropped_and_counted() {
        let metrics = ShardMetrics::default();
        metrics.counters.borrow_mut().room.series = SERIES_MAX;
        metrics.count_in("new-topic", MessageType::Normal, 1, 1);
        let counters = metrics.snapshot();
        assert!(counters.inbound.is_empty());
        assert_eq!(counters.room.dropped, 1);
    }
}
