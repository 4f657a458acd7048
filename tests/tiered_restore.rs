//! A broker whose disk is lost comes back from the object store: killed
//! with -9 and its whole store directory deleted, a new broker with the
//! same settings restores the offloaded CommitLog segments named by the
//! manifest's remote copy, rebuilds ConsumeQueues and the index from them,
//! serves every offloaded message from offset 0 and by key, and goes on
//! at the right offsets.

mod harness;

use std::path::Path;
use std::time::Duration;

use ferrocket_protocol::codes::{request_code, response_code};
use ferrocket_protocol::header::SendMessageRequestHeader;
use ferrocket_protocol::message_id::decode_offset_msg_id;
use ferrocket_protocol::properties::{self, Properties};
use ferrocket_protocol::record::records;
use ferrocket_protocol::RemotingCommand;
use harness::process::free_port;
use harness::requests::{create_topic, send_header, send_request};
use harness::tier::{
    self, body, posix, pull_all, s3s_fs_binary, send_range, start_broker, start_s3,
    wait_dropped_locally, SEGMENT_BYTES, SET_PREFIX,
};
use harness::{unique_name, wait_for, Namesrv, RemotingConn};

/// Keyed messages sent before the disk is lost (about three segments).
const MESSAGES: i64 = 150;

/// Sends messages `from..to` to queue 0 with key `key{n}`; answers the
/// CommitLog offset of each.
fn send_keyed(conn: &mut RemotingConn, topic: &str, from: i64, to: i64) -> Vec<i64> {
    (from..to)
        .map(|n| {
            let mut keys = Properties::new();
            keys.insert(properties::KEYS, format!("key{n}"));
            let header = SendMessageRequestHeader {
                properties: Some(keys.to_encoded_string()),
                ..send_header("tier_pg", topic, 0)
            };
            let response = conn.request(send_request(&header, body(n)));
            assert_eq!(response.code, response_code::SUCCESS, "{response:?}");
            let queue_offset = response.ext_fields.get("queueOffset");
            assert_eq!(queue_offset, Some(n.to_string().as_str()), "{response:?}");
            let msg_id = response.ext_fields.get("msgId").unwrap();
            decode_offset_msg_id(msg_id).unwrap().commit_log_offset
        })
        .collect()
}

