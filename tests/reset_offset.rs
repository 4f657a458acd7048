//! INVOKE_BROKER_TO_RESET_OFFSET on the wire (what mqadmin's
//! resetOffsetByTime sends): the broker answers CONSUMER_NOT_ONLINE for a
//! group without consumers and TOPIC_NOT_EXIST for an unknown topic;
//! otherwise it commits the reset offsets (moving them forward only when
//! forced), pushes RESET_CONSUMER_CLIENT_OFFSET oneway to every consumer
//! of the group (a list body to C++ clients, fastjson's object-keyed map
//! to the others) and answers the map. The C++ client's handling of the
//! push is tested in tests/interop/test_reset_offset.py.

mod harness;

use std::time::Duration;

use ferrocket_protocol::codes::{request_code, response_code};
use ferrocket_protocol::frame::LanguageCode;
use ferrocket_protocol::RemotingCommand;
use harness::remoting::Outcome;
use harness::requests::{send_header, send_request};
use harness::{Broker, BrokerOpts, Namesrv, RemotingConn};

const GROUP: &str = "reset_group";
const TOPIC: &str = "ResetWire";
const HEARTBEAT_OPAQUE: i32 = 1_000_000;

fn create_topic(conn: &mut RemotingConn) {
    harness::requests::create_topic(conn, TOPIC, 2);
}

fn send(conn: &mut RemotingConn, queue_id: i32, body: &str) {
    let header = send_header("reset_producer", TOPIC, queue_id);
    let request = send_request(&header, body.to_string());
    assert_eq!(conn.request(request).code, response_code::SUCCESS);
}

fn consumer(broker: &Broker, client_id: &str, language: LanguageCode) -> RemotingConn {
    let mut conn = broker.connect();
    let body = format!(
        r#"{{"clientID":"{client_id}","consumerDataSet":[{{"groupName":"{GROUP}","consumeType":"CONSUME_PASSIVELY",
        "messageModel":"CLUSTERING","consumeFromWhere":"CONSUME_FROM_LAST_OFFSET",
        "subscriptionDataSet":[{{"topic":"{TOPIC}","subString":"*"}}]}}],"producerDataSet":[]}}"#
    );
    let mut request = RemotingCommand::request(request_code::HEART_BEAT).with_body(body);
    request.language = language;
    // The broker numbers its own pushes (NOTIFY_CONSUMER_IDS_CHANGED) from
    // 1 as well: use an opaque they cannot have, and skip requests.
    request.opaque = HEARTBEAT_OPAQUE;
    conn.send_raw(&request.to_bytes()).unwrap();
    loop {
        match conn.read_outcome(Duration::from_secs(10)) {
            Outcome::Response(answer) if answer.is_response() => {
                assert_eq!(answer.opaque, HEARTBEAT_OPAQUE);
                assert_eq!(answer.code, response_code::SUCCESS, "{answer:?}");
                return conn;
            }
            Outcome::Response(_) => continue,
            other => panic!("waiting for the heartbeat answer: {other:?}"),
        }
    }
}

fn reset(conn: &mut RemotingConn, topic: &str, timestamp: i64, force: bool) -> RemotingCommand {
    let request = RemotingCommand::request(request_code::INVOKE_BROKER_TO_RESET_OFFSET)
        .with_ext("topic", topic)
        .with_ext("group", GROUP)
        .with_ext("timestamp", timestamp)
        .with_ext("isForce", force);
    conn.request(request)
}

fn commit(conn: &mut RemotingConn, queue_id: i32, offset: i64) {
    let request = RemotingCommand::request(request_code::UPDATE_CONSUMER_OFFSET)
        .with_ext("consumerGroup", GROUP)
        .with_ext("topic", TOPIC)
        .with_ext("queueId", queue_id)
        .with_ext("commitOffset", offset);
    assert_eq!(conn.request(request).code, response_code::SUCCESS);
}

fn committed(conn: &mut RemotingConn, queue_id: i32) -> i64 {
    let request = RemotingCommand::request(request_code::QUERY_CONSUMER_OFFSET)
        .with_ext("consumerGroup", GROUP)
        .with_ext("topic", TOPIC)
        .with_ext("queueId", queue_id)
        .with_ext("setZeroIfNotFound", "false");
    let response = conn.request(request);
    assert_eq!(response.code, response_code::SUCCESS, "{response:?}");
    response.ext_fields.get_i64("offset").unwrap().unwrap()
}

