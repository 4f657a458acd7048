//! No client send reaches an internal topic: single (V1 and V2 headers) and
//! batch sends to the timer, delay-level, half, template and other system
//! topics are refused with NO_PERMISSION, and nothing is written outside
//! the store (the timer once copied a batch item with REAL_TOPIC=../../x
//! beside the store root).

mod harness;

use std::time::Duration;

use ferrocket_protocol::batch::{encode_batch, BatchItem};
use ferrocket_protocol::codes::{request_code, response_code};
use ferrocket_protocol::properties::Properties;
use ferrocket_protocol::RemotingCommand;
use harness::requests::{send_header, send_request};
use harness::{unique_name, Broker, BrokerOpts, Namesrv};

const INTERNAL_TOPICS: [&str; 10] = [
    "rmq_sys_wheel_timer",
    "SCHEDULE_TOPIC_XXXX",
    "RMQ_SYS_TRANS_HALF_TOPIC",
    "RMQ_SYS_TRANS_OP_HALF_TOPIC",
    "TRANS_CHECK_MAX_TIME_TOPIC",
    "SELF_TEST_TOPIC",
    "OFFSET_MOVED_EVENT",
    "TBW102",
    "DefaultCluster",
    "rmq_sys_other",
];

/// A property string that would send a timer copy outside the store.
fn escaping_properties(escape: &str) -> Properties {
    let mut props = Properties::new();
    props.insert("REAL_TOPIC", format!("../../{escape}"));
    props.insert("REAL_QID", "0");
    props.insert("TIMER_OUT_MS", "1");
    props
}

fn batch_request(topic: &str, props: &Properties) -> RemotingCommand {
    let item = BatchItem {
        flag: 0,
        body: "escape".into(),
        properties: props.to_bytes().into(),
    };
    let header = ferrocket_protocol::header::SendMessageRequestHeader {
        batch: true,
        ..send_header("InternalPG", topic, 0)
    };
    let mut request = send_request(&header, encode_batch(&[item]).unwrap());
    request.code = request_code::SEND_BATCH_MESSAGE;
    request
}

fn v2_request(topic: &str, props: &Properties) -> RemotingCommand {
    let header = ferrocket_protocol::header::SendMessageRequestHeader {
        properties: Some(props.to_encoded_string()),
        ..send_header("InternalPG", topic, 0)
    };
    let mut request = RemotingCommand::request(request_code::SEND_MESSAGE_V2).with_body("x");
    for (name, value) in header.to_ext().iter() {
        let short = match name {
            "producerGroup" => "a",
            "topic" => "b",
            "defaultTopic" => "c",
            "defaultTopicQueueNums" => "d",
            "queueId" => "e",
            "sysFlag" => "f",
            "bornTimestamp" => "g",
            "flag" => "h",
            "properties" => "i",
            "reconsumeTimes" => "j",
            _ => continue,
        };
        request.ext_fields.insert(short, value);
    }
    request
}

#[test]
fn sends_to_internal_topics_are_refused_and_nothing_escapes_the_store() {
    let namesrv = Namesrv::start();
    let broker = Broker::start(
        &namesrv.addr(),
        BrokerOpts {
            shards: Some(2),
            ..Default::default()
        },
    );
    let escape = unique_name("escaped");
    let props = escaping_properties(&escape);
    let mut conn = broker.connect();
    for topic in INTERNAL_TOPICS {
        let v1 = ferrocket_protocol::header::SendMessageRequestHeader {
            properties: Some(props.to_encoded_string()),
            ..send_header("InternalPG", topic, 0)
        };
        for (kind, request) in [
            ("V1", send_request(&v1, "x")),
            ("V2", v2_request(topic, &props)),
            ("batch", batch_request(topic, &props)),
        ] {
            let answer = conn.request(request);
            assert_eq!(
                answer.code,
                response_code::NO_PERMISSION,
                "{kind} send to {topic}: {answer:?}"
            );
            let remark = answer.remark.clone().unwrap_or_default();
            assert!(remark.contains("forbidden"), "{kind} {topic}: {remark}");
        }
    }
    // The trace topic stays open to clients, as in Java.
    let trace = conn.request(send_request(
        &send_header("InternalPG", "RMQ_SYS_TRACE_TOPIC", 0),
        "trace",
    ));
    assert_eq!(trace.code, response_code::SUCCESS, "{trace:?}");

    // Give a timer that slipped through time to fire, then look around.
    std::thread::sleep(Duration::from_millis(2_500));
    let store = broker.store_dir();
    let mut near = vec![store.to_path_buf()];
    near.extend(store.ancestors().take(3).map(|p| p.to_path_buf()));
    for dir in near {
        assert!(
            !dir.join(&escape).exists(),
            "{} appeared",
            dir.join(&escape).display()
        );
    }
}
