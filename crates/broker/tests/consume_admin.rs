//! Consumer administration and the consumption features that are pure
//! request/answer: GET_CONSUMER_CONNECTION_LIST, GET_ALL_CONSUMER_OFFSET,
//! GET_CONSUME_STATS (Java's fastjson body), LOCK_BATCH_MQ /
//! UNLOCK_BATCH_MQ across shards, and SQL92 pull filters (on, off, bad,
//! and through a subscription registered by heartbeat).

mod common;
mod consume_support;

use common::*;
use consume_support::*;
use ferrocket_broker::BrokerConfig;
use ferrocket_protocol::codes::{request_code, response_code};
use ferrocket_protocol::header::pull_sys_flag;
use ferrocket_runtime::shard::owner_shard;

fn lock_body(client_id: &str, queues: &[i32]) -> Vec<u8> {
    let mqs: Vec<String> = queues
        .iter()
        .map(|q| format!(r#"{{"topic":"LockTopic","brokerName":"broker-a","queueId":{q}}}"#))
        .collect();
    format!(
        r#"{{"consumerGroup":"OrderG","clientId":"{client_id}","mqSet":[{}]}}"#,
        mqs.join(",")
    )
    .into_bytes()
}

fn lock(client: &mut RemotingConn, client_id: &str, queues: &[i32]) -> Vec<i64> {
    let response = ok(client.request(request(
        request_code::LOCK_BATCH_MQ,
        &[],
        &lock_body(client_id, queues),
    )));
    let body: serde_json::Value = serde_json::from_slice(&response.body).unwrap();
    let mut locked: Vec<i64> = body["lockOKMQSet"]
        .as_array()
        .unwrap()
        .iter()
        .map(|q| q["queueId"].as_i64().unwrap())
        .collect();
    locked.sort_unstable();
    locked
}

#[test]
fn connections_offsets_stats_and_locks() {
    let dir = tempfile::tempdir().unwrap();
    let broker = Broker::start(config(dir.path(), 2));
    let mut admin = broker.client();
    let mut consumer = broker.client();

    let missing = consumer.request(request(
        request_code::GET_CONSUMER_CONNECTION_LIST,
        &[("consumerGroup", "StatsG")],
        b"",
    ));
    assert_eq!(missing.code, response_code::CONSUMER_NOT_ONLINE);

    admin.create_topic("StatsTopic", 4);
    for queue_id in 0..4 {
        for i in 0..=queue_id {
            admin.send_ok(
                "StatsTopic",
                queue_id,
                format!("m{i}").as_bytes(),
                &props(&[]),
            );
        }
    }
    heartbeat(
        &mut consumer,
        "127.0.0.1@c1",
        "StatsG",
        "StatsTopic",
        "*",
        "TAG",
    );
    for queue_id in 0..4 {
        admin.offset_call(
            request_code::UPDATE_CONSUMER_OFFSET,
            &[
                ("consumerGroup", "StatsG"),
                ("topic", "StatsTopic"),
                ("queueId", &queue_id.to_string()),
                ("commitOffset", &(queue_id / 2).to_string()),
            ],
        );
    }

    // Answered from whichever shard the admin connection landed on.
    let response = ok(admin.request(request(
        request_code::GET_CONSUMER_CONNECTION_LIST,
        &[("consumerGroup", "StatsG")],
        b"",
    )));
    let body: serde_json::Value = serde_json::from_slice(&response.body).unwrap();
    let connections = body["connectionSet"].as_array().unwrap();
    assert_eq!(connections.len(), 1, "{body}");
    assert_eq!(connections[0]["clientId"], "127.0.0.1@c1");
    assert!(connections[0]["clientAddr"]
        .as_str()
        .unwrap()
        .starts_with("127.0.0.1:"));
    assert_eq!(connections[0]["version"], 453);
    assert_eq!(body["subscriptionTable"]["StatsTopic"]["subString"], "*");
    assert_eq!(body["consumeType"], "CONSUME_PASSIVELY");
    assert_eq!(body["messageModel"], "CLUSTERING");

    let response = ok(admin.request(request(request_code::GET_ALL_CONSUMER_OFFSET, &[], b"")));
    let all: serde_json::Value = serde_json::from_slice(&response.body).unwrap();
    assert_eq!(all["offsetTable"]["StatsTopic@StatsG"]["3"], 1, "{all}");
    // A Java slave assigns the master's offsets version to its own.
    assert!(all["dataVersion"]["timestamp"].as_i64() > Some(0), "{all}");
    assert_eq!(all["dataVersion"]["counter"], 0, "{all}");

    let response = ok(admin.request(request(
        request_code::GET_CONSUME_STATS,
        &[("consumerGroup", "StatsG")],
        b"",
    )));
    let text = String::from_utf8(response.body.to_vec()).unwrap();
    assert!(
        text.starts_with(r#"{"consumeTps":0.0,"offsetTable":{"#),
        "{text}"
    );
    for queue_id in 0..4 {
        let key =
            format!(r#"{{"brokerName":"broker-a","queueId":{queue_id},"topic":"StatsTopic"}}:"#);
        let value = format!(
            r#"{{"brokerOffset":{},"consumerOffset":{},"#,
            queue_id + 1,
            queue_id / 2
        );
        assert!(
            text.contains(&format!("{key}{value}")),
            "queue {queue_id}: {text}"
        );
    }
    // Queue 3's last consumed message (offset 0) has a store time.
    assert!(!text.contains(r#""queueId":3,"topic":"StatsTopic"}:{"brokerOffset":4,"consumerOffset":1,"lastTimestamp":0"#), "{text}");

    // Order locks: one holder per queue, whichever shard owns it.
    admin.create_topic("LockTopic", 4);
    let owners: std::collections::BTreeSet<usize> =
        (0..4).map(|q| owner_shard("LockTopic", q, 2)).collect();
    assert_eq!(owners.len(), 2, "locks live on both shards");
    assert_eq!(lock(&mut admin, "c1", &[0, 1, 2]), vec![0, 1, 2]);
    assert_eq!(lock(&mut consumer, "c2", &[1, 2, 3]), vec![3]);
    assert_eq!(
        lock(&mut consumer, "c1", &[0, 1, 2]),
        vec![0, 1, 2],
        "renewal"
    );
    ok(admin.request(request(
        request_code::UNLOCK_BATCH_MQ,
        &[],
        &lock_body("c1", &[1, 2]),
    )));
    assert_eq!(lock(&mut consumer, "c2", &[0, 1, 2, 3]), vec![1, 2, 3]);
    let garbage = admin.request(request(request_code::LOCK_BATCH_MQ, &[], b"{nope"));
    assert_ne!(garbage.code, response_code::SUCCESS);
}

#[test]
fn sql92_pull_filters() {
    let dir = tempfile::tempdir().unwrap();
    let on = BrokerConfig {
        enable_property_filter: true,
        ..config(dir.path(), 2)
    };
    let broker = Broker::start(on.clone());
    let mut client = broker.client();
    client.create_topic("SqlTopic", 1);
    for i in 0..10 {
        let colour = if i % 2 == 0 { "red" } else { "blue" };
        let a = i.to_string();
        client.send_ok(
            "SqlTopic",
            0,
            a.as_bytes(),
            &props(&[("a", &a), ("colour", colour), ("TAGS", "t")]),
        );
    }
    let bodies = |got: Vec<Got>| -> Vec<String> {
        got.into_iter()
            .map(|m| String::from_utf8(m.body).unwrap())
            .collect()
    };
    let got = pull_all(
        &mut client,
        "SqlG",
        "SqlTopic",
        0,
        "a > 5 AND colour = 'red'",
        "SQL92",
    );
    assert_eq!(bodies(got), vec!["6", "8"]);
    let got = pull_all(
        &mut client,
        "SqlG",
        "SqlTopic",
        0,
        "a BETWEEN 2 AND 3 OR colour IN ('none')",
        "SQL92",
    );
    assert_eq!(bodies(got), vec!["2", "3"]);
    let got = pull_all(
        &mut client,
        "SqlG",
        "SqlTopic",
        0,
        "missing IS NULL AND TAGS = 't'",
        "SQL92",
    );
    assert_eq!(got.len(), 10);
    let bad = client.pull(&sub_pull_header("SqlG", "SqlTopic", 0, 0, "a >", "SQL92"));
    assert_eq!(bad.code, response_code::SUBSCRIPTION_PARSE_FAILED);

    // A subscription registered by heartbeat filters pulls that carry none.
    heartbeat(
        &mut client,
        "127.0.0.1@sql",
        "SqlReg",
        "SqlTopic",
        "a < 2",
        "SQL92",
    );
    let mut registered = sub_pull_header("SqlReg", "SqlTopic", 0, 0, "", "");
    registered.sys_flag &= !pull_sys_flag::SUBSCRIPTION;
    registered.subscription = None;
    registered.expression_type = None;
    let response = ok(client.pull(&registered));
    assert_eq!(bodies(decode(&response)), vec!["0", "1"]);
    drop(client);
    broker.stop();

    // enablePropertyFilter=false: Java's answer.
    let broker = Broker::start(BrokerConfig {
        enable_property_filter: false,
        ..on
    });
    let mut client = broker.client();
    let off = client.pull(&sub_pull_header("SqlG", "SqlTopic", 0, 0, "a > 5", "SQL92"));
    assert_eq!(off.code, response_code::SYSTEM_ERROR);
    assert!(off.remark.unwrap().contains("does not support"));
}
