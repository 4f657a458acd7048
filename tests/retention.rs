//! Retention and topic deletion against a real broker: with small CommitLog
//! segments and `fileReservedTimeMs` (Ferrocket's ms form of
//! `fileReservedTime`), old segments expire in seconds; GET_MIN_OFFSET moves
//! up and a pull below it gets PULL_OFFSET_MOVED with nextBeginOffset = min,
//! as in RocketMQ. DELETE_TOPIC_IN_BROKER drops the ConsumeQueues, so a
//! re-created topic starts at offset 0.

mod harness;

use std::time::Duration;

use ferrocket_protocol::codes::{request_code, response_code};
use ferrocket_protocol::record::records;
use ferrocket_protocol::RemotingCommand;
use harness::requests::{send_header, send_request};
use harness::{unique_name, wait_for, Broker, BrokerOpts, Namesrv, RemotingConn};

const SEGMENT_BYTES: u64 = 64 * 1024;
const MESSAGES: i64 = 300;
const BODY_BYTES: usize = 1000;

fn retention_args() -> Vec<String> {
    let every_hour: Vec<String> = (0..24).map(|h| format!("{h:02}")).collect();
    [
        "fileReservedTimeMs=1500".to_string(),
        format!("deleteWhen={}", every_hour.join(";")),
        "cleanResourceInterval=200".to_string(),
        // Only age decides, however full the host's disk is.
        "diskMaxUsedSpaceRatio=100".to_string(),
        "diskSpaceCleanForciblyRatio=100".to_string(),
    ]
    .into_iter()
    .flat_map(|kv| ["--set".to_string(), kv])
    .collect()
}

fn create_topic(conn: &mut RemotingConn, topic: &str) {
    harness::requests::create_topic(conn, topic, 2);
}

fn send(conn: &mut RemotingConn, topic: &str, body: Vec<u8>) -> i64 {
    let header = send_header("retention_pg", topic, 0);
    let response = conn.request(send_request(&header, body));
    assert_eq!(response.code, response_code::SUCCESS, "{response:?}");
    field(&response, "queueOffset")
}

fn field(response: &RemotingCommand, name: &str) -> i64 {
    response
        .ext_fields
        .get(name)
        .unwrap_or_else(|| panic!("no {name} in {response:?}"))
        .parse()
        .unwrap()
}

fn queue_offset(conn: &mut RemotingConn, topic: &str, code: i32) -> i64 {
    let response = conn.request(
        RemotingCommand::request(code)
            .with_ext("topic", topic)
            .with_ext("queueId", 0),
    );
    assert_eq!(response.code, response_code::SUCCESS, "{response:?}");
    field(&response, "offset")
}

fn pull(conn: &mut RemotingConn, topic: &str, offset: i64) -> RemotingCommand {
    conn.request(
        RemotingCommand::request(request_code::PULL_MESSAGE)
            .with_ext("consumerGroup", "retention_cg")
            .with_ext("topic", topic)
            .with_ext("queueId", 0)
            .with_ext("queueOffset", offset)
            .with_ext("maxMsgNums", 8)
            .with_ext("sysFlag", 4)
            .with_ext("commitOffset", 0)
            .with_ext("suspendTimeoutMillis", 0)
            .with_ext("subscription", "*")
            .with_ext("subVersion", 0)
            .with_ext("expressionType", "TAG"),
    )
}

