//! Retention per topic against a real broker: the topic attributes
//! `retention.ms` and `retention.bytes` (set with `ferrocket admin topic
//! create -a` or UPDATE_AND_CREATE_TOPIC's `attributes`) move a topic's
//! queue min offsets up beside the broker-wide `fileReservedTime`; a pull
//! below min gets PULL_OFFSET_MOVED; segments no queue reads any more go;
//! a longer rule keeps segments past `fileReservedTime`; rules change and
//! go online; floors survive a restart.

mod harness;

use std::time::Duration;

use ferrocket_protocol::codes::{request_code, response_code};
use ferrocket_protocol::header::{CreateTopicRequestHeader, SendMessageRequestHeader};
use ferrocket_protocol::properties::{self, Properties};
use ferrocket_protocol::record::records;
use ferrocket_protocol::RemotingCommand;
use ferrocket_testkit::pop::pop;
use harness::requests::{pull_request, send_header, send_request};
use harness::{admin_ok, unique_name, wait_for, Broker, BrokerOpts, Namesrv, RemotingConn};

const SEGMENT_BYTES: u64 = 64 * 1024;
const BODY_BYTES: usize = 1000;

fn broker_args(file_reserved_ms: u64) -> Vec<String> {
    let every_hour: Vec<String> = (0..24).map(|h| format!("{h:02}")).collect();
    [
        format!("fileReservedTimeMs={file_reserved_ms}"),
        format!("deleteWhen={}", every_hour.join(";")),
        "cleanResourceInterval=200".to_string(),
        // Only the rules decide, however full the host's disk is.
        "diskMaxUsedSpaceRatio=100".to_string(),
        "diskSpaceCleanForciblyRatio=100".to_string(),
    ]
    .into_iter()
    .flat_map(|kv| ["--set".to_string(), kv])
    .collect()
}

fn start(namesrv: &Namesrv, file_reserved_ms: u64) -> Broker {
    Broker::start(
        &namesrv.addr(),
        BrokerOpts {
            shards: Some(2),
            commit_log_segment_bytes: Some(SEGMENT_BYTES),
            extra_args: broker_args(file_reserved_ms),
            ..BrokerOpts::default()
        },
    )
}

/// UPDATE_AND_CREATE_TOPIC with 2 queues and `attributes` (`+k=v,-k`).
fn upsert_topic(conn: &mut RemotingConn, topic: &str, attributes: &str) -> RemotingCommand {
    let mut request = RemotingCommand::request(request_code::UPDATE_AND_CREATE_TOPIC);
    request.ext_fields = CreateTopicRequestHeader {
        topic: topic.to_string(),
        default_topic: Some("TBW102".into()),
        read_queue_nums: 2,
        write_queue_nums: 2,
        perm: 6,
        topic_filter_type: Some("SINGLE_TAG".into()),
        topic_sys_flag: Some(0),
        order: false,
        attributes: Some(attributes.to_string()),
    }
    .to_ext();
    conn.request(request)
}

fn set_attributes(conn: &mut RemotingConn, topic: &str, attributes: &str) {
    let response = upsert_topic(conn, topic, attributes);
    assert_eq!(response.code, response_code::SUCCESS, "{response:?}");
}

fn send(conn: &mut RemotingConn, topic: &str, n: i64) -> i64 {
    let mut body = format!("{topic}-{n}-").into_bytes();
    body.resize(BODY_BYTES, b'r');
    let mut keys = Properties::new();
    keys.insert(properties::KEYS, format!("{topic}-{n}"));
    let header = SendMessageRequestHeader {
        properties: Some(keys.to_encoded_string()),
        ..send_header("topic_retention_pg", topic, 0)
    };
    let response = conn.request(send_request(&header, body));
    assert_eq!(response.code, response_code::SUCCESS, "{response:?}");
    field(&response, "queueOffset")
}

/// Sends messages `from..to` to queue 0 of each topic in turn (interleaved
/// in the CommitLog).
fn send_round(conn: &mut RemotingConn, topics: &[&str], from: i64, to: i64) {
    for n in from..to {
        for topic in topics {
            assert_eq!(send(conn, topic, n), n);
        }
    }
}

fn field(response: &RemotingCommand, name: &str) -> i64 {
    response
        .ext_fields
        .get(name)
        .unwrap_or_else(|| panic!("no {name} in {response:?}"))
        .parse()
        .unwrap()
}

