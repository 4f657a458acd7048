//! Bad input gets the right error code (or a closed connection for broken
//! frames) and the broker keeps serving everyone else.

mod common;

use common::*;
use ferrocket_protocol::codes::{request_code, response_code};
use ferrocket_protocol::RemotingCommand;

#[test]
fn invalid_sends_are_answered_with_their_codes() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = config(dir.path(), 2);
    config.max_message_size = 1024;
    let broker = Broker::start(config);
    let mut client = broker.client();
    client.create_topic("Good", 2);

    let oversize = client.send_message("Good", 0, &[7u8; 2000], &props(&[]));
    assert_eq!(oversize.code, response_code::MESSAGE_ILLEGAL);
    assert!(oversize.remark.unwrap_or_default().contains("1024"));

    for bad in ["bad topic", "a.b", &"x".repeat(128)] {
        let response = client.send_message(bad, 0, b"x", &props(&[]));
        assert_eq!(
            response.code,
            response_code::MESSAGE_ILLEGAL,
            "topic {bad:?}"
        );
    }

    let forbidden = client.send_message("TBW102", 0, b"x", &props(&[]));
    assert_eq!(forbidden.code, response_code::NO_PERMISSION);

    let out_of_range = client.send_message("Good", 5, b"x", &props(&[]));
    assert_eq!(out_of_range.code, response_code::INVALID_PARAMETER);

    let mut no_topic = RemotingCommand::request(request_code::SEND_MESSAGE);
    no_topic.ext_fields = fields(&[("producerGroup", "PG"), ("queueId", "0")]);
    assert_eq!(
        client.request(no_topic).code,
        response_code::INVALID_PARAMETER
    );

    let unknown = client.request(RemotingCommand::request(9999));
    assert_eq!(unknown.code, response_code::REQUEST_CODE_NOT_SUPPORTED);
    assert_eq!(
        unknown.remark.as_deref(),
        Some(" request type 9999 not supported")
    );

    // A negative queue id picks a queue; an unknown topic is auto-created
    // from TBW102 with the client's default queue count (4, below 8).
    let (queue_id, _, _) = client.send_ok("AutoMade", -1, b"x", &props(&[]));
    assert!((0..4).contains(&queue_id));
    let topic = client.offset_call(request_code::GET_TOPIC_CONFIG, &[("topic", "AutoMade")]);
    assert_eq!(topic.code, response_code::SUCCESS);
    let topic: ferrocket_protocol::body::TopicConfig =
        ferrocket_protocol::body::decode_json(&topic.body).unwrap();
    assert_eq!((topic.write_queue_nums, topic.perm), (4, 6));

    // Pulls: unknown topic, bad queue, unsupported filter.
    let response = client.pull(&pull_header("G", "Nope", 0, 0, "*", 0));
    assert_eq!(response.code, response_code::TOPIC_NOT_EXIST);
    let response = client.pull(&pull_header("G", "Good", 9, 0, "*", 0));
    assert_eq!(response.code, response_code::INVALID_PARAMETER);
    let mut sql = pull_header("G", "Good", 0, 0, "a > 1", 0);
    sql.expression_type = Some("SQL92".into());
    assert_eq!(client.pull(&sql).code, response_code::SYSTEM_ERROR);

    // A heartbeat whose body is not JSON.
    let garbage = client
        .request(RemotingCommand::request(request_code::HEART_BEAT).with_body(b"{nope".to_vec()));
    assert_ne!(garbage.code, response_code::SUCCESS);

    // Still serving.
    client.send_ok("Good", 1, b"fine", &props(&[]));
    broker.stop();
}

#[test]
fn unknown_topics_are_refused_without_auto_create() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = config(dir.path(), 1);
    config.auto_create_topic_enable = false;
    let broker = Broker::start(config);
    let mut client = broker.client();
    let response = client.send_message("NotThere", 0, b"x", &props(&[]));
    assert_eq!(response.code, response_code::TOPIC_NOT_EXIST);
    assert!(response.remark.unwrap_or_default().contains("NotThere"));
    broker.stop();
}

#[test]
fn broken_frames_close_only_their_connection() {
    let dir = tempfile::tempdir().unwrap();
    let broker = Broker::start(config(dir.path(), 2));
    let mut good = broker.client();
    good.create_topic("Alive", 1);

    // A header that is not JSON.
    let mut bad = broker.client();
    let header = b"not json at all";
    let mut frame = Vec::new();
    frame.extend_from_slice(&((4 + header.len()) as i32).to_be_bytes());
    frame.extend_from_slice(&(header.len() as i32).to_be_bytes());
    frame.extend_from_slice(header);
    bad.send_raw(&frame).unwrap();
    assert!(bad.recv().is_none(), "the connection is closed");

    // A length prefix far above the frame limit.
    let mut huge = broker.client();
    huge.send_raw(&(1_000_000_000i32).to_be_bytes()).unwrap();
    assert!(huge.recv().is_none(), "the connection is closed");

    // Random bytes.
    let mut noise = broker.client();
    noise.send_raw(&[0xff; 64]).unwrap();
    assert!(noise.recv().is_none(), "the connection is closed");

    good.send_ok("Alive", 0, b"still here", &props(&[]));
    assert_eq!(good.pull_all("G", "Alive", 0, "*").len(), 1);
    broker.stop();
}
