//! No client send reaches an internal topic: single (V1 and V2 headers) and
//! batch sends to the timer, delay-level, half, template and other system
//! topics are refused with NO_PERMISSION, and nothing is written outside
//! the store (the timer once copied a batch item with REAL_TOPIC=../../x
//! beside the store root). The cluster and broker name topics take sends,
//! as Java's do (mqadmin sendMsgStatus and clusterRT send there), unless
//! `clusterTopicEnable` / `brokerTopicEnable` are off.

mod harness;

use std::time::Duration;

use ferrocket_protocol::batch::{encode_batch, BatchItem};
use ferrocket_protocol::codes::{request_code, response_code};
use ferrocket_protocol::properties::Properties;
use ferrocket_protocol::RemotingCommand;
use harness::requests::{send_header, send_request};
use harness::{unique_name, Broker, BrokerOpts, Namesrv};

const INTERNAL_TOPICS: [&str; 9] = [
    "rmq_sys_wheel_timer",
    "SCHEDULE_TOPIC_XXXX",
    "RMQ_SYS_TRANS_HALF_TOPIC",
    "RMQ_SYS_TRANS_OP_HALF_TOPIC",
    "TRANS_CHECK_MAX_TIME_TOPIC",
    "SELF_TEST_TOPIC",
    "OFFSET_MOVED_EVENT",
    "TBW102",
    "rmq_sys_other",
];

/// The harness broker's cluster and broker name topics.
const NAME_TOPICS: [&str; 2] = ["DefaultCluster", "broker-a"];

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
    // The trace topic stays open to clients, as in Java, and so do the name
    // topics: what is sent there stays there, the escaping properties too.
    for topic in ["RMQ_SYS_TRACE_TOPIC"].into_iter().chain(NAME_TOPICS) {
        for (kind, request) in [
            (
                "V1",
                send_request(&send_header("InternalPG", topic, 0), "x"),
            ),
            ("V2", v2_request(topic, &props)),
            ("batch", batch_request(topic, &props)),
        ] {
            let answer = conn.request(request);
            assert_eq!(
                answer.code,
                response_code::SUCCESS,
                "{kind} {topic}: {answer:?}"
            );
        }
    }

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

#[test]
fn the_name_topics_refuse_sends_when_their_settings_are_off() {
    let namesrv = Namesrv::start();
    let broker = Broker::start(
        &namesrv.addr(),
        BrokerOpts {
            extra_args: ["clusterTopicEnable=false", "brokerTopicEnable=false"]
                .iter()
                .flat_map(|kv| ["--set".to_string(), kv.to_string()])
                .collect(),
            ..Default::default()
        },
    );
    let mut conn = broker.connect();
    for topic in NAME_TOPICS {
        let answer = conn.request(send_request(&send_header("InternalPG", topic, 0), "x"));
        assert_eq!(
            answer.code,
            response_code::NO_PERMISSION,
            "{topic}: {answer:?}"
        );
        let remark = answer.remark.unwrap_or_default();
        assert!(remark.contains("forbidden"), "{topic}: {remark}");
    }
}

/// Names that must never become paths.
fn hostile_names() -> Vec<String> {
    vec![
        "..".into(),
        "../../hostile".into(),
        "/tmp/hostile_abs".into(),
        "nul\0byte".into(),
        "x".repeat(300),
        "%RETRY%../../hostile".into(),
    ]
}

/// A ROCKETMQ-binary-header request whose extField values are raw bytes
/// (so a value need not be UTF-8).
fn raw_binary_request(code: i16, fields: &[(&str, &[u8])]) -> Vec<u8> {
    let mut ext = Vec::new();
    for (key, value) in fields {
        ext.extend_from_slice(&(key.len() as i16).to_be_bytes());
        ext.extend_from_slice(key.as_bytes());
        ext.extend_from_slice(&(value.len() as i32).to_be_bytes());
        ext.extend_from_slice(value);
    }
    let mut header = Vec::new();
    header.extend_from_slice(&code.to_be_bytes());
    header.push(0); // JAVA
    header.extend_from_slice(&453i16.to_be_bytes());
    header.extend_from_slice(&77i32.to_be_bytes()); // opaque
    header.extend_from_slice(&0i32.to_be_bytes()); // flag
    header.extend_from_slice(&0i32.to_be_bytes()); // no remark
    header.extend_from_slice(&(ext.len() as i32).to_be_bytes());
    header.extend_from_slice(&ext);
    let body = b"x";
    let mut frame = Vec::new();
    frame.extend_from_slice(&((4 + header.len() + body.len()) as i32).to_be_bytes());
    frame.extend_from_slice(&((1i32 << 24) | header.len() as i32).to_be_bytes());
    frame.extend_from_slice(&header);
    frame.extend_from_slice(body);
    frame
}

