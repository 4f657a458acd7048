//! QUERY_ASSIGNMENT (400) over a topic on two brokers: the broker asked
//! looks the topic's route up on the name server and assigns queues of
//! both, as Java's `QueryAssignmentProcessor` does — PULL groups an
//! average share of all eight queues, POP groups every broker (queue id
//! -1), or with `popShareQueueNum` their share and the next consumer's.

mod harness;

use ferrocket_protocol::codes::{request_code, response_code};
use ferrocket_protocol::RemotingCommand;
use harness::requests::consumer_heartbeat as heartbeat;
use harness::requests::create_topic;
use harness::{ready_timeout, unique_name, wait_for, BrokerOpts, RemotingConn};

/// The queues assigned to `client`, as `broker-queueId`, sorted.
fn assigned(conn: &mut RemotingConn, topic: &str, group: &str, client: &str) -> Vec<String> {
    let body = serde_json::json!({
        "topic": topic, "consumerGroup": group, "clientId": client,
        "strategyName": "AVG", "messageModel": "CLUSTERING",
    });
    let answer = conn.request(
        RemotingCommand::request(request_code::QUERY_ASSIGNMENT).with_body(body.to_string()),
    );
    assert_eq!(answer.code, response_code::SUCCESS, "{answer:?}");
    let body: serde_json::Value = serde_json::from_slice(&answer.body).unwrap();
    let mut queues: Vec<String> = body["messageQueueAssignments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            let q = &a["messageQueue"];
            format!("{}-{}", q["brokerName"].as_str().unwrap(), q["queueId"])
        })
        .collect();
    queues.sort();
    queues
}

fn set_mode(conn: &mut RemotingConn, topic: &str, group: &str, mode: &str, share: i32) {
    let body = serde_json::json!({
        "topic": topic, "consumerGroup": group, "mode": mode, "popShareQueueNum": share,
    });
    let request = RemotingCommand::request(request_code::SET_MESSAGE_REQUEST_MODE)
        .with_body(body.to_string());
    assert_eq!(conn.request(request).code, response_code::SUCCESS);
}

#[test]
fn queues_of_every_broker_of_the_route_are_assigned() {
    let namesrv = harness::Namesrv::start();
    let opts = |name: &str| BrokerOpts {
        broker_name: Some(name.to_string()),
        register_interval_ms: Some(500),
        ..BrokerOpts::default()
    };
    let a = harness::Broker::start(&namesrv.addr(), opts("broker-a"));
    let b = harness::Broker::start(&namesrv.addr(), opts("broker-b"));
    let (topic, group) = (unique_name("Assigned"), unique_name("AssignedGroup"));
    let mut conn = a.connect();
    create_topic(&mut conn, &topic, 4);
    create_topic(&mut b.connect(), &topic, 4);
    for client in ["c1", "c2"] {
        assert_eq!(
            conn.request(heartbeat(client, &group)).code,
            response_code::SUCCESS
        );
    }
    // Both brokers in the route (the broker caches a route for 30 s, so
    // the first answer that names both is the one the test waits for).
    let both = wait_for(ready_timeout(), || {
        let theirs = assigned(&mut conn, &topic, &group, "c2");
        theirs
            .iter()
            .any(|q| q.starts_with("broker-b"))
            .then_some(theirs)
    });
    let pull = both.expect("broker-b's queues were never assigned");
    assert_eq!(
        pull,
        ["broker-b-0", "broker-b-1", "broker-b-2", "broker-b-3"]
    );
    assert_eq!(
        assigned(&mut conn, &topic, &group, "c1"),
        ["broker-a-0", "broker-a-1", "broker-a-2", "broker-a-3"]
    );

    set_mode(&mut conn, &topic, &group, "POP", 0);
    assert_eq!(
        assigned(&mut conn, &topic, &group, "c2"),
        ["broker-a--1", "broker-b--1"]
    );
    for client in ["c3", "c4"] {
        assert_eq!(
            conn.request(heartbeat(client, &group)).code,
            response_code::SUCCESS
        );
    }
    set_mode(&mut conn, &topic, &group, "POP", 1);
    // Four consumers share one each: c4's two queues and c1's.
    assert_eq!(
        assigned(&mut conn, &topic, &group, "c4"),
        ["broker-a-0", "broker-a-1", "broker-b-2", "broker-b-3"]
    );
}
