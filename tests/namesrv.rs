//! The name server as a real process: routes after broker registration,
//! unknown topics, expiry, and bad input from the network.

mod harness;

use std::time::Duration;

use ferrocket_protocol::body::{decode_json, ClusterInfo, TopicRouteData};
use ferrocket_protocol::codes::{request_code, response_code};
use ferrocket_protocol::{RemotingCommand, SerializeType};
use harness::bad_input::{assert_rejected, frame_cases, NAMESRV_REJECT_CODES};
use harness::remoting::{route_request, route_request_binary, FakeBroker, Outcome};
use harness::{unique_name, wait_for, Broker, BrokerOpts, Namesrv, NamesrvOpts, RemotingConn};

fn fake_broker(topics: &[(&str, i32)]) -> FakeBroker {
    FakeBroker {
        cluster: unique_name("cluster"),
        name: unique_name("broker"),
        // Nothing listens there; the name server only records it.
        addr: "127.0.0.1:1".into(),
        id: 0,
        topics: topics.iter().map(|(t, q)| (t.to_string(), *q)).collect(),
    }
}

fn route(conn: &mut RemotingConn, topic: &str) -> RemotingCommand {
    conn.request(route_request(topic))
}

fn assert_route_to(response: &RemotingCommand, broker: &FakeBroker, queues: i32) {
    assert_eq!(response.code, response_code::SUCCESS, "{response:?}");
    let data: TopicRouteData = decode_json(&response.body).unwrap();
    assert_eq!(data.queue_datas.len(), 1, "{data:?}");
    let queue = &data.queue_datas[0];
    assert_eq!(queue.broker_name, broker.name);
    assert_eq!(queue.read_queue_nums, queues);
    assert_eq!(queue.write_queue_nums, queues);
    assert_eq!(queue.perm, 6, "read+write permission");
    assert_eq!(data.broker_datas.len(), 1, "{data:?}");
    let broker_data = &data.broker_datas[0];
    assert_eq!(broker_data.broker_name, broker.name);
    assert_eq!(broker_data.cluster, broker.cluster);
    assert_eq!(broker_data.master_addr(), Some(broker.addr.as_str()));
}

#[test]
fn route_lookup_after_broker_registers() {
    let namesrv = Namesrv::start();
    let mut conn = namesrv.connect();
    let topic = unique_name("RouteTopic");
    let broker = fake_broker(&[(&topic, 4)]);

    let response = conn.request(broker.register_request());
    assert_eq!(response.code, response_code::SUCCESS, "{response:?}");

    // Another client (in the other header encoding) sees the same route.
    assert_route_to(&route(&mut conn, &topic), &broker, 4);
    let mut other = namesrv.connect();
    let binary = other.request(route_request_binary(&topic));
    assert_eq!(
        binary.serialize_type,
        SerializeType::RocketMq,
        "answered in the request's type"
    );
    assert_route_to(&binary, &broker, 4);

    let info = conn.request(RemotingCommand::request(
        request_code::GET_BROKER_CLUSTER_INFO,
    ));
    assert_eq!(info.code, response_code::SUCCESS, "{info:?}");
    let info: ClusterInfo = decode_json(&info.body).unwrap();
    assert!(
        info.cluster_addr_table
            .get(&broker.cluster)
            .is_some_and(|names| names.contains(&broker.name)),
        "{info:?}"
    );
    assert_eq!(
        info.broker_addr_table
            .get(&broker.name)
            .and_then(|b| b.master_addr()),
        Some(broker.addr.as_str())
    );
}

#[test]
fn unknown_topic_answers_topic_not_exist() {
    let namesrv = Namesrv::start();
    let mut conn = namesrv.connect();
    let response = route(&mut conn, &unique_name("NoSuchTopic"));
    assert_eq!(
        response.code,
        response_code::TOPIC_NOT_EXIST,
        "{response:?}"
    );
    let binary = conn.request(route_request_binary(&unique_name("NoSuchTopic")));
    assert_eq!(binary.code, response_code::TOPIC_NOT_EXIST, "{binary:?}");
}

#[test]
fn unregistered_broker_loses_its_routes() {
    let namesrv = Namesrv::start();
    let mut conn = namesrv.connect();
    let topic = unique_name("UnregTopic");
    let broker = fake_broker(&[(&topic, 2)]);
    assert_eq!(
        conn.request(broker.register_request()).code,
        response_code::SUCCESS
    );
    assert_route_to(&route(&mut conn, &topic), &broker, 2);

    let response = conn.request(broker.unregister_request());
    assert_eq!(response.code, response_code::SUCCESS, "{response:?}");
    assert_eq!(
        route(&mut conn, &topic).code,
        response_code::TOPIC_NOT_EXIST
    );
}