/// Segment starts the manifest's remote copy names.
fn remote_manifest(remote: &Path) -> Vec<i64> {
    let Ok(bytes) = std::fs::read(remote.join("manifest.json")) else {
        return Vec::new();
    };
    let manifest: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
    manifest["segments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|entry| entry["start"].as_i64().unwrap())
        .collect()
}

/// QUERY_MESSAGE by key: the queue offsets found.
fn query_key(conn: &mut RemotingConn, topic: &str, key: &str) -> Vec<i64> {
    let request = RemotingCommand::request(request_code::QUERY_MESSAGE)
        .with_ext("topic", topic)
        .with_ext("key", key)
        .with_ext("maxNum", 32)
        .with_ext("beginTimestamp", 0)
        .with_ext("endTimestamp", i64::MAX);
    let response = conn.request(request);
    if response.code != response_code::SUCCESS {
        return Vec::new();
    }
    records(&response.body, true)
        .map(|record| record.unwrap().queue_offset)
        .collect()
}

/// Sends to `filler` until the segment holding `offset` is named by the
/// manifest's remote copy (sealed, offloaded, verified).
fn seal_and_offload(conn: &mut RemotingConn, remote: &Path, filler: &str, offset: i64) {
    let segment = offset - offset % SEGMENT_BYTES as i64;
    let mut sent = 0;
    let named = wait_for(Duration::from_secs(60), || {
        if remote_manifest(remote).contains(&segment) {
            return Some(());
        }
        if sent < 200 {
            send_range(conn, filler, sent, sent + 10);
            sent += 10;
        }
        None
    });
    assert!(
        named.is_some(),
        "segment {segment} was never named remotely"
    );
}

#[test]
fn a_lost_disk_is_restored_from_a_directory() {
    let remote = tempfile::tempdir().unwrap();
    lose_the_disk_and_restore(&posix(remote.path()), &remote.path().join(SET_PREFIX));
}

#[test]
fn a_lost_disk_is_restored_from_s3() {
    let Some(binary) = s3s_fs_binary() else {
        return;
    };
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(root.path().join("restore")).unwrap();
    let port = free_port();
    let mut s3 = start_s3(&binary, root.path(), port);
    let mut backend = tier::s3(port, "restore");
    backend.push("tieredStoreFilePath=broker-a".to_string());
    let set_dir = root.path().join("restore/broker-a").join(SET_PREFIX);
    lose_the_disk_and_restore(&backend, &set_dir);
    s3.stop();
}

/// Sends keyed messages until they are offloaded, loses the disk, and
/// checks what a new broker with the same `backend` restores; `remote` is
/// the directory the manifest's remote copy lands in.
fn lose_the_disk_and_restore(backend: &[String], remote: &Path) {
    let namesrv = Namesrv::start();
    let mut broker = start_broker(&namesrv, backend, &[]);
    let mut conn = broker.connect();
    let topic = unique_name("TierRestore");
    let filler = unique_name("TierFiller");
    create_topic(&mut conn, &topic, 2);
    create_topic(&mut conn, &filler, 1);
    let offsets = send_keyed(&mut conn, &topic, 0, MESSAGES);
    let last = *offsets.last().unwrap();
    seal_and_offload(&mut conn, remote, &filler, last);
    wait_dropped_locally(&mut conn, &broker, offsets[0]);
    let remote_end = remote_manifest(remote).iter().max().unwrap() + SEGMENT_BYTES as i64;

    // The disk is lost: kill -9, the whole store directory goes.
    drop(conn);
    broker.process.kill();
    std::fs::remove_dir_all(broker.store_dir()).unwrap();
    std::fs::create_dir_all(broker.store_dir()).unwrap();
    broker.start_again();
    let mut conn = broker.connect();
    // Topic settings live in the lost config directory: created again.
    create_topic(&mut conn, &topic, 2);
    pull_all(&mut conn, &topic, MESSAGES);
    // Once the restored segments left the disk again, a key query still
    // finds an offloaded message.
    wait_dropped_locally(&mut conn, &broker, offsets[3]);
    let found = wait_for(Duration::from_secs(30), || {
        let found = query_key(&mut conn, &topic, "key3");
        (!found.is_empty()).then_some(found)
    });
    assert_eq!(found, Some(vec![3]), "key3 after the restore");
    // New sends go on after the restored messages, above the remote end.
    let next = send_keyed(&mut conn, &topic, MESSAGES, MESSAGES + 5);
    assert!(
        next[0] >= remote_end,
        "CommitLog offset {} reused below the remote end {remote_end}",
        next[0]
    );
    pull_all(&mut conn, &topic, MESSAGES + 5);
}

#[test]
fn a_rebuilt_index_covers_offloaded_segments() {
    rebuild_the_index(&[]);
}

#[test]
fn a_rebuilt_index_reads_records_across_small_chunks() {
    // Records cross the tier's 16 KiB chunks; the cache holds four.
    rebuild_the_index(&[
        "tieredStoreReadAheadBytes=16384",
        "tieredStoreReadCacheBytes=65536",
    ]);
}

/// Loses only the index of a broker whose first segments are offloaded
/// and dropped: the rebuilt index finds a key in them (`extra`: more keys).
fn rebuild_the_index(extra: &[&str]) {
    let remote = tempfile::tempdir().unwrap();
    let namesrv = Namesrv::start();
    let mut broker = start_broker(&namesrv, &posix(remote.path()), extra);
    let mut conn = broker.connect();
    let topic = unique_name("TierReindex");
    let filler = unique_name("TierFiller");
    create_topic(&mut conn, &topic, 2);
    create_topic(&mut conn, &filler, 1);
    let offsets = send_keyed(&mut conn, &topic, 0, MESSAGES);
    // More than the local budget holds.
    send_range(&mut conn, &filler, 0, 200);
    wait_dropped_locally(&mut conn, &broker, offsets[3]);
    // The index is lost; the CommitLog's first segments are only remote.
    drop(conn);
    let status = broker.process.stop();
    assert!(status.success(), "{}", broker.process.output());
    std::fs::remove_dir_all(broker.store_dir().join("index")).unwrap();
    broker.start_again();
    let mut conn = broker.connect();
    for key in [3, MESSAGES / 2, MESSAGES - 1] {
        let found = wait_for(Duration::from_secs(30), || {
            let found = query_key(&mut conn, &topic, &format!("key{key}"));
            (!found.is_empty()).then_some(found)
        });
        assert_eq!(found, Some(vec![key]), "key{key} after the index was lost");
    }
}

/// Every object under `dir` (relative name, bytes).
fn objects(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut found: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|item| {
            let path = item.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read(&path).unwrap())
        })
        .collect();
    found.sort();
    found
}

