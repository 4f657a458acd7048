//! Remote retention of tiered storage against a real broker (a directory
//! as the object store): offloaded segments older than
//! `tieredStoreFileReservedTime` leave object storage, the queues' min
//! offsets move past them and a new group reads from the new min; a
//! topic's own `retention.ms` frees remote segments as well. Queries by
//! key and searches by time reach offloaded segments through the tier.

mod harness;

use std::path::Path;
use std::time::Duration;

use ferrocket_protocol::codes::{request_code, response_code};
use ferrocket_protocol::header::{CreateTopicRequestHeader, SendMessageRequestHeader};
use ferrocket_protocol::properties::{self, Properties};
use ferrocket_protocol::record::records;
use ferrocket_protocol::RemotingCommand;
use harness::process::free_port;
use harness::requests::{pull_request, send_header, send_request};
use harness::tier::{
    self, body, first_remote, info_number, posix, s3s_fs_binary, send_range, start_broker,
    start_s3, FIRST_OBJECT, SEGMENT_BYTES, SET_PREFIX,
};
use harness::{unique_name, wait_for, Broker, Namesrv, RemotingConn};

const MESSAGES: i64 = 400;

fn create_topic(conn: &mut RemotingConn, topic: &str, attributes: Option<&str>) {
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
        attributes: attributes.map(str::to_string),
    }
    .to_ext();
    let response = conn.request(request);
    assert_eq!(response.code, response_code::SUCCESS, "{response:?}");
}

fn field(response: &RemotingCommand, name: &str) -> i64 {
    response
        .ext_fields
        .get(name)
        .unwrap_or_else(|| panic!("no {name} in {response:?}"))
        .parse()
        .unwrap()
}

fn min_offset(conn: &mut RemotingConn, topic: &str) -> i64 {
    let response = conn.request(
        RemotingCommand::request(request_code::GET_MIN_OFFSET)
            .with_ext("topic", topic)
            .with_ext("queueId", 0),
    );
    assert_eq!(response.code, response_code::SUCCESS, "{response:?}");
    field(&response, "offset")
}

/// Waits until the first segment's object is gone and the queue's min
/// moved up; answers the min.
fn wait_remote_deleted(conn: &mut RemotingConn, remote: &Path, topic: &str) -> i64 {
    let min = wait_for(Duration::from_secs(60), || {
        let min = min_offset(conn, topic);
        (first_remote(remote).is_none() && min > 0).then_some(min)
    });
    min.unwrap_or_else(|| {
        panic!(
            "remote retention did not delete {:?} (min offset {})",
            first_remote(remote),
            min_offset(conn, topic)
        )
    })
}

/// A new group pulls queue 0 from 0: sent to the new min, then reads every
/// message from there to the end, with its body.
fn new_group_reads_from(conn: &mut RemotingConn, topic: &str, min: i64, count: i64) {
    let group = unique_name("tier_ret_cg");
    if min > 0 {
        let moved = conn.request(pull_request(&group, topic, 0, 0, 32, 0));
        assert_eq!(moved.code, response_code::PULL_OFFSET_MOVED, "{moved:?}");
        assert_eq!(field(&moved, "nextBeginOffset"), min);
    }
    let mut offset = min;
    let read = wait_for(Duration::from_secs(60), || {
        let answer = conn.request(pull_request(&group, topic, 0, offset, 32, 0));
        if answer.code == response_code::SUCCESS {
            for record in records(&answer.body, true) {
                let record = record.unwrap();
                assert_eq!(record.queue_offset, offset);
                assert_eq!(record.body, body(offset), "message {offset}");
                offset += 1;
            }
        }
        (offset >= count).then_some(())
    });
    assert!(read.is_some(), "read only up to {offset} of {count}");
}

#[test]
fn offloaded_segments_leave_object_storage_after_the_reserved_time() {
    let remote = tempfile::tempdir().unwrap();
    deletes_after_the_reserved_time(&posix(remote.path()), remote.path());
}

