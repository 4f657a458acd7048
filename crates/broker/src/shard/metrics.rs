//! A scrape of the broker's metrics: every shard's counters and its gauges
//! (connections, held pulls, dispatch progress, the lag of the queues it
//! owns), gathered with one typed call each, plus the broker-wide figures
//! read where the scrape is served.

use std::collections::HashMap;
use std::rc::Rc;

use ferrocket_protocol::record::decode_record;
use ferrocket_protocol::version::version_desc;
use ferrocket_runtime::shard::ShardCall;

use super::Shard;
use crate::clock::now_ms;
use crate::services::metrics::gauges::{BrokerGauges, Lag, LagKey, Scrape, ShardGauges};
use crate::services::metrics::{ConsumeMode, Counters};

/// Most store reads one shard makes per scrape for the lag ages (one per
/// queue behind); queues past it report an age of 0.
pub(crate) const LAG_TIMESTAMP_READS_MAX: usize = 1_024;
/// The write bit of `rocketmq_broker_permission`, off while the disk is full.
const PERM_WRITE: i64 = ferrocket_protocol::body::perm::WRITE as i64;

/// On every shard: its counters and gauges.
#[derive(Clone)]
struct Collect;

impl ShardCall<Shard> for Collect {
    type Reply = (Counters, ShardGauges);

    async fn run(self, shard: Rc<Shard>) -> (Counters, ShardGauges) {
        (shard.metrics().snapshot(), shard_gauges(&shard))
    }
}

/// Everything `/metrics` shows now. A shard that cannot answer is left out.
pub(crate) async fn scrape(shard: &Rc<Shard>) -> Scrape {
    let mut scrape = Scrape {
        common_labels: common_labels(shard),
        broker: broker_gauges(shard),
        ..Scrape::default()
    };
    for (counters, gauges) in shard.call_all(Collect).await.into_iter().flatten() {
        scrape.counters.merge(counters);
        scrape.shards.push(gauges);
    }
    scrape
}

/// `cluster`, `node_type`, `node_id` (the broker name, as Java's), then
/// `metricsLabel`'s pairs and `aggregation` with `metricsInDelta`.
fn common_labels(shard: &Shard) -> Vec<(String, String)> {
    let config = shard.config();
    let mut labels = vec![
        ("cluster".to_string(), config.broker_cluster_name.clone()),
        ("node_type".to_string(), "broker".to_string()),
        ("node_id".to_string(), config.broker_name.clone()),
    ];
    labels.extend(config.metrics.labels.iter().cloned());
    if config.metrics.in_delta {
        labels.push(("aggregation".to_string(), "delta".to_string()));
    }
    labels
}

fn broker_gauges(shard: &Shard) -> BrokerGauges {
    let reader = shard.store.reader();
    let mut permission = i64::from(shard.config().broker_permission);
    if shard.store.is_disk_full() {
        permission &= !PERM_WRITE;
    }
    BrokerGauges {
        topics: shard.topics().with(|t| t.topic_config_table.len()) as u64,
        groups: shard.groups().with(|g| g.subscription_group_table.len()) as u64,
        permission,
        storage_used_bytes: ferrocket_store::disk_used_bytes(shard.store.root_dir()),
        written_offset: reader.written_offset(),
        flushed_offset: reader.durable_offset(),
        reserve_time_ms: earliest_store_time(shard).map(|at| (now_ms() - at).max(0)),
        tier_pending_segments: reader.tier_pending_segments().map(|n| n as i64),
        tier_upload_failures: reader.tier().map(|tier| {
            ferrocket_store::tier::TierStatus::get(&tier.status.upload_failures) as i64
        }),
    }
}

/// The store time of the oldest record in the CommitLog.
fn earliest_store_time(shard: &Shard) -> Option<i64> {
    let reader = shard.store.reader();
    let min = reader.min_offset();
    if min >= reader.written_offset() {
        return None;
    }
    let size_bytes = reader.read(min, 4)?;
    let size = i32::from_be_bytes(size_bytes.as_ref().try_into().ok()?);
    let record = reader.read(min, usize::try_from(size).ok()?)?;
    decode_record(&record, false)
        .ok()
        .map(|r| r.store_timestamp_ms)
}

fn shard_gauges(shard: &Shard) -> ShardGauges {
    let (producers, consumers) = connection_counts(shard);
    ShardGauges {
        shard: shard.index,
        connections: shard.connection_count() as u64,
        held_pulls: shard.polls().held_count() as u64,
        held_bytes: ferrocket_runtime::server::held_bytes() as u64,
        dispatched_offset: shard.store.dispatched_offset(),
        pop_checkpoints: shard.pop().state.borrow().len() as u64,
        in_process_calls: shard.metrics().in_process_calls(),
        producers,
        consumers,
        lag: owned_lag(shard),
    }
}

type ConnectionCounts = (
    HashMap<(String, String), u64>,
    HashMap<crate::services::metrics::gauges::ConsumerKey, u64>,
);

