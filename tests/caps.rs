//! Caps on the state clients can make a broker or name server keep, each a
//! config key with a clear error answer; retry topics only for groups that
//! exist; `autoCreateTopicEnable=false` stops every auto-creation; and a
//! broker with 100,000 topics still registers (compressed body) and every
//! topic is routable.

mod harness;

use ferrocket_protocol::body::{TopicConfig, TopicConfigSerializeWrapper};
use ferrocket_protocol::codes::{request_code, response_code};
use ferrocket_protocol::RemotingCommand;
use harness::remoting::route_request;
use harness::requests::consumer_heartbeat as heartbeat;
use harness::requests::{send_header, send_request};
use harness::{unique_name, Broker, BrokerOpts, Namesrv, NamesrvOpts};

fn set(pairs: &[&str]) -> Vec<String> {
    pairs
        .iter()
        .flat_map(|pair| ["--set".to_string(), pair.to_string()])
        .collect()
}

fn create_request(topic: &str, queues: i32) -> RemotingCommand {
    harness::requests::create_topic_request(topic, queues)
}

fn remark(answer: &RemotingCommand) -> String {
    answer.remark.clone().unwrap_or_default()
}

#[test]
fn topic_count_offsets_and_auto_create_are_bounded() {
    let namesrv = Namesrv::start();
    let broker = Broker::start(
        &namesrv.addr(),
        BrokerOpts {
            auto_create_topic: Some(false),
            extra_args: set(&["topicCountMax=12"]),
            ..Default::default()
        },
    );
    let mut conn = broker.connect();
    let mut created = Vec::new();
    let refused = loop {
        let topic = unique_name("Capped");
        let answer = conn.request(create_request(&topic, 2));
        if answer.code != response_code::SUCCESS {
            break answer;
        }
        created.push(topic);
        assert!(created.len() < 12, "topicCountMax=12 never refused");
    };
    assert!(!created.is_empty());
    assert!(remark(&refused).contains("topicCountMax"), "{refused:?}");

    // autoCreateTopicEnable=false: no template makes a topic, not even the
    // cluster-name topic Java lets through.
    for template in ["TBW102", "DefaultCluster"] {
        let header = ferrocket_protocol::header::SendMessageRequestHeader {
            default_topic: Some(template.into()),
            ..send_header("CapsPG", &unique_name("NotMade"), 0)
        };
        let answer = conn.request(send_request(&header, "x"));
        assert_eq!(
            answer.code,
            response_code::TOPIC_NOT_EXIST,
            "{template}: {answer:?}"
        );
    }

    // Offsets only for queues the topic has.
    let commit = |queue_id: i32| {
        RemotingCommand::request(request_code::UPDATE_CONSUMER_OFFSET)
            .with_ext("consumerGroup", "CapsGroup")
            .with_ext("topic", &created[0])
            .with_ext("queueId", queue_id)
            .with_ext("commitOffset", 0)
    };
    assert_eq!(conn.request(commit(1)).code, response_code::SUCCESS);
    let answer = conn.request(commit(2));
    assert_eq!(answer.code, response_code::INVALID_PARAMETER, "{answer:?}");
    let answer = conn.request(commit(99_999));
    assert_eq!(answer.code, response_code::INVALID_PARAMETER, "{answer:?}");
}