#[test]
fn expired_segments_move_min_offset_and_deleted_topic_restarts() {
    let namesrv = Namesrv::start();
    let mut broker = Broker::start(
        &namesrv.addr(),
        BrokerOpts {
            shards: Some(2),
            commit_log_segment_bytes: Some(SEGMENT_BYTES),
            extra_args: retention_args(),
            ..BrokerOpts::default()
        },
    );
    let mut conn = broker.connect();
    let topic = unique_name("Retention");
    create_topic(&mut conn, &topic);
    for n in 0..MESSAGES {
        let mut body = format!("m{n}-").into_bytes();
        body.resize(BODY_BYTES, b'r');
        assert_eq!(send(&mut conn, &topic, body), n);
    }
    assert_eq!(
        queue_offset(&mut conn, &topic, request_code::GET_MAX_OFFSET),
        MESSAGES
    );

    // Segments older than 1.5 s go, all but the active one (and the next,
    // when the appender created it ahead: how full the active one is
    // decides, so the properties a message carries do); the
    // ConsumeQueue's min follows on its owner's next pass.
    let commitlog = broker.store_dir().join("commitlog");
    wait_for(Duration::from_secs(60), || {
        (std::fs::read_dir(&commitlog).unwrap().count() <= 2).then_some(())
    })
    .unwrap_or_else(|| {
        let names: Vec<String> = std::fs::read_dir(&commitlog)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        panic!("old CommitLog segments were never deleted: {names:?}")
    });
    // A pull from min finds min's message once the owner shard's pass has
    // run (until then a pull skips the removed entries, as Java does).
    let min = wait_for(Duration::from_secs(30), || {
        let min = queue_offset(&mut conn, &topic, request_code::GET_MIN_OFFSET);
        let found = pull(&mut conn, &topic, min);
        if min == 0 || found.code != response_code::SUCCESS {
            return None;
        }
        let first = records(&found.body, true).next()?.ok()?;
        (first.queue_offset == min && first.body.starts_with(format!("m{min}-").as_bytes()))
            .then_some(min)
    })
    .expect("GET_MIN_OFFSET never moved up to the oldest readable message");
    assert!(min < MESSAGES, "the active segment's messages stay: {min}");

    // Below min: PULL_OFFSET_MOVED, next begin offset = min (Java's
    // OFFSET_TOO_SMALL answer).
    let moved = pull(&mut conn, &topic, 0);
    assert_eq!(moved.code, response_code::PULL_OFFSET_MOVED, "{moved:?}");
    assert_eq!(field(&moved, "minOffset"), min);
    assert_eq!(field(&moved, "nextBeginOffset"), min);
    assert_eq!(field(&moved, "maxOffset"), MESSAGES);

    // Delete the topic: its ConsumeQueues go; re-created, it starts at 0.
    let deleted = conn.request(
        RemotingCommand::request(request_code::DELETE_TOPIC_IN_BROKER).with_ext("topic", &topic),
    );
    assert_eq!(deleted.code, response_code::SUCCESS, "{deleted:?}");
    assert!(!broker
        .store_dir()
        .join("consumequeue")
        .join(&topic)
        .join("0")
        .exists());
    create_topic(&mut conn, &topic);
    assert_eq!(
        queue_offset(&mut conn, &topic, request_code::GET_MAX_OFFSET),
        0
    );
    assert_eq!(
        queue_offset(&mut conn, &topic, request_code::GET_MIN_OFFSET),
        0
    );
    assert_eq!(send(&mut conn, &topic, b"reborn".to_vec()), 0);
    wait_for(Duration::from_secs(20), || {
        (queue_offset(&mut conn, &topic, request_code::GET_MAX_OFFSET) == 1).then_some(())
    })
    .expect("the re-created topic's message never reached its queue");
    let reborn = pull(&mut conn, &topic, 0);
    assert_eq!(reborn.code, response_code::SUCCESS, "{reborn:?}");
    let record = records(&reborn.body, true).next().unwrap().unwrap();
    assert_eq!(record.body, b"reborn");
    assert_eq!(record.queue_offset, 0);

    // A restart keeps it that way: recovery does not bring the old records
    // back into the re-created topic's queue.
    drop(conn);
    broker.restart();
    let mut conn = broker.connect();
    assert_eq!(
        queue_offset(&mut conn, &topic, request_code::GET_MAX_OFFSET),
        1
    );
    assert_eq!(
        queue_offset(&mut conn, &topic, request_code::GET_MIN_OFFSET),
        0
    );
}