/// The next RESET_CONSUMER_CLIENT_OFFSET pushed on `conn`.
fn next_push(conn: &mut RemotingConn) -> RemotingCommand {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        match conn.read_outcome(left) {
            Outcome::Response(command)
                if command.code == request_code::RESET_CONSUMER_CLIENT_OFFSET =>
            {
                return command
            }
            Outcome::Response(_) => continue,
            other => panic!("waiting for a reset push: {other:?}"),
        }
    }
}

fn map_body(broker_name: &str, q0: i64, q1: i64) -> String {
    format!(
        r#"{{"offsetTable":{{{{"brokerName":"{broker_name}","queueId":0,"topic":"{TOPIC}"}}:{q0},{{"brokerName":"{broker_name}","queueId":1,"topic":"{TOPIC}"}}:{q1}}}}}"#
    )
}

#[test]
fn online_reset_commits_pushes_and_answers() {
    let namesrv = Namesrv::start();
    let broker = Broker::start(
        &namesrv.addr(),
        BrokerOpts {
            shards: Some(2),
            broker_name: Some("broker-reset".into()),
            ..BrokerOpts::default()
        },
    );
    let mut admin = broker.connect();
    create_topic(&mut admin);
    for i in 0..3 {
        send(&mut admin, 0, &format!("q0-{i}"));
    }
    send(&mut admin, 1, "q1-0");
    commit(&mut admin, 0, 3);
    commit(&mut admin, 1, 1);

    let offline = reset(&mut admin, TOPIC, 0, true);
    assert_eq!(
        offline.code,
        response_code::CONSUMER_NOT_ONLINE,
        "{offline:?}"
    );
    assert_eq!(committed(&mut admin, 0), 3, "nothing changes offline");

    let mut cpp = consumer(&broker, "cpp-client", LanguageCode::Cpp);
    let mut java = consumer(&broker, "java-client", LanguageCode::Java);
    let unknown = reset(&mut admin, "NoSuchTopic", 0, true);
    assert_eq!(unknown.code, response_code::TOPIC_NOT_EXIST, "{unknown:?}");

    // Back to the start.
    let answer = reset(&mut admin, TOPIC, 0, false);
    assert_eq!(answer.code, response_code::SUCCESS, "{answer:?}");
    assert_eq!(
        String::from_utf8_lossy(&answer.body),
        map_body("broker-reset", 0, 0)
    );
    assert_eq!((committed(&mut admin, 0), committed(&mut admin, 1)), (0, 0));

    let pushed = next_push(&mut cpp);
    assert!(pushed.is_oneway());
    assert_eq!(pushed.ext_fields.get("topic"), Some(TOPIC));
    assert_eq!(pushed.ext_fields.get("group"), Some(GROUP));
    assert_eq!(pushed.ext_fields.get("timestamp"), Some("0"));
    assert_eq!(
        String::from_utf8_lossy(&pushed.body),
        format!(
            r#"{{"offsetTable":[{{"brokerName":"broker-reset","offset":0,"queueId":0,"topic":"{TOPIC}"}},{{"brokerName":"broker-reset","offset":0,"queueId":1,"topic":"{TOPIC}"}}]}}"#
        ),
        "C++ clients get ResetOffsetBodyForC"
    );
    let pushed = next_push(&mut java);
    assert!(pushed.is_oneway());
    assert_eq!(
        String::from_utf8_lossy(&pushed.body),
        map_body("broker-reset", 0, 0),
        "other clients get ResetOffsetBody"
    );

    // Forward (every message is older): only when forced.
    let future = 4_000_000_000_000_i64;
    let answer = reset(&mut admin, TOPIC, future, false);
    assert_eq!(
        String::from_utf8_lossy(&answer.body),
        map_body("broker-reset", 0, 0)
    );
    let answer = reset(&mut admin, TOPIC, future, true);
    assert_eq!(
        String::from_utf8_lossy(&answer.body),
        map_body("broker-reset", 3, 1)
    );
    assert_eq!((committed(&mut admin, 0), committed(&mut admin, 1)), (3, 1));
    // Timestamp -1: the max offsets.
    let answer = reset(&mut admin, TOPIC, -1, true);
    assert_eq!(
        String::from_utf8_lossy(&answer.body),
        map_body("broker-reset", 3, 1)
    );
}