/// A lost disk started while the object store is down serves reads but
/// takes no writes (they would collide with the lost disk's offsets and
/// their uploads overwrite its objects), uploads and deletes nothing once
/// the store is back, and a restart restores it.
#[test]
fn a_lost_disk_started_while_the_store_is_down_overwrites_nothing() {
    let Some(binary) = s3s_fs_binary() else {
        return;
    };
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(root.path().join("down")).unwrap();
    let port = free_port();
    let mut s3 = start_s3(&binary, root.path(), port);
    let backend = tier::s3(port, "down");
    let set_dir = root.path().join("down").join(SET_PREFIX);
    let namesrv = Namesrv::start();
    let mut broker = start_broker(&namesrv, &backend, &[]);
    let mut conn = broker.connect();
    let topic = unique_name("TierDown");
    let filler = unique_name("TierDownFiller");
    create_topic(&mut conn, &topic, 1);
    create_topic(&mut conn, &filler, 1);
    let offsets = send_keyed(&mut conn, &topic, 0, MESSAGES);
    seal_and_offload(&mut conn, &set_dir, &filler, *offsets.last().unwrap());
    let before = objects(&set_dir.join("commitlog"));

    drop(conn);
    broker.process.kill();
    s3.stop();
    std::fs::remove_dir_all(broker.store_dir()).unwrap();
    std::fs::create_dir_all(broker.store_dir()).unwrap();
    broker.start_again();
    let mut conn = broker.connect();
    create_topic(&mut conn, &topic, 1);
    let refused = conn.request(send_request(&send_header("tier_pg", &topic, 0), body(0)));
    assert_eq!(
        refused.code,
        response_code::SERVICE_NOT_AVAILABLE,
        "{refused:?}"
    );
    let mut s3 = start_s3(&binary, root.path(), port);
    let status = wait_for(Duration::from_secs(30), || {
        let status = tier::runtime_info(&mut conn)["tieredStoreStatus"]
            .as_str()?
            .to_string();
        status
            .contains("restart the broker to restore them")
            .then_some(status)
    });
    assert!(status.is_some(), "{}", tier::runtime_info(&mut conn));
    // Several upload intervals later, the lost disk's objects are as they were.
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(objects(&set_dir.join("commitlog")), before);
    let refused = conn.request(send_request(&send_header("tier_pg", &topic, 0), body(0)));
    assert_eq!(
        refused.code,
        response_code::SERVICE_NOT_AVAILABLE,
        "{refused:?}"
    );

    // Restarted with the store up: restored, and writes go on after it.
    drop(conn);
    broker.process.kill();
    broker.start_again();
    let mut conn = broker.connect();
    create_topic(&mut conn, &topic, 1);
    pull_all(&mut conn, &topic, MESSAGES);
    send_keyed(&mut conn, &topic, MESSAGES, MESSAGES + 3);
    drop(conn);
    drop(broker);
    s3.stop();
}
