use bytes::BytesMut;
use ferrocket_protocol::lite::LITE_EXPRESSION_TYPE;
use ferrocket_protocol::properties::Properties;
use ferrocket_protocol::record::NewRecord;

use super::*;
use crate::services::filter::sql::pull_filter;
use crate::services::filter::TagFilter;
use ferrocket_protocol::properties::{INNER_MULTI_DISPATCH, INNER_MULTI_QUEUE_OFFSET};

fn record(pairs: &[(&str, &str)]) -> BytesMut {
    let props: Properties = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let props = props.to_bytes();
    let host = "127.0.0.1:1".parse().unwrap();
    let mut out = BytesMut::new();
    NewRecord {
        topic: "P",
        queue_id: 0,
        flag: 0,
        sys_flag: 0,
        born_timestamp_ms: 0,
        born_host: host,
        store_timestamp_ms: 0,
        store_host: host,
        reconsume_times: 0,
        prepared_transaction_offset: 0,
        body: b"b",
        properties: &props,
    }
    .encode(0, 0, &mut out)
    .unwrap();
    out
}

#[test]
fn a_lite_pop_passes_only_its_lite_topics_messages() {
    // No enablePropertyFilter needed: the lite type is always on.
    let filter = pull_filter("chat-1", Some(LITE_EXPRESSION_TYPE), false).unwrap();
    assert!(matches!(filter, TagFilter::Lite(_)), "{filter:?}");
    assert!(filter.matches(12345), "tag hashes never exclude");
    assert!(filter.matches_record(&record(&[(LITE_TOPIC, "chat-1"), ("TAGS", "x")])));
    assert!(!filter.matches_record(&record(&[(LITE_TOPIC, "chat-2")])));
    assert!(!filter.matches_record(&record(&[(LITE_TOPIC, "chat-10")])));
    assert!(!filter.matches_record(&record(&[("TAGS", "chat-1")])));
    assert!(!filter.matches_record(b"garbage"));
}

#[test]
fn illegal_lite_topics_are_refused() {
    for bad in ["", "a b", "a%b", &"x".repeat(65)] {
        let refused = pull_filter(bad, Some("lite"), true).unwrap_err();
        assert_eq!(
            refused.code,
            response_code::SUBSCRIPTION_PARSE_FAILED,
            "{bad}"
        );
    }
}

#[test]
fn a_position_carries_queue_and_offset() {
    let packed = pack_position(3, 1_234_567).unwrap();
    assert_eq!(unpack_position(packed), Some((3, 1_234_567)));
    assert_eq!(unpack_position(pack_position(0, 0).unwrap()), Some((0, 0)));
    let top = pack_position(POSITION_QUEUES_MAX - 1, (1 << 47) - 1).unwrap();
    assert!(top > 0, "always a positive long");
    assert_eq!(
        unpack_position(top),
        Some((POSITION_QUEUES_MAX - 1, (1 << 47) - 1))
    );
    assert_eq!(pack_position(POSITION_QUEUES_MAX, 0), None);
    assert_eq!(pack_position(0, 1 << 47), None);
    assert_eq!(pack_position(-1, 0), None);
    assert_eq!(unpack_position(-5), None);
}

#[test]
fn a_popped_lite_message_names_its_light_queue_and_position() {
    let stored = record(&[(LITE_TOPIC, "chat-1"), ("TAGS", "x")]);
    let mut out = BytesMut::new();
    assert!(append_with_position(
        &stored,
        "%LMQ%$P$chat-1",
        42,
        &mut out
    ));
    let view = decode_record(&out, true).unwrap();
    let props = view.properties();
    assert_eq!(props.get(INNER_MULTI_DISPATCH), Some("%LMQ%$P$chat-1"));
    assert_eq!(props.get(INNER_MULTI_QUEUE_OFFSET), Some("42"));
    assert_eq!(
        props.get(LITE_TOPIC),
        Some("chat-1"),
        "the stored properties stay"
    );
    assert_eq!(props.get("TAGS"), Some("x"));
    assert_eq!(view.body, b"b");
    assert!(!append_with_position(b"garbage", "x", 1, &mut out));
    assert_eq!(lmq_name("P", "chat-1"), "%LMQ%$P$chat-1");
}