#[test]
fn offloaded_segments_leave_an_s3_bucket_after_the_reserved_time() {
    let Some(binary) = s3s_fs_binary() else {
        return;
    };
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(root.path().join("ret-bucket")).unwrap();
    let port = free_port();
    let mut s3 = start_s3(&binary, root.path(), port);
    let mut backend = tier::s3(port, "ret-bucket");
    backend.push("tieredStoreFilePath=broker-r".to_string());
    deletes_after_the_reserved_time(&backend, &root.path().join("ret-bucket/broker-r"));
    s3.kill();
}

/// The segments' objects lie under `objects` on the local disk.
fn deletes_after_the_reserved_time(backend: &[String], objects: &Path) {
    let namesrv = Namesrv::start();
    let mut broker = start_broker(&namesrv, backend, &["tieredStoreFileReservedTimeMs=3000"]);
    let mut conn = broker.connect();
    let topic = unique_name("TierRet");
    create_topic(&mut conn, &topic, None);
    send_range(&mut conn, &topic, 0, MESSAGES);
    wait_remote_deleted(&mut conn, objects, &topic);
    assert!(info_number(&mut conn, "tieredRemoteDeletedSegments") >= 1);
    // Every segment only the object store held goes: the CommitLog's start
    // is the local one, and the queue's min settles above it.
    let local_start = |broker: &Broker| -> u64 {
        let names = std::fs::read_dir(broker.store_dir().join("commitlog")).unwrap();
        let starts = names.filter_map(|e| e.unwrap().file_name().to_str()?.parse().ok());
        starts.min().unwrap()
    };
    let settled = wait_for(Duration::from_secs(60), || {
        (info_number(&mut conn, "tieredMinOffset") == local_start(&broker)).then_some(())
    });
    assert!(settled.is_some(), "remote-only segments stayed");
    assert!(local_start(&broker) >= SEGMENT_BYTES);
    let min = wait_for(Duration::from_secs(30), || {
        let before = min_offset(&mut conn, &topic);
        std::thread::sleep(Duration::from_millis(500));
        (min_offset(&mut conn, &topic) == before).then_some(before)
    })
    .unwrap();
    new_group_reads_from(&mut conn, &topic, min, MESSAGES);
    // The manifest no longer names what is gone: after a kill -9 and a
    // restart the min stays where it was and the remaining messages read as
    // before. Objects left by a crash between the manifest's update and
    // the delete (made here by hand: one of another uploader, a former or
    // deposed master of the set, and one of the layout before uploader
    // ids) are deleted after the restart.
    drop(conn);
    let commitlog = objects.join(SET_PREFIX).join("commitlog");
    let leftovers = [
        commitlog.join("00000000000000000000.00000000deadbeef"),
        commitlog.join("00000000000000000000"),
    ];
    for leftover in &leftovers {
        std::fs::write(leftover, vec![0u8; SEGMENT_BYTES as usize]).unwrap();
    }
    broker.crash_and_restart();
    let mut conn = broker.connect();
    let swept = wait_for(Duration::from_secs(30), || {
        leftovers.iter().all(|o| !o.exists()).then_some(())
    });
    assert!(swept.is_some(), "a leftover object was not deleted");
    let after = wait_for(Duration::from_secs(30), || {
        let now = min_offset(&mut conn, &topic);
        (now >= min).then_some(now)
    })
    .expect("the min offset went back after a restart");
    new_group_reads_from(&mut conn, &topic, after, MESSAGES);
}

#[test]
fn a_longer_retention_ms_keeps_remote_segments() {
    let remote = tempfile::tempdir().unwrap();
    let namesrv = Namesrv::start();
    let broker = start_broker(
        &namesrv,
        &posix(remote.path()),
        &["tieredStoreFileReservedTimeMs=2000"],
    );
    let mut conn = broker.connect();
    // One hour: longer than the remote reserved time (not than the
    // broker's fileReservedTime, 72 hours).
    let long = unique_name("TierLong");
    create_topic(&mut conn, &long, Some("+retention.ms=3600000"));
    send_range(&mut conn, &long, 0, MESSAGES);
    let first_local = broker.store_dir().join(FIRST_OBJECT);
    let dropped = wait_for(Duration::from_secs(60), || {
        (!first_local.exists()).then_some(())
    });
    assert!(
        dropped.is_some(),
        "the first segment was not offloaded and dropped"
    );
    // Well past the remote reserved time, the objects stay.
    std::thread::sleep(Duration::from_secs(5));
    assert!(first_remote(remote.path()).is_some());
    assert_eq!(info_number(&mut conn, "tieredRemoteDeletedSegments"), 0);
    new_group_reads_from(&mut conn, &long, 0, MESSAGES);
}

