//! Fuzz target for the JSON and compressed bodies clients and brokers send:
//! heartbeats, subscription group configs, topic tables, REGISTER_BROKER
//! bodies (JSON and zlib), routes and cluster info. Arbitrary and mutated
//! input must decode to `Ok` or `Err`, never panic; whatever decodes must
//! encode again. The compressed registration also round-trips.
//!
//! Cases default to 20,000; `PROPTEST_CASES=N` for a long run.

use ferrocket_protocol::body::{
    decode_compressed, decode_json, encode_compressed, encode_json, ClusterInfo, HeartbeatData,
    KvTable, RegisterBrokerBody, SubscriptionGroupConfig, TopicConfig, TopicConfigSerializeWrapper,
    TopicRouteData,
};
use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;

const CASES_DEFAULT: u32 = 20_000;

fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(CASES_DEFAULT)
}

/// Bodies as real clients and brokers send them.
fn seeds() -> Vec<Vec<u8>> {
    let heartbeat = br#"{"clientID":"10.0.0.1@1234#0","producerDataSet":[{"groupName":"PG"}],"consumerDataSet":[{"groupName":"CG","consumeType":"CONSUME_PASSIVELY","messageModel":"CLUSTERING","consumeFromWhere":"CONSUME_FROM_LAST_OFFSET","unitMode":false,"subscriptionDataSet":[{"classFilterMode":false,"codeSet":[1,2],"expressionType":"TAG","subString":"a||b","subVersion":1700000000000,"tagsSet":["a","b"],"topic":"T"}]}]}"#;
    let group = br#"{"groupName":"G","consumeEnable":true,"consumeFromMinEnable":true,"consumeBroadcastEnable":true,"retryQueueNums":1,"retryMaxTimes":16,"brokerId":0,"whichBrokerWhenConsumeSlowly":1,"notifyConsumerIdsChangedEnable":true,"groupSysFlag":0,"consumeTimeoutMinute":15,"attributes":{"k":"v"},"extra":[1,{"x":null}]}"#;
    let route = br#"{"queueDatas":[{"brokerName":"b","readQueueNums":4,"writeQueueNums":4,"perm":6,"topicSysFlag":0}],"brokerDatas":[{"cluster":"c","brokerName":"b","brokerAddrs":{"0":"127.0.0.1:10911"}}]}"#;
    let cluster = br#"{"brokerAddrTable":{"b":{"cluster":"c","brokerName":"b","brokerAddrs":{"0":"127.0.0.1:10911"}}},"clusterAddrTable":{"c":["b"]}}"#;
    let kv = br#"{"table":{"a":"1","b":"2"}}"#;
    let mut table = TopicConfigSerializeWrapper::default();
    for name in ["T1", "%RETRY%G", "TBW102"] {
        table
            .topic_config_table
            .insert(name.to_string(), TopicConfig::new(name, 4));
    }
    let register = RegisterBrokerBody {
        topic_config_serialize_wrapper: table.clone(),
        filter_server_list: vec!["f:1".into()],
    };
    vec![
        heartbeat.to_vec(),
        group.to_vec(),
        route.to_vec(),
        cluster.to_vec(),
        kv.to_vec(),
        encode_json(&table),
        encode_json(&register),
        encode_compressed(&register),
    ]
}

fn mutated() -> impl Strategy<Value = Vec<u8>> {
    let seeds = seeds();
    let count = seeds.len();
    (
        0..count,
        prop::collection::vec((any::<prop::sample::Index>(), any::<u8>(), 0u8..3), 0..8),
    )
        .prop_map(move |(i, edits)| {
            let mut bytes = seeds[i].clone();
            for (at, byte, kind) in edits {
                let len = bytes.len();
                match kind {
                    0 if len > 0 => bytes[at.index(len)] = byte,
                    1 => bytes.truncate(at.index(len + 1)),
                    _ => bytes.insert(at.index(len + 1), byte),
                }
            }
            bytes
        })
}

fn input() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        2 => prop::collection::vec(any::<u8>(), 0..400),
        6 => mutated(),
        1 => "[\\[\\]{}\":,0-9a-zA-Z ]{0,200}".prop_map(String::into_bytes),
    ]
}

/// Decodes `input` as `T`; what decodes must encode again.
fn as_json<T: serde::de::DeserializeOwned + serde::Serialize>(input: &[u8]) {
    if let Ok(value) = decode_json::<T>(input) {
        let _ = encode_json(&value);
    }
}

fn exercise(input: &[u8]) {
    as_json::<HeartbeatData>(input);
    as_json::<SubscriptionGroupConfig>(input);
    as_json::<TopicRouteData>(input);
    as_json::<ClusterInfo>(input);
    as_json::<KvTable>(input);
    as_json::<TopicConfigSerializeWrapper>(input);
    as_json::<RegisterBrokerBody>(input);
    if let Ok(body) = decode_compressed(input) {
        let _ = encode_compressed(&body);
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: cases(),
        failure_persistence: Some(Box::new(FileFailurePersistence::Off)),
        ..ProptestConfig::default()
    })]

    #[test]
    fn body_decoders_never_panic(input in input()) {
        exercise(&input);
    }

    #[test]
    fn compressed_registrations_round_trip(
        topics in prop::collection::btree_map("[a-zA-Z0-9_%|-]{1,40}", (1i32..64, 0i32..8), 0..50),
    ) {
        let mut body = RegisterBrokerBody::default();
        for (name, (queues, perm)) in &topics {
            let mut config = TopicConfig::new(name, *queues);
            config.perm = *perm;
            body.topic_config_serialize_wrapper
                .topic_config_table
                .insert(name.clone(), config);
        }
        let back = decode_compressed(&encode_compressed(&body)).unwrap();
        prop_assert_eq!(
            back.topic_config_serialize_wrapper.topic_config_table,
            body.topic_config_serialize_wrapper.topic_config_table
        );
    }
}

#[test]
fn seeds_decode() {
    let seeds = seeds();
    assert!(decode_json::<HeartbeatData>(&seeds[0]).is_ok());
    assert!(decode_json::<SubscriptionGroupConfig>(&seeds[1]).is_ok());
    assert!(decode_json::<TopicRouteData>(&seeds[2]).is_ok());
    assert!(decode_json::<ClusterInfo>(&seeds[3]).is_ok());
    assert!(decode_json::<KvTable>(&seeds[4]).is_ok());
    assert!(decode_json::<TopicConfigSerializeWrapper>(&seeds[5]).is_ok());
    assert!(decode_json::<RegisterBrokerBody>(&seeds[6]).is_ok());
    assert!(decode_compressed(&seeds[7]).is_ok());
}