fn offset(conn: &mut RemotingConn, topic: &str, code: i32) -> i64 {
    let response = conn.request(
        RemotingCommand::request(code)
            .with_ext("topic", topic)
            .with_ext("queueId", 0),
    );
    assert_eq!(response.code, response_code::SUCCESS, "{response:?}");
    field(&response, "offset")
}

fn min_offset(conn: &mut RemotingConn, topic: &str) -> i64 {
    offset(conn, topic, request_code::GET_MIN_OFFSET)
}

fn max_offset(conn: &mut RemotingConn, topic: &str) -> i64 {
    offset(conn, topic, request_code::GET_MAX_OFFSET)
}

fn pull(conn: &mut RemotingConn, topic: &str, at: i64) -> RemotingCommand {
    conn.request(pull_request("topic_retention_cg", topic, 0, at, 8, 0))
}

/// Waits until `topic`'s min offset satisfies `done`; returns it.
fn wait_min(conn: &mut RemotingConn, topic: &str, done: impl Fn(i64) -> bool) -> i64 {
    let mut last = -1;
    wait_for(Duration::from_secs(30), || {
        last = min_offset(conn, topic);
        done(last).then_some(last)
    })
    .unwrap_or_else(|| panic!("{topic}'s min offset never moved as expected (last {last})"))
}

/// A pull at `at` below min: PULL_OFFSET_MOVED, next begin = min.
fn assert_moved(conn: &mut RemotingConn, topic: &str, at: i64, min: i64) {
    let moved = pull(conn, topic, at);
    assert_eq!(moved.code, response_code::PULL_OFFSET_MOVED, "{moved:?}");
    assert_eq!(field(&moved, "minOffset"), min);
    assert_eq!(field(&moved, "nextBeginOffset"), min);
}

/// A pull at `at` finds the message sent as number `at`.
fn assert_readable(conn: &mut RemotingConn, topic: &str, at: i64) {
    let found = pull(conn, topic, at);
    assert_eq!(found.code, response_code::SUCCESS, "{found:?}");
    let first = records(&found.body, true).next().unwrap().unwrap();
    assert_eq!(first.queue_offset, at);
    assert!(first.body.starts_with(format!("{topic}-{at}-").as_bytes()));
}

/// QUERY_MESSAGE by key: the response code and how many records came.
fn query_key(conn: &mut RemotingConn, topic: &str, key: &str) -> (i32, usize) {
    let request = RemotingCommand::request(request_code::QUERY_MESSAGE)
        .with_ext("topic", topic)
        .with_ext("key", key)
        .with_ext("maxNum", 32)
        .with_ext("beginTimestamp", 0)
        .with_ext("endTimestamp", i64::MAX);
    let response = conn.request(request);
    (response.code, records(&response.body, true).count())
}

