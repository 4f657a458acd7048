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

mod registry {
    use super::super::registry::*;

    fn change<'a>(action: Action, client: &'a str, lites: &'a [String]) -> Change<'a> {
        Change {
            action,
            client,
            group: "G",
            topic: "P",
            lite_topics: lites,
            now_ms: 7,
        }
    }

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn changes_add_remove_and_replace_a_clients_set() {
        let registry = LiteRegistry::default();
        registry
            .apply(&change(Action::PartialAdd, "c1", &names(&["a", "b"])))
            .unwrap();
        registry
            .apply(&change(Action::PartialAdd, "c2", &names(&["b"])))
            .unwrap();
        registry
            .apply(&change(Action::PartialRemove, "c1", &names(&["a"])))
            .unwrap();
        assert_eq!(
            registry.subscribers("P", "b"),
            [("G".into(), "c1".into()), ("G".into(), "c2".into())]
        );
        assert!(registry.subscribers("P", "a").is_empty());
        registry
            .apply(&change(Action::CompleteAdd, "c1", &names(&["x", "y", "z"])))
            .unwrap();
        assert_eq!(registry.summary().subscriptions, 4);
        assert_eq!(registry.summary().topics["P"], 4);
        registry.remove_client("c1");
        assert_eq!(registry.summary().subscriptions, 1);
        assert!(registry.client(None, "c1").is_none());
        assert_eq!(
            registry.client(Some("G"), "c2").unwrap().1.last_access_ms,
            7
        );
        let bad = registry.apply(&change(Action::PartialAdd, "c2", &names(&["a b"])));
        assert!(matches!(bad, Err(Refused::Illegal(_))), "{bad:?}");
    }

    #[test]
    fn rounds_take_turns_over_a_clients_lite_topics() {
        let registry = LiteRegistry::default();
        registry
            .apply(&change(Action::PartialAdd, "c1", &names(&["a", "b", "c"])))
            .unwrap();
        assert_eq!(registry.round("G", "c1", "P", 2, 1), ["a", "b"]);
        assert_eq!(registry.round("G", "c1", "P", 2, 1), ["c", "a"]);
        assert!(
            registry.round("G", "c1", "other", 2, 1).is_empty(),
            "another topic"
        );
        assert!(
            registry.round("G", "c9", "P", 2, 1).is_empty(),
            "another client"
        );
    }

    #[test]
    fn the_quota_refuses_growth_only() {
        let registry = LiteRegistry::default();
        let many: Vec<String> = (0..=LITE_SUBSCRIPTION_QUOTA)
            .map(|i| format!("t{i}"))
            .collect();
        let refused = registry.apply(&change(Action::CompleteAdd, "c1", &many));
        assert!(matches!(refused, Err(Refused::Quota(_))), "{refused:?}");
        assert_eq!(registry.summary().subscriptions, 0, "nothing kept");
        registry
            .apply(&change(
                Action::CompleteAdd,
                "c1",
                &many[..LITE_SUBSCRIPTION_QUOTA],
            ))
            .unwrap();
        registry
            .apply(&change(Action::PartialRemove, "c1", &many[..1]))
            .unwrap();
        assert_eq!(
            registry.summary().subscriptions,
            LITE_SUBSCRIPTION_QUOTA - 1
        );
    }

    #[test]
    fn idle_clients_give_way_when_the_broker_is_full() {
        let registry = LiteRegistry::default();
        let clients = LITE_SUBSCRIPTIONS_MAX / LITE_SUBSCRIPTION_QUOTA;
        let full: Vec<String> = (0..LITE_SUBSCRIPTION_QUOTA)
            .map(|i| format!("t{i}"))
            .collect();
        for n in 0..clients {
            let client = format!("gone{n}");
            let mut added = change(Action::CompleteAdd, &client, &full);
            added.now_ms = 1_000;
            registry.apply(&added).unwrap();
        }
        let one = names(&["a"]);
        // A live client: refused while the others are recent ...
        let mut late = change(Action::PartialAdd, "live", &one);
        late.now_ms = 1_000 + LITE_CLIENT_IDLE_MS - 1;
        let refused = registry.apply(&late);
        assert!(matches!(refused, Err(Refused::Quota(_))), "{refused:?}");
        // ... taken once they have been idle for the expiry.
        late.now_ms = 1_001 + LITE_CLIENT_IDLE_MS;
        registry.apply(&late).unwrap();
        assert_eq!(registry.summary().subscriptions, 1);
    }
}
