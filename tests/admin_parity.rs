//! The admin requests mqadmin's `topicStatus` and `consumerProgress` send,
//! over raw Remoting and through `ferrocket admin topic status`:
//! GET_TOPIC_STATS_INFO (202), QUERY_TOPIC_CONSUME_BY_WHO (300) and
//! QUERY_TOPICS_BY_CONSUMER (343), answered with Java's bodies.

mod harness;

use std::process::Command;

use ferrocket_protocol::codes::{request_code, response_code};
use ferrocket_protocol::RemotingCommand;
use harness::requests::{create_topic, send_header, send_request};
use harness::{ferrocket_bin, ready_timeout, unique_name, wait_for, BrokerOpts};

#[test]
fn topic_stats_and_who_consumes_what() {
    let namesrv = harness::Namesrv::start();
    let broker = harness::Broker::start(&namesrv.addr(), BrokerOpts::default());
    let mut conn = broker.connect();
    let topic = unique_name("Stats");
    create_topic(&mut conn, &topic, 2);
    for _ in 0..3 {
        let sent = conn.request(send_request(&send_header("PG", &topic, 0), "x"));
        assert_eq!(sent.code, response_code::SUCCESS);
    }
    let stats = conn.request(
        RemotingCommand::request(request_code::GET_TOPIC_STATS_INFO).with_ext("topic", &topic),
    );
    assert_eq!(stats.code, response_code::SUCCESS, "{stats:?}");
    let body = String::from_utf8_lossy(&stats.body).into_owned();
    assert!(
        body.starts_with("{\"offsetTable\":{{\"brokerName\":"),
        "{body}"
    );
    assert!(
        body.contains(&format!(
            "\"queueId\":0,\"topic\":\"{topic}\"}}:{{\"lastUpdateTimestamp\":"
        )),
        "{body}"
    );
    assert!(body.contains("\"maxOffset\":3,\"minOffset\":0}"), "{body}");
    assert!(
        body.contains("\"lastUpdateTimestamp\":0,\"maxOffset\":0,\"minOffset\":0}"),
        "{body}"
    );
    let missing = conn.request(
        RemotingCommand::request(request_code::GET_TOPIC_STATS_INFO)
            .with_ext("topic", "NoSuchTopic"),
    );
    assert_eq!(missing.code, response_code::TOPIC_NOT_EXIST);
    assert_eq!(
        missing.remark.as_deref(),
        Some("topic[NoSuchTopic] not exist")
    );

    let group = unique_name("StatsGroup");
    let commit = RemotingCommand::request(request_code::UPDATE_CONSUMER_OFFSET)
        .with_ext("consumerGroup", &group)
        .with_ext("topic", &topic)
        .with_ext("queueId", 0)
        .with_ext("commitOffset", 2);
    assert_eq!(conn.request(commit).code, response_code::SUCCESS);
    let who = conn.request(
        RemotingCommand::request(request_code::QUERY_TOPIC_CONSUME_BY_WHO)
            .with_ext("topic", &topic),
    );
    assert_eq!(who.code, response_code::SUCCESS);
    assert_eq!(
        String::from_utf8_lossy(&who.body),
        format!("{{\"groupList\":[\"{group}\"]}}")
    );
    let topics = conn.request(
        RemotingCommand::request(request_code::QUERY_TOPICS_BY_CONSUMER)
            .with_ext("consumerGroup", &group),
    );
    assert_eq!(topics.code, response_code::SUCCESS);
    let listed = String::from_utf8_lossy(&topics.body).into_owned();
    assert!(
        listed.contains(&format!("\"topicList\":[\"{topic}\"]")),
        "{listed}"
    );
    assert!(
        listed.contains(&format!("\"brokerAddr\":\"{}\"", broker.addr())),
        "{listed}"
    );

    // The route reaches the name server with the broker's next registration.
    let status = || {
        Command::new(ferrocket_bin())
            .args([
                "admin",
                "-n",
                &namesrv.addr(),
                "topic",
                "status",
                "-t",
                &topic,
            ])
            .output()
            .unwrap()
    };
    let shown = wait_for(ready_timeout(), || {
        Some(status()).filter(|s| s.status.success())
    });
    let printed =
        String::from_utf8_lossy(&shown.expect("topic status never succeeded").stdout).into_owned();
    assert!(printed.starts_with("#Broker Name"), "{printed}");
    let row = printed.lines().nth(1).unwrap_or("");
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(&cells[1..4], ["0", "0", "3"], "{printed}");
}

/// `ferrocket admin topic delete` (mqadmin's `deleteTopic -c`), with `-n`
/// after the subcommand as mqadmin takes it: the broker no longer has the
/// topic and the name server no longer routes it.
#[test]
fn topic_delete_removes_the_topic_from_brokers_and_routes() {
    let namesrv = harness::Namesrv::start();
    let broker = harness::Broker::start(&namesrv.addr(), BrokerOpts::default());
    let topic = unique_name("Gone");
    let ns = namesrv.addr();
    let at_end = |args: &[&str]| {
        let mut all = vec!["admin"];
        all.extend_from_slice(args);
        all.extend_from_slice(&["-n", &ns]);
        Command::new(ferrocket_bin()).args(&all).output().unwrap()
    };
    let created = at_end(&["topic", "create", "-t", &topic, "-c", "DefaultCluster"]);
    assert!(created.status.success(), "{created:?}");
    let routed = wait_for(ready_timeout(), || {
        Some(at_end(&["topic", "route", "-t", &topic])).filter(|o| o.status.success())
    });
    assert!(routed.is_some(), "the new topic is never routed");

    let deleted = harness::succeeded(at_end(&[
        "topic",
        "delete",
        "-t",
        &topic,
        "-c",
        "DefaultCluster",
    ]));
    assert!(deleted.contains(&broker.addr()), "{deleted}");
    let route = at_end(&["topic", "route", "-t", &topic]);
    assert!(!route.status.success(), "still routed: {route:?}");
    let said = String::from_utf8_lossy(&route.stderr).into_owned();
    assert!(said.contains("has no route"), "{said}");
    let mut conn = broker.connect();
    let stats = conn.request(
        RemotingCommand::request(request_code::GET_TOPIC_STATS_INFO).with_ext("topic", &topic),
    );
    assert_eq!(stats.code, response_code::TOPIC_NOT_EXIST, "{stats:?}");
    let unknown = at_end(&["topic", "delete", "-t", &topic, "-c", "NoSuchCluster"]);
    let said = String::from_utf8_lossy(&unknown.stderr).into_owned();
    assert!(
        !unknown.status.success() && said.contains("NoSuchCluster"),
        "{said}"
    );
}
