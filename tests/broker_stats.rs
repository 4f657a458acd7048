//! VIEW_BROKER_STATS_DATA (315) and GET_BROKER_CONSUME_STATS (317), the
//! requests mqadmin's `statsAll` and `brokerConsumeStats` send, over raw
//! Remoting and through `ferrocket admin stats all` / `broker
//! consume-stats`. The broker samples its counters every 10 s, so the first
//! figures appear within one sample.

mod harness;

use std::time::Duration;

use ferrocket_protocol::codes::{request_code, response_code};
use ferrocket_protocol::RemotingCommand;
use harness::requests::{create_topic, pull_request, send_header, send_request};
use harness::{admin_ok, unique_name, wait_for, BrokerOpts, RemotingConn};

/// One sample and a margin.
const SAMPLED_WITHIN: Duration = Duration::from_secs(25);

fn stats(conn: &mut RemotingConn, name: &str, key: &str) -> RemotingCommand {
    conn.request(
        RemotingCommand::request(request_code::VIEW_BROKER_STATS_DATA)
            .with_ext("statsName", name)
            .with_ext("statsKey", key),
    )
}

/// The item's minute window once its sum is `sum`.
fn minute_when(conn: &mut RemotingConn, name: &str, key: &str, sum: u64) -> serde_json::Value {
    let found = wait_for(SAMPLED_WITHIN, || {
        let answer = stats(conn, name, key);
        let data: serde_json::Value = serde_json::from_slice(&answer.body).ok()?;
        (data["statsMinute"]["sum"] == sum).then_some(data)
    });
    found.unwrap_or_else(|| {
        panic!(
            "{name} {key} never summed {sum}: {:?}",
            stats(conn, name, key)
        )
    })
}

#[test]
fn put_and_get_stats_and_every_groups_progress() {
    let namesrv = harness::Namesrv::start();
    let broker = harness::Broker::start(&namesrv.addr(), BrokerOpts::default());
    let mut conn = broker.connect();
    let (topic, group) = (unique_name("StatsAll"), unique_name("StatsAllGroup"));
    create_topic(&mut conn, &topic, 2);
    let missing = stats(&mut conn, "TOPIC_PUT_NUMS", &topic);
    assert_eq!(missing.code, response_code::SYSTEM_ERROR);
    let expected = format!("The stats <TOPIC_PUT_NUMS> <{topic}> not exist");
    assert_eq!(missing.remark.as_deref(), Some(expected.as_str()));
    for _ in 0..5 {
        let sent = conn.request(send_request(&send_header("PG", &topic, 0), "hello"));
        assert_eq!(sent.code, response_code::SUCCESS);
    }
    let put = minute_when(&mut conn, "TOPIC_PUT_NUMS", &topic, 5);
    // Five sends of one message each; the first window spans one period.
    assert_eq!(put["statsMinute"]["avgpt"], 1.0, "{put}");
    assert!(put["statsMinute"]["tps"].as_f64().unwrap() > 0.0, "{put}");
    assert_eq!(
        put["statsDay"]["sum"], 0,
        "the day window is sampled hourly: {put}"
    );

    let pulled = conn.request(pull_request(&group, &topic, 0, 0, 32, 0));
    assert_eq!(pulled.code, response_code::SUCCESS, "{pulled:?}");
    let key = format!("{topic}@{group}");
    let got = minute_when(&mut conn, "GROUP_GET_NUMS", &key, 5);
    assert_eq!(got["statsMinute"]["avgpt"], 5.0, "one pull of five: {got}");
    let commit = RemotingCommand::request(request_code::UPDATE_CONSUMER_OFFSET)
        .with_ext("consumerGroup", &group)
        .with_ext("topic", &topic)
        .with_ext("queueId", 0)
        .with_ext("commitOffset", 3);
    assert_eq!(conn.request(commit).code, response_code::SUCCESS);

    let consume = conn.request(
        RemotingCommand::request(request_code::GET_BROKER_CONSUME_STATS)
            .with_ext("isOrder", "false"),
    );
    assert_eq!(consume.code, response_code::SUCCESS, "{consume:?}");
    let body = String::from_utf8_lossy(&consume.body).into_owned();
    assert!(
        body.starts_with(&format!("{{\"brokerAddr\":\"{}\"", broker.addr())),
        "{body}"
    );
    assert!(
        body.contains(&format!("{{\"{group}\":[{{\"consumeTps\":")),
        "{body}"
    );
    assert!(
        body.contains("\"brokerOffset\":5,\"consumerOffset\":3,"),
        "{body}"
    );
    assert!(
        body.ends_with("\"totalDiff\":2,\"totalInflightDiff\":0}"),
        "{body}"
    );
    let ordered = conn.request(
        RemotingCommand::request(request_code::GET_BROKER_CONSUME_STATS)
            .with_ext("isOrder", "true"),
    );
    let ordered = String::from_utf8_lossy(&ordered.body).into_owned();
    assert!(
        ordered.contains(&format!("{{\"{group}\":[]}}")),
        "{ordered}"
    );

    let ns = namesrv.addr();
    let all = wait_for(SAMPLED_WITHIN, || {
        let printed = admin_ok(&ns, &["stats", "all", "-t", &topic]);
        printed.contains(&group).then_some(printed)
    })
    .expect("stats all never listed the group");
    let row: Vec<&str> = all
        .lines()
        .find(|l| l.contains(&group))
        .unwrap()
        .split_whitespace()
        .collect();
    // Topic, group, accumulation 2, InTPS, OutTPS, 5 in and 5 out today.
    assert_eq!((row[2], row[5], row[6]), ("2", "5", "5"), "{all}");
    let progress = admin_ok(&ns, &["broker", "consume-stats", "-b", &broker.addr()]);
    assert!(
        progress.contains(&topic) && progress.contains("Diff Total: 2"),
        "{progress}"
    );
}
