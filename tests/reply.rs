//! SEND_REPLY_MESSAGE: a reply is pushed to the requesting producer's
//! connection (PUSH_REPLY_MESSAGE_TO_CLIENT) and the replier hears whether
//! the requester took it.

mod harness;

use ferrocket_protocol::codes::{request_code, response_code};
use ferrocket_protocol::properties::{self, Properties};
use ferrocket_protocol::RemotingCommand;
use harness::remoting::Outcome;
use harness::{Broker, BrokerOpts, Namesrv, RemotingConn};
use std::time::Duration;

fn reply_request(reply_to: &str, body: &str) -> RemotingCommand {
    let mut props = Properties::new();
    props.insert(properties::REPLY_TO_CLIENT, reply_to);
    props.insert(properties::CORRELATION_ID, "corr-1");
    RemotingCommand::request(request_code::SEND_REPLY_MESSAGE_V2)
        .with_ext("a", "replier_pg")
        .with_ext("b", "DefaultCluster_REPLY_TOPIC")
        .with_ext("c", "TBW102")
        .with_ext("d", 4)
        .with_ext("e", 0)
        .with_ext("f", 0)
        .with_ext("g", 1_700_000_000_000i64)
        .with_ext("h", 0)
        .with_ext("i", props.to_encoded_string())
        .with_body(body.to_string())
}

#[test]
fn replies_are_pushed_to_the_requester() {
    let namesrv = Namesrv::start();
    let broker = Broker::start(
        &namesrv.addr(),
        BrokerOpts {
            shards: Some(2),
            ..BrokerOpts::default()
        },
    );
    let mut requester = broker.connect();
    let beat = RemotingCommand::request(request_code::HEART_BEAT).with_body(
        r#"{"clientID":"requester-1","producerDataSet":[{"groupName":"req_pg"}],"consumerDataSet":[]}"#,
    );
    assert_eq!(requester.request(beat).code, response_code::SUCCESS);

    let addr = broker.addr();
    let replier = std::thread::spawn(move || {
        let mut conn = RemotingConn::connect(&addr).unwrap();
        let unknown = conn.request(reply_request("nobody", "lost"));
        let known = conn.request(reply_request("requester-1", "pong"));
        (unknown, known)
    });
    let push = loop {
        match requester.read_outcome(Duration::from_secs(20)) {
            Outcome::Response(command)
                if command.code == request_code::PUSH_REPLY_MESSAGE_TO_CLIENT =>
            {
                break command
            }
            Outcome::Response(_) => continue,
            other => panic!("no push: {other:?}"),
        }
    };
    assert_eq!(&push.body[..], b"pong");
    let props = Properties::decode_str(push.ext_fields.get("properties").unwrap());
    assert_eq!(props.get(properties::CORRELATION_ID), Some("corr-1"));
    assert!(props.get(properties::PUSH_REPLY_TIME).is_some());
    assert_eq!(
        push.ext_fields.get("topic"),
        Some("DefaultCluster_REPLY_TOPIC")
    );
    let ack = RemotingCommand::response_to(&push, response_code::SUCCESS, None);
    requester.send_raw(&ack.to_bytes()).unwrap();

    let (unknown, known) = replier.join().unwrap();
    assert_eq!(unknown.code, response_code::SYSTEM_ERROR, "{unknown:?}");
    assert_eq!(known.code, response_code::SUCCESS, "{known:?}");
    assert_eq!(known.ext_fields.get("msgId"), Some("0"));
}