#[test]
fn retention_per_topic_frees_remote_segments() {
    let remote = tempfile::tempdir().unwrap();
    let namesrv = Namesrv::start();
    let broker = start_broker(&namesrv, &posix(remote.path()), &[]);
    let mut conn = broker.connect();
    let short = unique_name("TierShort");
    create_topic(&mut conn, &short, Some("+retention.ms=1000"));
    send_range(&mut conn, &short, 0, MESSAGES);
    let plain = unique_name("TierPlain");
    create_topic(&mut conn, &plain, None);
    send_range(&mut conn, &plain, 0, 10);
    // The short topic's messages expire after 1 s (the remote reserved
    // time is the default 72 hours): no queue reads their segments any
    // more, so their objects go.
    let min = wait_remote_deleted(&mut conn, remote.path(), &short);
    assert!(min > 0);
    assert!(info_number(&mut conn, "tieredRemoteDeletedSegments") >= 1);
    new_group_reads_from(&mut conn, &plain, 0, 10);
}

fn send_with_keys(conn: &mut RemotingConn, topic: &str, count: i64) {
    for n in 0..count {
        let mut keys = Properties::new();
        keys.insert(properties::KEYS, format!("key{n}"));
        let header = SendMessageRequestHeader {
            properties: Some(keys.to_encoded_string()),
            ..send_header("tier_pg", topic, 0)
        };
        let response = conn.request(send_request(&header, body(n)));
        assert_eq!(response.code, response_code::SUCCESS, "{response:?}");
    }
}

/// QUERY_MESSAGE by key: `(queue offset, store time)` of each record.
fn query_key(conn: &mut RemotingConn, topic: &str, key: &str) -> Vec<(i64, i64)> {
    let request = RemotingCommand::request(request_code::QUERY_MESSAGE)
        .with_ext("topic", topic)
        .with_ext("key", key)
        .with_ext("maxNum", 32)
        .with_ext("beginTimestamp", 0)
        .with_ext("endTimestamp", i64::MAX);
    let response = conn.request(request);
    assert_eq!(response.code, response_code::SUCCESS, "{response:?}");
    records(&response.body, true)
        .map(|record| {
            let record = record.unwrap();
            assert_eq!(record.body, body(record.queue_offset));
            (record.queue_offset, record.store_timestamp_ms)
        })
        .collect()
}

#[test]
fn key_queries_and_time_searches_read_offloaded_segments() {
    let remote = tempfile::tempdir().unwrap();
    let namesrv = Namesrv::start();
    let broker = start_broker(&namesrv, &posix(remote.path()), &[]);
    let mut conn = broker.connect();
    let topic = unique_name("TierQuery");
    create_topic(&mut conn, &topic, None);
    send_with_keys(&mut conn, &topic, MESSAGES);
    // The first segment leaves the local disk (its object stays).
    let first_local = broker.store_dir().join(FIRST_OBJECT);
    let dropped = wait_for(Duration::from_secs(60), || {
        (!first_local.exists() && first_remote(remote.path()).is_some()).then_some(())
    });
    assert!(
        dropped.is_some(),
        "the first segment was not offloaded and dropped"
    );
    let reads = info_number(&mut conn, "tieredRemoteReads");
    let found = query_key(&mut conn, &topic, "key10");
    assert_eq!(found.len(), 1, "{found:?}");
    let (offset, stored_ms) = found[0];
    assert_eq!(offset, 10);
    assert!(info_number(&mut conn, "tieredRemoteReads") > reads);
    // The first message stored at or after message 10's time is at most 10
    // (messages stored in the same millisecond come first).
    let search = conn.request(
        RemotingCommand::request(request_code::SEARCH_OFFSET_BY_TIMESTAMP)
            .with_ext("topic", topic.as_str())
            .with_ext("queueId", 0)
            .with_ext("timestamp", stored_ms),
    );
    assert_eq!(search.code, response_code::SUCCESS, "{search:?}");
    let at = field(&search, "offset");
    assert!((0..=10).contains(&at), "search by time answered {at}");
}
