//! A live broker process facing bad input: every case gets an error answer
//! or a closed connection, and other clients keep working.

mod harness;

use bytes::Bytes;
use ferrocket_protocol::codes::response_code;
use ferrocket_protocol::limits::MESSAGE_BODY_BYTES_MAX_DEFAULT;
use ferrocket_protocol::RemotingCommand;
use harness::bad_input::{assert_rejected, frame_cases, BadInput};
use harness::requests::send_header;
use harness::{unique_name, Broker, BrokerOpts, Namesrv, RemotingConn};

fn create_topic(conn: &mut RemotingConn, topic: &str) {
    harness::requests::create_topic(conn, topic, 4);
}

fn send_request(topic: &str, body: impl Into<Bytes>) -> RemotingCommand {
    harness::requests::send_request(&send_header("BadInputPG", topic, 0), body)
}

/// A send on `conn` succeeds.
fn assert_send_works(conn: &mut RemotingConn, topic: &str, after: &str) {
    let response = conn.request(send_request(topic, "still here"));
    assert_eq!(
        response.code,
        response_code::SUCCESS,
        "send after {after}: {response:?}"
    );
}

#[test]
fn bad_input_to_a_live_broker_is_rejected_and_others_keep_working() {
    let namesrv = Namesrv::start();
    let mut broker = Broker::start(
        &namesrv.addr(),
        BrokerOpts {
            auto_create_topic: Some(false),
            shards: Some(2),
            ..Default::default()
        },
    );
    let topic = unique_name("BadInputTopic");
    let mut bystander = broker.connect();
    create_topic(&mut bystander, &topic);
    assert_send_works(&mut bystander, &topic, "nothing");

    // Framing garbage: no answer but REQUEST_CODE_NOT_SUPPORTED or a close
    // (a broker may also answer SYSTEM_ERROR to a header it cannot read).
    let framing_codes = [
        response_code::REQUEST_CODE_NOT_SUPPORTED,
        response_code::SYSTEM_ERROR,
    ];
    for input in frame_cases() {
        assert_rejected(&broker.addr(), &input, &framing_codes);
        assert_send_works(&mut bystander, &topic, input.name);
        // Fresh connections work too (several, to land on every shard).
        for _ in 0..4 {
            assert_send_works(&mut broker.connect(), &topic, input.name);
        }
    }

    // Well-framed requests the broker must refuse with an error answer.
    let mut conn = broker.connect();
    let unknown = conn.request(RemotingCommand::request(31_999));
    assert_eq!(
        unknown.code,
        response_code::REQUEST_CODE_NOT_SUPPORTED,
        "{unknown:?}"
    );

    let oversize = vec![b'x'; MESSAGE_BODY_BYTES_MAX_DEFAULT + 1];
    let response = conn.request(send_request(&topic, oversize));
    assert_eq!(
        response.code,
        response_code::MESSAGE_ILLEGAL,
        "oversize body: {response:?}"
    );

    let response = conn.request(send_request("bad topic name!", "x"));
    assert_ne!(
        response.code,
        response_code::SUCCESS,
        "invalid topic name accepted: {response:?}"
    );

    let response = conn.request(send_request(&unique_name("NoSuchTopic"), "x"));
    assert_eq!(
        response.code,
        response_code::TOPIC_NOT_EXIST,
        "unknown topic without auto-create: {response:?}"
    );

    let mut no_topic = send_request(&topic, "x");
    no_topic.ext_fields.remove("topic");
    let response = conn.request(no_topic);
    assert_ne!(
        response.code,
        response_code::SUCCESS,
        "send without a topic accepted: {response:?}"
    );

    let mut bad_queue = send_request(&topic, "x");
    bad_queue.ext_fields.insert("queueId", "not-a-number");
    let response = conn.request(bad_queue);
    assert_ne!(
        response.code,
        response_code::SUCCESS,
        "send with queueId=not-a-number accepted: {response:?}"
    );

    // The connection that sent all that still works, and so do the others.
    assert_send_works(&mut conn, &topic, "refused requests");
    assert_send_works(&mut bystander, &topic, "refused requests");

    // A frame larger than the broker accepts, announced honestly.
    let huge = BadInput {
        name: "frame above the 16 MiB limit",
        bytes: (17 * 1024 * 1024i32).to_be_bytes().to_vec(),
        then_close: false,
    };
    assert_rejected(&broker.addr(), &huge, &framing_codes);
    assert_send_works(&mut bystander, &topic, huge.name);
    assert!(broker.process.is_running(), "the broker died");
}