fn segment_names(broker: &Broker) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(broker.store_dir().join("commitlog"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

const FIRST_SEGMENT: &str = "00000000000000000000";

#[test]
fn shorter_rules_expire_by_time_and_size_change_online_and_survive_restart() {
    let namesrv = Namesrv::start();
    // Broker-wide, nothing expires during the test.
    let mut broker = start(&namesrv, 3_600_000);
    let mut conn = broker.connect();
    let short = unique_name("ShortRet");
    let sized = unique_name("SizedRet");
    let plain = unique_name("PlainRet");
    let addr = broker.addr();
    let create = ["topic", "create", "-b", &addr, "-r", "2", "-w", "2", "-t"];
    admin_ok(
        &namesrv.addr(),
        &[&create[..], &[&short, "-a", "+retention.ms=1000"]].concat(),
    );
    set_attributes(&mut conn, &sized, "+retention.bytes=12000");
    set_attributes(&mut conn, &plain, "");
    let bad = upsert_topic(&mut conn, &plain, "+retention.ms=soon");
    assert_ne!(bad.code, response_code::SUCCESS, "{bad:?}");
    let topics = [short.as_str(), sized.as_str(), plain.as_str()];
    send_round(&mut conn, &topics, 0, 60);

    // Time: every message of the short topic expires; min = max.
    wait_min(&mut conn, &short, |min| min == 60);
    assert_moved(&mut conn, &short, 0, 60);
    // Size: at most 12000 bytes (records of ~1.1 KiB) stay in the queue.
    // Search by time never answers an expired offset.
    let search = RemotingCommand::request(request_code::SEARCH_OFFSET_BY_TIMESTAMP)
        .with_ext("topic", &short)
        .with_ext("queueId", 0)
        .with_ext("timestamp", 0);
    let found = conn.request(search);
    assert_eq!(found.code, response_code::SUCCESS, "{found:?}");
    assert_eq!(field(&found, "offset"), 60);
    let sized_min = wait_min(&mut conn, &sized, |min| min > 0);
    assert!((49..=52).contains(&sized_min), "{sized_min}");
    assert_readable(&mut conn, &sized, sized_min);
    assert_moved(&mut conn, &sized, 3, sized_min);
    // A pop from min (initMode 0) gets only what the rule kept.
    let (code, popped) = pop(&mut conn, "topic_retention_pop", &sized, 32, 60_000, 1000);
    assert_eq!(code, response_code::SUCCESS);
    let offsets: Vec<i64> = popped.iter().map(|m| m.offset).collect();
    assert_eq!(offsets, (sized_min..60).collect::<Vec<_>>());
    assert_eq!(min_offset(&mut conn, &plain), 0);
    assert!(segment_names(&broker).contains(&FIRST_SEGMENT.to_string()));

    // A rule set online on the plain topic: it expires too, and now no
    // queue reads the old segments: they go (never the one being written).
    let key = format!("{plain}-5");
    assert_eq!(
        query_key(&mut conn, &plain, &key),
        (response_code::SUCCESS, 1)
    );
    set_attributes(&mut conn, &plain, "+retention.ms=1000");
    wait_min(&mut conn, &plain, |min| min == 60);
    // By key: nothing older than retention.ms, though still on disk.
    assert_eq!(
        query_key(&mut conn, &plain, &key),
        (response_code::QUERY_NOT_FOUND, 0)
    );
    wait_for(Duration::from_secs(30), || {
        (!segment_names(&broker).contains(&FIRST_SEGMENT.to_string())).then_some(())
    })
    .unwrap_or_else(|| panic!("segments stayed: {:?}", segment_names(&broker)));
    assert_readable(&mut conn, &sized, sized_min);

    // The rule removed online: the short topic's new messages stay.
    set_attributes(&mut conn, &short, "-retention.ms");
    send_round(&mut conn, &[&short], 60, 65);
    std::thread::sleep(Duration::from_millis(2500));
    assert_eq!(min_offset(&mut conn, &short), 60);
    assert_readable(&mut conn, &short, 60);

    // Floors survive a restart, and a kill -9.
    drop(conn);
    broker.restart();
    assert_floors_kept(&broker, [&short, &sized, &plain], sized_min);
    broker.crash_and_restart();
    assert_floors_kept(&broker, [&short, &sized, &plain], sized_min);
}

fn assert_floors_kept(broker: &Broker, [short, sized, plain]: [&str; 3], sized_min: i64) {
    let mut conn = broker.connect();
    assert_eq!(min_offset(&mut conn, short), 60);
    assert_moved(&mut conn, short, 0, 60);
    assert_readable(&mut conn, short, 64);
    assert_eq!(min_offset(&mut conn, sized), sized_min);
    assert_eq!(min_offset(&mut conn, plain), 60);
    assert_eq!(max_offset(&mut conn, plain), 60);
}

#[test]
fn a_longer_rule_keeps_segments_past_file_reserved_time_until_removed() {
    let namesrv = Namesrv::start();
    let broker = start(&namesrv, 1500);
    let mut conn = broker.connect();
    let long = unique_name("LongRet");
    let plain = unique_name("PlainRet");
    set_attributes(&mut conn, &long, "+retention.ms=3600000");
    set_attributes(&mut conn, &plain, "");
    let topics = [long.as_str(), plain.as_str()];
    send_round(&mut conn, &topics, 0, 80);

    // Well past fileReservedTime: the long topic's segments are all kept
    // (and with them the plain topic's messages in them).
    std::thread::sleep(Duration::from_millis(4000));
    assert!(segment_names(&broker).contains(&FIRST_SEGMENT.to_string()));
    assert_eq!(min_offset(&mut conn, &long), 0);
    assert_readable(&mut conn, &long, 0);

    // The rule removed: the broker-wide rule deletes them again.
    set_attributes(&mut conn, &long, "-retention.ms");
    wait_for(Duration::from_secs(30), || {
        (!segment_names(&broker).contains(&FIRST_SEGMENT.to_string())).then_some(())
    })
    .unwrap_or_else(|| panic!("segments stayed: {:?}", segment_names(&broker)));
    let min = wait_min(&mut conn, &long, |min| min > 0);
    assert_moved(&mut conn, &long, 0, min);
    assert!(wait_min(&mut conn, &plain, |min| min > 0) < 80);
}
