//! Writes a [`Scrape`] in the OpenMetrics text format with the
//! `prometheus-client` crate's encoder. The names are what RocketMQ 5.1.4+
//! exposes through OpenTelemetry's Prometheus exporter: counters end in
//! `_total`, and a metric with a unit gets it as a suffix
//! (`rocketmq_rpc_latency_milliseconds_bucket`,
//! `rocketmq_storage_size_bytes`), so dashboards made for Java's broker
//! chart Ferrocket's. Ferrocket's own figures are `ferrocket_*`.

use std::fmt;

use ferrocket_metrics::exposition::{self, milliseconds, Labels, Unit, Writer};
use ferrocket_metrics::family::Family;
use ferrocket_metrics::histogram::{FINISH_LATENCY_S_BOUNDS, MESSAGE_SIZE_BOUNDS};

use super::gauges::Scrape;
use super::labels::MessageType;
use super::labels::{bool_label, system_group, system_topic};

/// The whole exposition of `scrape`.
pub(crate) fn render(scrape: Scrape) -> String {
    let common = scrape.common_labels.clone();
    exposition::render(scrape, common, write_families)
}

/// The same families as data, for the OTLP and LOG exporters.
pub(crate) fn families(scrape: &Scrape) -> Vec<Family> {
    exposition::collect(scrape, &scrape.common_labels, write_families)
}

fn write_families(w: &mut Writer<'_, '_>, scrape: &Scrape) -> fmt::Result {
    messages_in(w, scrape)?;
    messages_out(w, scrape)?;
    scrape.counters.rpc.write(w)?;
    transactions(w, scrape)?;
    consumers(w, scrape)?;
    connections(w, scrape)?;
    broker(w, scrape)?;
    storage(w, scrape)?;
    shards(w, scrape)
}

fn messages_in(w: &mut Writer<'_, '_>, scrape: &Scrape) -> fmt::Result {
    let mut messages = Vec::new();
    let mut bytes = Vec::new();
    let mut sizes = Vec::new();
    for (topic, types) in &scrape.counters.inbound {
        for kind in MessageType::ALL {
            let counts = &types[kind as usize];
            if counts.messages == 0 {
                continue;
            }
            let labels = vec![
                ("topic", topic.clone()),
                ("message_type", kind.label().to_string()),
                ("is_system", system_topic(topic).to_string()),
            ];
            messages.push((labels.clone(), counts.messages));
            bytes.push((labels.clone(), counts.bytes));
            sizes.push((labels, counts.size));
        }
    }
    w.counter(
        "rocketmq_messages_in",
        "Total number of incoming messages",
        messages,
    )?;
    w.counter(
        "rocketmq_throughput_in",
        "Total traffic of incoming messages",
        bytes,
    )?;
    w.histogram(
        "rocketmq_message_size",
        "Incoming messages size",
        None,
        MESSAGE_SIZE_BOUNDS,
        sizes,
    )
}

fn messages_out(w: &mut Writer<'_, '_>, scrape: &Scrape) -> fmt::Result {
    let mut messages = Vec::new();
    let mut bytes = Vec::new();
    for (group, topics) in &scrape.counters.outbound {
        for (topic, counts) in topics {
            for (retry, counts) in counts.iter().enumerate() {
                if counts.messages == 0 {
                    continue;
                }
                let labels = vec![
                    ("topic", topic.clone()),
                    ("consumer_group", group.clone()),
                    ("is_system", system_label(topic, group).to_string()),
                    ("is_retry", bool_label(retry == 1).to_string()),
                ];
                messages.push((labels.clone(), counts.messages));
                bytes.push((labels, counts.bytes));
            }
        }
    }
    w.counter(
        "rocketmq_messages_out",
        "Total number of outgoing messages",
        messages,
    )?;
    w.counter(
        "rocketmq_throughput_out",
        "Total traffic of outgoing messages",
        bytes,
    )?;
    let mut dlq = Vec::new();
    for (group, topics) in &scrape.counters.dlq {
        for (topic, count) in topics {
            let labels = vec![
                ("consumer_group", group.clone()),
                ("topic", topic.clone()),
                ("is_system", system_label(topic, group).to_string()),
            ];
            dlq.push((labels, *count));
        }
    }
    w.counter(
        "rocketmq_send_to_dlq_messages",
        "Consumer send to DLQ messages",
        dlq,
    )
}

