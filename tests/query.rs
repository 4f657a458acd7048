//! Message lookups on the wire: SEARCH_OFFSET_BY_TIMESTAMP,
//! GET_EARLIEST_MSG_STORETIME, VIEW_MESSAGE_BY_ID and QUERY_MESSAGE against
//! a real broker with two shards (the index lives on one of them).

mod harness;

use ferrocket_protocol::codes::{request_code, response_code};
use ferrocket_protocol::message_id::decode_offset_msg_id;
use ferrocket_protocol::properties::{self, Properties};
use ferrocket_protocol::record::{decode_record, records};
use ferrocket_protocol::RemotingCommand;
use harness::{Broker, BrokerOpts, Namesrv, RemotingConn};

const TOPIC: &str = "QueryWire";

fn send(conn: &mut RemotingConn, body: &str, keys: &str) -> RemotingCommand {
    send_keyed(conn, body, keys, &format!("UNIQ-{body}"))
}

fn send_keyed(conn: &mut RemotingConn, body: &str, keys: &str, uniq: &str) -> RemotingCommand {
    let mut props = Properties::new();
    props.insert(properties::KEYS, keys);
    props.insert(properties::UNIQ_KEY, uniq);
    let request = RemotingCommand::request(request_code::SEND_MESSAGE)
        .with_ext("producerGroup", "query_pg")
        .with_ext("topic", TOPIC)
        .with_ext("defaultTopic", "TBW102")
        .with_ext("defaultTopicQueueNums", 4)
        .with_ext("queueId", 2)
        .with_ext("sysFlag", 0)
        .with_ext("bornTimestamp", 1_700_000_000_000i64)
        .with_ext("flag", 0)
        .with_ext("properties", props.to_encoded_string())
        .with_body(body.to_string());
    let response = conn.request(request);
    assert_eq!(response.code, response_code::SUCCESS, "{response:?}");
    response
}

fn queue_request(code: i32, timestamp: Option<i64>) -> RemotingCommand {
    let mut request = RemotingCommand::request(code)
        .with_ext("topic", TOPIC)
        .with_ext("queueId", 2);
    if let Some(ts) = timestamp {
        request = request.with_ext("timestamp", ts);
    }
    request
}

fn answer_i64(response: &RemotingCommand, field: &str) -> i64 {
    assert_eq!(response.code, response_code::SUCCESS, "{response:?}");
    response.ext_fields.get(field).unwrap().parse().unwrap()
}

#[test]
fn lookups_by_time_id_and_key() {
    let namesrv = Namesrv::start();
    let broker = Broker::start(
        &namesrv.addr(),
        BrokerOpts {
            shards: Some(2),
            ..BrokerOpts::default()
        },
    );
    let mut conn = broker.connect();
    let mut store_times = Vec::new();
    let mut ids = Vec::new();
    for (i, keys) in ["alpha common", "beta common", "gamma"].iter().enumerate() {
        let response = send(&mut conn, &format!("m{i}"), keys);
        let id = response.ext_fields.get("msgId").unwrap().to_string();
        let view = RemotingCommand::request(request_code::VIEW_MESSAGE_BY_ID).with_ext(
            "offset",
            decode_offset_msg_id(&id).unwrap().commit_log_offset,
        );
        let viewed = conn.request(view);
        assert_eq!(viewed.code, response_code::SUCCESS, "{viewed:?}");
        let record = decode_record(&viewed.body, true).unwrap();
        assert_eq!(record.body, format!("m{i}").as_bytes());
        store_times.push(record.store_timestamp_ms);
        ids.push(id);
        std::thread::sleep(std::time::Duration::from_millis(20));
    }

    let search = |conn: &mut RemotingConn, ts| {
        answer_i64(
            &conn.request(queue_request(
                request_code::SEARCH_OFFSET_BY_TIMESTAMP,
                Some(ts),
            )),
            "offset",
        )
    };
    assert_eq!(search(&mut conn, 0), 0);
    assert_eq!(search(&mut conn, store_times[1]), 1);
    assert_eq!(search(&mut conn, store_times[2]), 2);
    assert_eq!(search(&mut conn, store_times[2] + 60_000), 3);
    let earliest = conn.request(queue_request(
        request_code::GET_EARLIEST_MSG_STORETIME,
        None,
    ));
    assert_eq!(answer_i64(&earliest, "timestamp"), store_times[0]);

    let bad = RemotingCommand::request(request_code::VIEW_MESSAGE_BY_ID).with_ext("offset", 1);
    assert_eq!(conn.request(bad).code, response_code::SYSTEM_ERROR);

    let query = |conn: &mut RemotingConn, key: &str| {
        let request = RemotingCommand::request(request_code::QUERY_MESSAGE)
            .with_ext("topic", TOPIC)
            .with_ext("key", key)
            .with_ext("maxNum", 32)
            .with_ext("beginTimestamp", 0)
            .with_ext("endTimestamp", i64::MAX);
        let response = conn.request(request);
        let mut bodies: Vec<String> = records(&response.body, true)
            .map(|r| String::from_utf8_lossy(r.unwrap().body).into_owned())
            .collect();
        bodies.sort();
        (response.code, bodies)
    };
    assert_eq!(
        query(&mut conn, "common"),
        (
            response_code::SUCCESS,
            vec!["m0".to_string(), "m1".to_string()]
        )
    );
    assert_eq!(
        query(&mut conn, "UNIQ-m2"),
        (response_code::SUCCESS, vec!["m2".to_string()])
    );
    assert_eq!(
        query(&mut conn, "nothing-here"),
        (response_code::QUERY_NOT_FOUND, Vec::new())
    );
}

/// The index scanner reads many records per read: keys of records that
/// straddle its read windows, of a record larger than a window, and of
/// records on both sides of segment ends (blank fillers) are all found.
#[test]
fn keys_across_read_windows_and_segments() {
    let namesrv = Namesrv::start();
    let broker = Broker::start(
        &namesrv.addr(),
        BrokerOpts {
            shards: Some(1),
            commit_log_segment_bytes: Some(1 << 20),
            ..BrokerOpts::default()
        },
    );
    let mut conn = broker.connect();
    // 60 KiB bodies: about four per window, seventeen per segment.
    let sizes: Vec<usize> = (0..40)
        .map(|i| if i == 20 { 400 << 10 } else { 60 << 10 })
        .collect();
    for (i, size) in sizes.iter().enumerate() {
        let body = format!("m{i}:{}", "x".repeat(*size));
        send_keyed(
            &mut conn,
            &body,
            &format!("key-{i} shared"),
            &format!("UNIQ-{i}"),
        );
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    for (i, size) in sizes.iter().enumerate() {
        let request = RemotingCommand::request(request_code::QUERY_MESSAGE)
            .with_ext("topic", TOPIC)
            .with_ext("key", format!("key-{i}"))
            .with_ext("maxNum", 32)
            .with_ext("beginTimestamp", 0)
            .with_ext("endTimestamp", i64::MAX);
        let response = loop {
            let response = conn.request(request.clone());
            if response.code == response_code::SUCCESS || std::time::Instant::now() > deadline {
                break response;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        };
        assert_eq!(
            response.code,
            response_code::SUCCESS,
            "key-{i}: {response:?}"
        );
        let bodies: Vec<_> = records(&response.body, true)
            .map(|r| r.unwrap().body.to_vec())
            .collect();
        assert_eq!(bodies.len(), 1, "key-{i}");
        assert!(
            bodies[0].starts_with(format!("m{i}:").as_bytes()),
            "key-{i}"
        );
        assert_eq!(bodies[0].len(), format!("m{i}:").len() + size, "key-{i}");
    }
}