#[test]
fn silent_broker_expires_and_its_routes_go() {
    let expiry_ms = 1_500;
    let namesrv = Namesrv::start_with(NamesrvOpts {
        broker_expiry_ms: Some(expiry_ms),
        ..Default::default()
    });
    let mut conn = namesrv.connect();
    let topic = unique_name("ExpiringTopic");
    let broker = fake_broker(&[(&topic, 1)]);
    assert_eq!(
        conn.request(broker.register_request()).code,
        response_code::SUCCESS
    );
    assert_route_to(&route(&mut conn, &topic), &broker, 1);

    // The expiry scan runs periodically; allow several scan periods.
    let gone = wait_for(Duration::from_secs(30), || {
        (route(&mut conn, &topic).code == response_code::TOPIC_NOT_EXIST).then_some(())
    });
    assert!(
        gone.is_some(),
        "route still served 30 s after a {expiry_ms} ms expiry"
    );
}

fn assert_still_serving(namesrv: &Namesrv, bystander: &mut RemotingConn, case: &str) {
    let fresh = route(&mut namesrv.connect(), "TopicThatDoesNotExist");
    assert_eq!(
        fresh.code,
        response_code::TOPIC_NOT_EXIST,
        "after {case}: {fresh:?}"
    );
    let old = route(bystander, "TopicThatDoesNotExist");
    assert_eq!(
        old.code,
        response_code::TOPIC_NOT_EXIST,
        "after {case}: {old:?}"
    );
}

#[test]
fn bad_input_is_rejected_and_others_keep_being_served() {
    let namesrv = Namesrv::start();
    // Opened before any bad input; must keep working throughout.
    let mut bystander = namesrv.connect();
    assert_still_serving(&namesrv, &mut bystander, "nothing");
    for input in frame_cases() {
        assert_rejected(&namesrv.addr(), &input, NAMESRV_REJECT_CODES);
        assert_still_serving(&namesrv, &mut bystander, input.name);
    }
}

#[test]
fn unknown_request_code_is_not_supported_and_the_connection_stays_usable() {
    let namesrv = Namesrv::start();
    let mut conn = namesrv.connect();
    for serialize_type in [SerializeType::Json, SerializeType::RocketMq] {
        let mut request = RemotingCommand::request(31_999);
        request.serialize_type = serialize_type;
        let response = conn.request(request);
        assert_eq!(
            response.code,
            response_code::REQUEST_CODE_NOT_SUPPORTED,
            "{response:?}"
        );
        assert_eq!(response.serialize_type, serialize_type);
        // A broker-only request is unknown to the name server too.
        let response = conn.request(RemotingCommand::request(request_code::PULL_MESSAGE));
        assert_eq!(
            response.code,
            response_code::REQUEST_CODE_NOT_SUPPORTED,
            "{response:?}"
        );
        assert_eq!(
            route(&mut conn, "NoSuchTopicHere").code,
            response_code::TOPIC_NOT_EXIST
        );
    }
}

#[test]
fn pipelined_requests_are_answered_by_opaque() {
    let namesrv = Namesrv::start();
    let mut conn = namesrv.connect();
    let topic = unique_name("PipeTopic");
    let broker = fake_broker(&[(&topic, 3)]);
    assert_eq!(
        conn.request(broker.register_request()).code,
        response_code::SUCCESS
    );
    // Send several requests before reading any answer.
    let mut expected = Vec::new();
    for i in 0..8 {
        let mut request = if i % 2 == 0 {
            route_request(&topic)
        } else {
            route_request("PipeNoSuchTopic")
        };
        let opaque = conn.send(&mut request).unwrap();
        expected.push((opaque, if i % 2 == 0 { 0 } else { 17 }));
    }
    let mut seen = Vec::new();
    for _ in 0..expected.len() {
        match conn.read_outcome(Duration::from_secs(10)) {
            Outcome::Response(r) => seen.push((r.opaque, r.code)),
            other => panic!("expected a response, got {other:?}"),
        }
    }
    seen.sort();
    assert_eq!(seen, expected);
}

/// A real broker registers with every name server it is given.
#[test]
fn broker_registers_with_every_namesrv() {
    let first = Namesrv::start();
    let second = Namesrv::start();
    let broker = Broker::start(
        &format!("{};{}", first.addr(), second.addr()),
        BrokerOpts {
            broker_name: Some(unique_name("twoNsBroker")),
            cluster_name: Some("TwoNsCluster".into()),
            ..Default::default()
        },
    );
    for namesrv in [&first, &second] {
        let mut conn = namesrv.connect();
        let registered = wait_for(Duration::from_secs(20), || {
            let info = conn.request(RemotingCommand::request(
                request_code::GET_BROKER_CLUSTER_INFO,
            ));
            if info.code != response_code::SUCCESS {
                return None;
            }
            let info: ClusterInfo = decode_json(&info.body).ok()?;
            info.broker_addr_table
                .values()
                .find(|b| b.master_addr() == Some(broker.addr().as_str()))
                .map(|b| b.cluster.clone())
        });
        assert_eq!(
            registered.as_deref(),
            Some("TwoNsCluster"),
            "broker {} not registered with {}",
            broker.addr(),
            namesrv.addr()
        );
    }
}
