use std::time::Duration;

use super::*;
use crate::services::metrics::gauges::{Lag, ShardGauges};
use crate::services::metrics::{RpcKey, ShardMetrics};

fn scrape() -> Scrape {
    let metrics = ShardMetrics::default();
    metrics.count_in("orders", MessageType::Normal, 3, 3000);
    metrics.count_out("g", "orders", false, 2, 2000);
    let key = RpcKey {
        request_code: 310,
        response_code: 0,
        oneway: false,
    };
    metrics.observe_rpc(key, Duration::from_micros(2_500));
    let mut shard = ShardGauges {
        shard: 0,
        connections: 2,
        dispatched_offset: 100,
        in_process_calls: 7,
        ..ShardGauges::default()
    };
    shard.lag.insert(
        ("g".into(), "orders".into(), false),
        Lag {
            lag_messages: 1,
            ready_messages: 1,
            ..Lag::default()
        },
    );
    shard.producers.insert(("cpp".into(), "v5_2_0".into()), 1);
    Scrape {
        common_labels: vec![
            ("cluster".into(), "c1".into()),
            ("node_type".into(), "broker".into()),
            ("node_id".into(), "broker-a".into()),
        ],
        counters: metrics.snapshot(),
        shards: vec![shard],
        broker: super::super::gauges::BrokerGauges {
            topics: 5,
            written_offset: 160,
            flushed_offset: 100,
            permission: 6,
            ..Default::default()
        },
    }
}

fn line_with<'a>(text: &'a str, start: &str, parts: &[&str]) -> &'a str {
    text.lines()
        .find(|l| l.starts_with(start) && parts.iter().all(|p| l.contains(p)))
        .unwrap_or_else(|| panic!("no line {start} with {parts:?} in\n{text}"))
}

#[test]
fn series_carry_rocketmqs_names_and_labels() {
    let text = render(scrape());
    let line = line_with(
        &text,
        "rocketmq_messages_in_total{",
        &[
            "cluster=\"c1\"",
            "node_id=\"broker-a\"",
            "topic=\"orders\"",
            "message_type=\"normal\"",
        ],
    );
    assert!(line.ends_with(" 3"), "{line}");
    assert!(line_with(&text, "rocketmq_throughput_in_total{", &[]).ends_with(" 3000"));
    let bucket = line_with(&text, "rocketmq_message_size_bucket{", &["le=\"1024.0\""]);
    assert!(bucket.ends_with(" 1"), "{bucket}");
    let out = line_with(
        &text,
        "rocketmq_messages_out_total{",
        &["consumer_group=\"g\""],
    );
    assert!(out.ends_with(" 2"), "{out}");
    let rpc = line_with(
        &text,
        "rocketmq_rpc_latency_milliseconds_bucket{",
        &[
            "request_code=\"send_message_v2\"",
            "response_code=\"success\"",
            "le=\"3.0\"",
        ],
    );
    assert!(rpc.ends_with(" 1"), "{rpc}");
    assert!(line_with(
        &text,
        "rocketmq_rpc_latency_milliseconds_bucket{",
        &["le=\"1.0\""]
    )
    .ends_with(" 0"));
    assert!(line_with(
        &text,
        "rocketmq_consumer_lag_messages{",
        &["topic=\"orders\""]
    )
    .ends_with(" 1"));
    assert!(line_with(&text, "rocketmq_storage_flush_behind_bytes{", &[]).ends_with(" 60"));
    assert!(line_with(&text, "rocketmq_storage_dispatch_behind_bytes{", &[]).ends_with(" 60"));
    assert!(line_with(
        &text,
        "rocketmq_producer_connections{",
        &["language=\"cpp\""]
    )
    .ends_with(" 1"));
    assert!(line_with(&text, "rocketmq_topic_number{", &[]).ends_with(" 5"));
    assert!(line_with(&text, "ferrocket_shard_connections{", &["shard=\"0\""]).ends_with(" 2"));
    let in_process = line_with(&text, "ferrocket_shard_in_process_calls_total{", &[]);
    assert!(in_process.ends_with(" 7"), "{in_process}");
    assert!(text.contains("# TYPE rocketmq_messages_in counter"));
    assert!(text.contains("# TYPE rocketmq_rpc_latency_milliseconds histogram"));
    let inf = line_with(&text, "rocketmq_message_size_bucket{", &["le=\"+Inf\""]);
    assert!(inf.ends_with(" 1"), "{inf}");
    assert!(text.ends_with("# EOF\n"));
}

#[test]
fn label_values_are_escaped() {
    let mut scrape = scrape();
    scrape
        .common_labels
        .push(("env".into(), "a\"b\\c\nd".into()));
    let text = render(scrape);
    assert!(text.contains(r#"env="a\"b\\c\nd""#), "{text}");
}
