//! The figures a scrape reads at that moment (RocketMQ's observable
//! gauges): each shard's, then the broker's, summed into one [`Scrape`].

use std::collections::HashMap;

use super::Counters;

/// `rocketmq_consumer_*` of one group on one topic (`ConsumerLagCalculator`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Lag {
    /// Stored but not committed (`rocketmq_consumer_lag_messages`).
    pub lag_messages: i64,
    /// Handed out but not committed (`rocketmq_consumer_inflight_messages`).
    pub inflight_messages: i64,
    /// Stored but not handed out (`rocketmq_consumer_ready_messages`).
    pub ready_messages: i64,
    /// Age of the oldest uncommitted message.
    pub lag_latency_ms: i64,
    /// Age of the oldest message not handed out.
    pub queueing_latency_ms: i64,
}

impl Lag {
    /// Sums of the counts, the oldest of the ages.
    pub fn merge(&mut self, other: &Lag) {
        self.lag_messages += other.lag_messages;
        self.inflight_messages += other.inflight_messages;
        self.ready_messages += other.ready_messages;
        self.lag_latency_ms = self.lag_latency_ms.max(other.lag_latency_ms);
        self.queueing_latency_ms = self.queueing_latency_ms.max(other.queueing_latency_ms);
    }
}

/// (group, original topic, is_retry): one lag series.
pub(crate) type LagKey = (String, String, bool);

/// A consumer connection's labels: group, language, version, consume mode.
pub(crate) type ConsumerKey = (String, String, String, &'static str);

/// What one shard reports besides its counters.
#[derive(Debug, Clone, Default)]
pub(crate) struct ShardGauges {
    pub shard: usize,
    pub connections: u64,
    pub held_pulls: u64,
    /// Bytes its connections hold (queued output, requests in hand).
    pub held_bytes: u64,
    /// Everything below this CommitLog position is in its ConsumeQueues.
    pub dispatched_offset: i64,
    /// Pop checkpoints waiting for acks on its queues.
    pub pop_checkpoints: u64,
    /// Requests it has answered in process (`proxyMode=local`).
    pub in_process_calls: u64,
    /// Producer connections by (language, version).
    pub producers: HashMap<(String, String), u64>,
    pub consumers: HashMap<ConsumerKey, u64>,
    /// Lag of the queues it owns.
    pub lag: HashMap<LagKey, Lag>,
}

/// The broker-wide figures, read on the shard that serves the scrape.
#[derive(Debug, Clone, Default)]
pub(crate) struct BrokerGauges {
    pub topics: u64,
    pub groups: u64,
    pub permission: i64,
    /// Used bytes of the file system holding the store.
    pub storage_used_bytes: Option<u64>,
    pub written_offset: i64,
    pub flushed_offset: i64,
    /// Age of the oldest stored message.
    pub reserve_time_ms: Option<i64>,
    /// Tiered storage (when on): sealed segments waiting for their upload,
    /// and failed upload tries so far.
    pub tier_pending_segments: Option<i64>,
    pub tier_upload_failures: Option<i64>,
}

/// Everything one scrape shows.
#[derive(Debug, Clone, Default)]
pub(crate) struct Scrape {
    /// Every series carries these (`cluster`, `node_type`, `node_id`, ...).
    pub common_labels: Vec<(String, String)>,
    pub counters: Counters,
    pub shards: Vec<ShardGauges>,
    pub broker: BrokerGauges,
}

impl Scrape {
    /// Lag summed over the shards.
    pub fn lag(&self) -> HashMap<LagKey, Lag> {
        let mut total: HashMap<LagKey, Lag> = HashMap::new();
        for shard in &self.shards {
            for (key, lag) in &shard.lag {
                total.entry(key.clone()).or_default().merge(lag);
            }
        }
        total
    }

    /// How far the slowest shard's dispatch is behind the CommitLog end.
    pub fn dispatch_behind_bytes(&self) -> i64 {
        let slowest = self.shards.iter().map(|s| s.dispatched_offset).min();
        slowest.map_or(0, |at| (self.broker.written_offset - at).max(0))
    }

    pub fn producers(&self) -> HashMap<(String, String), u64> {
        sum_maps(self.shards.iter().map(|s| &s.producers))
    }

    pub fn consumers(&self) -> HashMap<ConsumerKey, u64> {
        sum_maps(self.shards.iter().map(|s| &s.consumers))
    }
}

fn sum_maps<'a, K: Clone + Eq + std::hash::Hash + 'a>(
    maps: impl Iterator<Item = &'a HashMap<K, u64>>,
) -> HashMap<K, u64> {
    let mut total = HashMap::new();
    for map in maps {
        for (key, count) in map {
            *total.entry(key.clone()).or_default() += count;
        }
    }
    total
}