fn system_label(topic: &str, group: &str) -> &'static str {
    bool_label(system_topic(topic) == "true" || system_group(group) == "true")
}

fn transactions(w: &mut Writer<'_, '_>, scrape: &Scrape) -> fmt::Result {
    let mut commits = Vec::new();
    let mut rollbacks = Vec::new();
    let mut latency = Vec::new();
    for (topic, ended) in &scrape.counters.transactions {
        let labels: Labels = vec![("topic", topic.clone())];
        commits.push((labels.clone(), ended.commits));
        rollbacks.push((labels.clone(), ended.rollbacks));
        latency.push((labels, ended.finish_latency_s));
    }
    w.counter(
        "rocketmq_commit_messages",
        "Total number of commit messages",
        commits,
    )?;
    w.counter(
        "rocketmq_rollback_messages",
        "Total number of rollback messages",
        rollbacks,
    )?;
    // Java records seconds under this "ms" name; kept so dashboards agree.
    w.histogram(
        "rocketmq_finish_message_latency",
        "Transaction finish latency",
        milliseconds(),
        FINISH_LATENCY_S_BOUNDS,
        latency,
    )
}

fn consumers(w: &mut Writer<'_, '_>, scrape: &Scrape) -> fmt::Result {
    let lag = scrape.lag();
    let mut families: [Vec<(Labels, i64)>; 5] = Default::default();
    for ((group, topic, retry), lag) in &lag {
        let labels = vec![
            ("consumer_group", group.clone()),
            ("topic", topic.clone()),
            ("is_retry", bool_label(*retry).to_string()),
            ("is_system", system_label(topic, group).to_string()),
        ];
        let values = [
            lag.lag_messages,
            lag.lag_latency_ms,
            lag.inflight_messages,
            lag.queueing_latency_ms,
            lag.ready_messages,
        ];
        for (family, value) in families.iter_mut().zip(values) {
            family.push((labels.clone(), value));
        }
    }
    let [lag_messages, lag_latency, inflight, queueing, ready] = families;
    w.gauge(
        "rocketmq_consumer_lag_messages",
        "Consumer lag messages",
        None,
        lag_messages,
    )?;
    w.gauge(
        "rocketmq_consumer_lag_latency",
        "Consumer lag time",
        milliseconds(),
        lag_latency,
    )?;
    w.gauge(
        "rocketmq_consumer_inflight_messages",
        "Consumer inflight messages",
        None,
        inflight,
    )?;
    w.gauge(
        "rocketmq_consumer_queueing_latency",
        "Consumer queueing time",
        milliseconds(),
        queueing,
    )?;
    w.gauge(
        "rocketmq_consumer_ready_messages",
        "Consumer ready messages",
        None,
        ready,
    )
}

fn connections(w: &mut Writer<'_, '_>, scrape: &Scrape) -> fmt::Result {
    let producers = scrape
        .producers()
        .into_iter()
        .map(|((language, version), count)| {
            let labels = vec![
                ("language", language),
                ("version", version),
                ("protocol_type", "remoting".to_string()),
            ];
            (labels, count as i64)
        })
        .collect();
    w.gauge(
        "rocketmq_producer_connections",
        "Producer connections",
        None,
        producers,
    )?;
    let consumers = scrape
        .consumers()
        .into_iter()
        .map(|((group, language, version, mode), count)| {
            let is_system = system_group(&group).to_string();
            let labels = vec![
                ("consumer_group", group),
                ("language", language),
                ("version", version),
                ("consume_mode", mode.to_string()),
                ("protocol_type", "remoting".to_string()),
                ("is_system", is_system),
            ];
            (labels, count as i64)
        })
        .collect();
    w.gauge(
        "rocketmq_consumer_connections",
        "Consumer connections",
        None,
        consumers,
    )
}

fn broker(w: &mut Writer<'_, '_>, scrape: &Scrape) -> fmt::Result {
    let b = &scrape.broker;
    w.gauge(
        "rocketmq_broker_permission",
        "Broker permission",
        None,
        vec![(vec![], b.permission)],
    )?;
    w.gauge(
        "rocketmq_topic_number",
        "Active topic number",
        None,
        vec![(vec![], b.topics as i64)],
    )?;
    w.gauge(
        "rocketmq_consumer_group_number",
        "Active subscription group number",
        None,
        vec![(vec![], b.groups as i64)],
    )
}