fn requests_naming(name: &str) -> Vec<RemotingCommand> {
    let topic_request = |code: i32| {
        RemotingCommand::request(code)
            .with_ext("topic", name)
            .with_ext("queueId", 0)
    };
    let create = harness::requests::create_topic_request(name, 1);
    let offsets = |code: i32| {
        topic_request(code)
            .with_ext("consumerGroup", name)
            .with_ext("commitOffset", 1)
    };
    let pull = offsets(request_code::PULL_MESSAGE)
        .with_ext("queueOffset", 0)
        .with_ext("maxMsgNums", 1)
        .with_ext("sysFlag", 0)
        .with_ext("suspendTimeoutMillis", 0)
        .with_ext("subscription", "*");
    let group =
        RemotingCommand::request(request_code::UPDATE_AND_CREATE_SUBSCRIPTIONGROUP).with_body(
            format!("{{\"groupName\":{}}}", serde_json::to_string(name).unwrap()),
        );
    let heartbeat = RemotingCommand::request(request_code::HEART_BEAT).with_body(format!(
        "{{\"clientID\":\"c\",\"producerDataSet\":[],\"consumerDataSet\":[{{\"groupName\":{0},\
         \"consumeType\":\"CONSUME_PASSIVELY\",\"messageModel\":\"CLUSTERING\",\
         \"consumeFromWhere\":\"CONSUME_FROM_LAST_OFFSET\",\"unitMode\":false,\
         \"subscriptionDataSet\":[{{\"topic\":{0},\"subString\":\"*\",\"classFilterMode\":false,\
         \"tagsSet\":[],\"codeSet\":[],\"subVersion\":1,\"expressionType\":\"TAG\"}}]}}]}}",
        serde_json::to_string(name).unwrap()
    ));
    vec![
        create,
        send_request(&send_header("HostilePG", name, 0), "x"),
        batch_request(name, &Properties::new()),
        pull,
        offsets(request_code::UPDATE_CONSUMER_OFFSET),
        offsets(request_code::QUERY_CONSUMER_OFFSET),
        topic_request(request_code::GET_MAX_OFFSET),
        topic_request(request_code::DELETE_TOPIC_IN_BROKER),
        group,
        heartbeat,
    ]
}

#[test]
fn hostile_names_in_every_file_making_request_create_nothing_outside_the_store() {
    let namesrv = Namesrv::start();
    let broker = Broker::start(
        &namesrv.addr(),
        BrokerOpts {
            shards: Some(2),
            ..Default::default()
        },
    );
    let mut conn = broker.connect();
    for name in hostile_names() {
        for request in requests_naming(&name) {
            let code = request.code;
            let answer = conn.request(request);
            if matches!(
                code,
                request_code::UPDATE_AND_CREATE_TOPIC
                    | request_code::SEND_MESSAGE
                    | request_code::SEND_BATCH_MESSAGE
                    | request_code::UPDATE_AND_CREATE_SUBSCRIPTIONGROUP
            ) {
                assert_ne!(answer.code, response_code::SUCCESS, "{code} {name:?}");
            }
        }
    }
    // Non-UTF-8 names through the binary header: refused or the
    // connection closed, never stored.
    for code in [
        request_code::SEND_MESSAGE,
        request_code::UPDATE_AND_CREATE_TOPIC,
    ] {
        let mut raw = broker.connect();
        let frame = raw_binary_request(
            code as i16,
            &[
                ("topic", b"\xff../\xfe"),
                ("producerGroup", b"PG"),
                ("queueId", b"0"),
                ("readQueueNums", b"1"),
                ("writeQueueNums", b"1"),
                ("perm", b"6"),
            ],
        );
        raw.send_raw(&frame).unwrap();
        if let harness::remoting::Outcome::Response(answer) =
            raw.read_outcome(Duration::from_secs(10))
        {
            assert_ne!(answer.code, response_code::SUCCESS, "{answer:?}");
        }
    }
    // The broker still works, and its queue directories are all legal.
    let topic = unique_name("AfterHostile");
    harness::requests::create_topic(&mut conn, &topic, 1);
    let sent = conn.request(send_request(&send_header("HostilePG", &topic, 0), "ok"));
    assert_eq!(sent.code, response_code::SUCCESS, "{sent:?}");
    let store = broker.store_dir();
    for dir in store.ancestors().take(4) {
        assert!(!dir.join("hostile").exists(), "{}", dir.display());
    }
    assert!(!std::path::Path::new("/tmp/hostile_abs").exists());
    if let Ok(entries) = std::fs::read_dir(store.join("consumequeue")) {
        for entry in entries {
            let name = entry.unwrap().file_name().into_string().unwrap();
            assert!(
                ferrocket_protocol::limits::validate_topic(&name).is_ok(),
                "{name:?}"
            );
        }
    }
}