#[test]
fn clients_per_group_and_retry_topics_follow_the_groups() {
    let namesrv = Namesrv::start();
    let broker = Broker::start(
        &namesrv.addr(),
        BrokerOpts {
            extra_args: set(&["clientsPerGroupMax=2", "autoCreateSubscriptionGroup=false"]),
            ..Default::default()
        },
    );
    let mut conn = broker.connect();
    let topic_config = |conn: &mut harness::RemotingConn, topic: &str| {
        conn.request(
            RemotingCommand::request(request_code::GET_TOPIC_CONFIG).with_ext("topic", topic),
        )
        .code
    };
    // A group that does not exist registers but gets no retry topic.
    let ghost = unique_name("GhostGroup");
    assert_eq!(
        conn.request(heartbeat("c0", &ghost)).code,
        response_code::SUCCESS
    );
    assert_ne!(
        topic_config(&mut conn, &format!("%RETRY%{ghost}")),
        response_code::SUCCESS
    );
    // A group that exists gets one, and takes two clients, not three.
    let group = unique_name("RealGroup");
    let create = RemotingCommand::request(request_code::UPDATE_AND_CREATE_SUBSCRIPTIONGROUP)
        .with_body(format!("{{\"groupName\":\"{group}\"}}"));
    assert_eq!(conn.request(create).code, response_code::SUCCESS);
    for client in ["c1", "c2"] {
        assert_eq!(
            conn.request(heartbeat(client, &group)).code,
            response_code::SUCCESS
        );
    }
    assert_eq!(
        topic_config(&mut conn, &format!("%RETRY%{group}")),
        response_code::SUCCESS
    );
    let third = conn.request(heartbeat("c3", &group));
    assert_ne!(third.code, response_code::SUCCESS);
    assert!(remark(&third).contains("clientsPerGroupMax"), "{third:?}");
    // A member that is already registered keeps beating.
    assert_eq!(
        conn.request(heartbeat("c1", &group)).code,
        response_code::SUCCESS
    );
    // Oversized group configs are refused.
    let huge = RemotingCommand::request(request_code::UPDATE_AND_CREATE_SUBSCRIPTIONGROUP)
        .with_body(format!(
            "{{\"groupName\":\"{group}\",\"attributes\":{{\"k\":\"{}\"}}}}",
            "v".repeat(100_000)
        ));
    assert_eq!(conn.request(huge).code, response_code::INVALID_PARAMETER);
}

#[test]
fn name_server_kv_entries_and_bytes_are_capped() {
    let namesrv = Namesrv::start_with(NamesrvOpts {
        extra_args: set(&["kvConfigEntriesMax=2", "kvConfigBytesMax=1000"]),
        ..Default::default()
    });
    let mut conn = namesrv.connect();
    let put = |key: &str, value: &str| {
        RemotingCommand::request(request_code::PUT_KV_CONFIG)
            .with_ext("namespace", "ns")
            .with_ext("key", key)
            .with_ext("value", value)
    };
    assert_eq!(conn.request(put("a", "1")).code, response_code::SUCCESS);
    assert_eq!(conn.request(put("b", "2")).code, response_code::SUCCESS);
    let third = conn.request(put("c", "3"));
    assert_ne!(third.code, response_code::SUCCESS);
    assert!(remark(&third).contains("kvConfigEntriesMax"), "{third:?}");
    let big = conn.request(put("a", &"x".repeat(2_000)));
    assert_ne!(big.code, response_code::SUCCESS);
    let get = conn.request(
        RemotingCommand::request(request_code::GET_KV_CONFIG)
            .with_ext("namespace", "ns")
            .with_ext("key", "a"),
    );
    assert_eq!(get.ext_fields.get("value"), Some("1"), "{get:?}");
}

#[test]
fn a_broker_with_100000_topics_registers_and_every_topic_is_routable() {
    const TOPICS: usize = 100_000;
    let store = tempfile::Builder::new()
        .prefix("ferrocket-broker-")
        .tempdir()
        .unwrap();
    let mut table = TopicConfigSerializeWrapper::default();
    for n in 0..TOPICS {
        let name = format!("Many_{n:06}");
        table
            .topic_config_table
            .insert(name.clone(), TopicConfig::new(&name, 1));
    }
    let config = store.path().join("config");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(
        config.join("topics.json"),
        serde_json::to_vec(&table).unwrap(),
    )
    .unwrap();
    drop(table);

    let namesrv = Namesrv::start();
    let _broker = Broker::start(
        &namesrv.addr(),
        BrokerOpts {
            store_dir: Some(store.path().to_path_buf()),
            ..Default::default()
        },
    );
    let mut conn = namesrv.connect();
    for n in [0, 1, TOPICS / 2, TOPICS - 1] {
        let topic = format!("Many_{n:06}");
        let route = conn.request(route_request(&topic));
        assert_eq!(route.code, response_code::SUCCESS, "{topic}: {route:?}");
    }
    let list = conn.request(RemotingCommand::request(
        request_code::GET_ALL_TOPIC_LIST_FROM_NAMESERVER,
    ));
    let body = String::from_utf8_lossy(&list.body);
    assert!(
        body.matches("Many_").count() >= TOPICS,
        "not every topic is listed"
    );
}