fn storage(w: &mut Writer<'_, '_>, scrape: &Scrape) -> fmt::Result {
    let b = &scrape.broker;
    let labels = || -> Labels {
        vec![
            ("storage_type", "local".to_string()),
            ("storage_medium", "disk".to_string()),
        ]
    };
    let used: Vec<_> = b
        .storage_used_bytes
        .map(|v| (labels(), v as i64))
        .into_iter()
        .collect();
    w.gauge(
        "rocketmq_storage_size",
        "Broker storage size",
        Some(Unit::Bytes),
        used,
    )?;
    let flush = (b.written_offset - b.flushed_offset).max(0);
    w.gauge(
        "rocketmq_storage_flush_behind_bytes",
        "Broker flush behind bytes",
        None,
        vec![(labels(), flush)],
    )?;
    w.gauge(
        "rocketmq_storage_dispatch_behind_bytes",
        "Broker dispatch behind bytes",
        None,
        vec![(labels(), scrape.dispatch_behind_bytes())],
    )?;
    tiered(w, b)?;
    let reserve: Vec<_> = b
        .reserve_time_ms
        .map(|v| (labels(), v))
        .into_iter()
        .collect();
    w.gauge(
        "rocketmq_storage_message_reserve_time",
        "Broker message reserve time",
        milliseconds(),
        reserve,
    )
}

/// Tiered storage's backlog: what the object store has not taken yet.
fn tiered(w: &mut Writer<'_, '_>, b: &super::gauges::BrokerGauges) -> fmt::Result {
    let series = |value: Option<i64>| -> Vec<(Labels, i64)> {
        value.map(|v| (Vec::new(), v)).into_iter().collect()
    };
    w.gauge(
        "ferrocket_tiered_pending_segments",
        "Sealed CommitLog segments not yet offloaded to object storage",
        None,
        series(b.tier_pending_segments),
    )?;
    w.gauge(
        "ferrocket_tiered_upload_failures",
        "Failed uploads to object storage since the broker started",
        None,
        series(b.tier_upload_failures),
    )
}

fn shards(w: &mut Writer<'_, '_>, scrape: &Scrape) -> fmt::Result {
    let per_shard = |value: fn(&super::gauges::ShardGauges) -> i64| -> Vec<(Labels, i64)> {
        scrape
            .shards
            .iter()
            .map(|s| (vec![("shard", s.shard.to_string())], value(s)))
            .collect()
    };
    let written = scrape.broker.written_offset;
    w.gauge(
        "ferrocket_shard_connections",
        "Open Remoting connections of each shard",
        None,
        per_shard(|s| s.connections as i64),
    )?;
    w.gauge(
        "ferrocket_shard_held_pulls",
        "Pulls and pops each shard holds (long polling)",
        None,
        per_shard(|s| s.held_pulls as i64),
    )?;
    w.gauge(
        "ferrocket_shard_held",
        "Bytes each shard's connections hold: queued output and requests in hand",
        Some(Unit::Bytes),
        per_shard(|s| s.held_bytes as i64),
    )?;
    w.gauge(
        "ferrocket_shard_pop_checkpoints",
        "Pop checkpoints waiting for acks on each shard's queues",
        None,
        per_shard(|s| s.pop_checkpoints as i64),
    )?;
    let behind = scrape
        .shards
        .iter()
        .map(|s| {
            let labels = vec![("shard", s.shard.to_string())];
            (labels, (written - s.dispatched_offset).max(0))
        })
        .collect();
    w.gauge(
        "ferrocket_shard_dispatch_behind_bytes",
        "CommitLog bytes not yet in each shard's ConsumeQueues",
        None,
        behind,
    )?;
    let in_process = scrape
        .shards
        .iter()
        .map(|s| (vec![("shard", s.shard.to_string())], s.in_process_calls))
        .collect();
    w.counter(
        "ferrocket_shard_in_process_calls",
        "Requests each shard answered in process (the in-broker gRPC endpoint, proxyMode=local)",
        in_process,
    )?;
    w.counter(
        "ferrocket_metrics_series_dropped",
        "Counts that found no room for a new series (the per-shard cap)",
        vec![(
            vec![],
            scrape.counters.room.dropped + scrape.counters.rpc.dropped,
        )],
    )
}

#[cfg(test)]
mod tests;