/// The producer and consumer channels on this shard's connections, by
/// language and version (Java's lower-cased names), and for consumers
/// group and consume mode.
fn connection_counts(shard: &Shard) -> ConnectionCounts {
    let infos = shard.conn_infos().borrow();
    let labels = |conn_id: u64| {
        infos.get(&conn_id).map(|info| {
            (
                info.language.to_ascii_lowercase(),
                version_desc(info.version).to_ascii_lowercase(),
            )
        })
    };
    let mut producers: HashMap<(String, String), u64> = HashMap::new();
    let mut consumers = HashMap::new();
    shard.clients().with(|table| {
        for channels in table.producers.values() {
            for channel in channels.values() {
                if let Some(key) = labels(channel.conn_id) {
                    *producers.entry(key).or_default() += 1;
                }
            }
        }
        for (group, info) in &table.consumers {
            let mode = ConsumeMode::of(info.consume_type).label();
            for channel in info.clients.values() {
                if let Some((language, version)) = labels(channel.conn_id) {
                    *consumers
                        .entry((group.clone(), language, version, mode))
                        .or_default() += 1;
                }
            }
        }
    });
    (producers, consumers)
}

/// Lag of every (group, queue) with a committed offset on this shard's
/// queues, by (group, original topic, is_retry). A pop's committed offset
/// says "popped up to"; its unacked messages are in flight. A pull
/// consumer's in-flight messages are not known to the broker (Java keeps
/// a pull-offset table), so they count as ready.
fn owned_lag(shard: &Shard) -> HashMap<LagKey, Lag> {
    let pending = shard.pop().state.borrow().first_pending_all();
    let offsets = shard.offsets().borrow();
    let now = now_ms();
    let mut reads_left = LAG_TIMESTAMP_READS_MAX;
    let mut total: HashMap<LagKey, Lag> = HashMap::new();
    for (key, queues) in offsets.entries() {
        // Keys are `topic@group`; a file with another shape is skipped.
        let Some((stored_topic, group)) = key.split_once('@') else {
            continue;
        };
        let Some((topic, retry)) = lag_topic(stored_topic, group) else {
            continue;
        };
        for (queue_id, committed) in queues {
            let max = shard
                .store
                .consume_queue(stored_topic, *queue_id)
                .map_or(0, |q| q.max_offset().max(0));
            let handed_out = (*committed).clamp(0, max);
            let pop_key = (group.to_string(), stored_topic.to_string(), *queue_id);
            let first_unacked = pending
                .get(&pop_key)
                .map_or(handed_out, |p| (*p).min(handed_out));
            let mut age = |offset: i64| -> i64 {
                if offset >= max || reads_left == 0 {
                    return 0;
                }
                reads_left -= 1;
                shard
                    .store_timestamp_at(stored_topic, *queue_id, offset)
                    .map_or(0, |at| (now - at).max(0))
            };
            let lag = Lag {
                lag_messages: max - first_unacked,
                inflight_messages: handed_out - first_unacked,
                ready_messages: max - handed_out,
                lag_latency_ms: age(first_unacked),
                queueing_latency_ms: age(handed_out),
            };
            let entry = total.entry((group.to_string(), topic.to_string(), retry));
            entry.or_default().merge(&lag);
        }
    }
    total
}

/// The topic a stored topic's lag is shown under: itself, or for a pop
/// retry topic (`%RETRY%{group}_{topic}`, `%RETRY%{group}+{topic}`) its
/// original topic with is_retry. A push consumer's `%RETRY%{group}` and
/// DLQ topics are left out, as Java's lag calculator leaves them.
fn lag_topic<'a>(stored: &'a str, group: &str) -> Option<(&'a str, bool)> {
    if stored.starts_with("%DLQ%") {
        return None;
    }
    let Some(rest) = stored.strip_prefix("%RETRY%") else {
        return Some((stored, false));
    };
    let original = rest.strip_prefix(group)?;
    original
        .strip_prefix('_')
        .or_else(|| original.strip_prefix('+'))
        .filter(|t| !t.is_empty())
        .map(|t| (t, true))
}

impl Shard {
    /// The store time of the message at `queue_offset` of a queue this
    /// shard owns.
    pub(crate) fn store_timestamp_at(
        &self,
        topic: &str,
        queue_id: i32,
        queue_offset: i64,
    ) -> Option<i64> {
        let queue = self.store.consume_queue(topic, queue_id).ok()?;
        let entry = queue.entry(queue_offset).filter(|e| !e.is_lost())?;
        let bytes = self
            .store
            .read_records(entry.physical_offset, usize::try_from(entry.size).ok()?)?;
        decode_record(&bytes, false)
            .ok()
            .map(|record| record.store_timestamp_ms)
    }
}

#[cfg(test)]
mod tests {
    use super::lag_topic;

    #[test]
    fn retry_topics_show_under_their_original_topic() {
        assert_eq!(lag_topic("orders", "g"), Some(("orders", false)));
        assert_eq!(lag_topic("%RETRY%g_orders", "g"), Some(("orders", true)));
        assert_eq!(lag_topic("%RETRY%g+orders", "g"), Some(("orders", true)));
        assert_eq!(lag_topic("%RETRY%g", "g"), None);
        assert_eq!(lag_topic("%DLQ%g", "g"), None);
    }
}
