//! Compaction topics (`cleanup.policy=COMPACTION`) against a real broker:
//! after several versions of several keys, a new consumer group pulling
//! from offset 0 gets the newest message of each key, with its original
//! queue offset, then what came after; the compacted view outlives the
//! CommitLog segments it came from (retention in seconds here) and a
//! restart, and goes with the topic. Retention never takes a segment whose
//! messages are not compacted yet. An unknown policy is refused, as Java
//! refuses it.

mod harness;

use std::collections::BTreeMap;
use std::time::Duration;

use ferrocket_protocol::codes::{request_code, response_code};
use ferrocket_protocol::record::records;
use ferrocket_protocol::RemotingCommand;
use harness::requests::{create_topic_request, pull_request, send_header, send_request};
use harness::{unique_name, wait_for, Broker, BrokerOpts, Namesrv, RemotingConn};

const KEYS: i64 = 5;
const VERSIONS: i64 = 40;
const BODY_BYTES: usize = 1000;

fn args() -> Vec<String> {
    args_compacting_every(300)
}

fn args_compacting_every(ms: u64) -> Vec<String> {
    let every_hour: Vec<String> = (0..24).map(|h| format!("{h:02}")).collect();
    [
        format!("compactionScheduleInternal={ms}"),
        "fileReservedTimeMs=1500".to_string(),
        format!("deleteWhen={}", every_hour.join(";")),
        "cleanResourceInterval=200".to_string(),
        "diskMaxUsedSpaceRatio=100".to_string(),
        "diskSpaceCleanForciblyRatio=100".to_string(),
    ]
    .into_iter()
    .flat_map(|kv| ["--set".to_string(), kv])
    .collect()
}

fn create(conn: &mut RemotingConn, topic: &str, attributes: &str) -> RemotingCommand {
    conn.request(create_topic_request(topic, 1).with_ext("attributes", attributes))
}

/// Sends `key`'s version `version` to queue 0; its queue offset.
fn send(conn: &mut RemotingConn, topic: &str, key: i64, version: &str) -> i64 {
    let mut header = send_header("compaction_pg", topic, 0);
    header.properties = Some(format!("KEYS\u{1}k{key}\u{2}"));
    let mut body = format!("k{key}={version};").into_bytes();
    body.resize(BODY_BYTES, b'.');
    let response = conn.request(send_request(&header, body));
    assert_eq!(response.code, response_code::SUCCESS, "{response:?}");
    field(&response, "queueOffset")
}

fn field(response: &RemotingCommand, name: &str) -> i64 {
    let value = response.ext_fields.get(name);
    value
        .unwrap_or_else(|| panic!("no {name} in {response:?}"))
        .parse()
        .unwrap()
}

/// Everything a new group pulls from offset 0: (queue offset, body head),
/// and the minOffset the first answer gave.
fn read_all(conn: &mut RemotingConn, topic: &str) -> (Vec<(i64, String)>, i64) {
    let group = unique_name("compaction_cg");
    let (mut offset, mut seen, mut min) = (0, Vec::new(), -1);
    for _ in 0..1000 {
        let response = conn.request(pull_request(&group, topic, 0, offset, 4, 0));
        let next = field(&response, "nextBeginOffset");
        if min < 0 {
            min = field(&response, "minOffset");
        }
        match response.code {
            response_code::SUCCESS => {
                for record in records(&response.body, true) {
                    let record = record.unwrap();
                    let body = String::from_utf8_lossy(record.body);
                    let head = body.split(';').next().unwrap().to_string();
                    seen.push((record.queue_offset, head));
                }
            }
            response_code::PULL_NOT_FOUND => return (seen, min),
            response_code::PULL_RETRY_IMMEDIATELY => {}
            code => panic!("pull from {offset} answered {code}: {response:?}"),
        }
        assert!(next > offset, "a pull from {offset} moved to {next}");
        offset = next;
    }
    panic!("the queue never ended")
}

/// The newest version per key as sent: (offset, `k=version`).
fn newest(sent: &[(i64, i64, String)]) -> Vec<(i64, String)> {
    let mut last = BTreeMap::new();
    for (offset, key, version) in sent {
        last.insert(*key, (*offset, format!("k{key}={version}")));
    }
    let mut kept: Vec<(i64, String)> = last.into_values().collect();
    kept.sort();
    kept
}

#[test]
fn a_new_group_reads_the_newest_message_per_key() {
    let namesrv = Namesrv::start();
    let mut broker = Broker::start(
        &namesrv.addr(),
        BrokerOpts {
            shards: Some(2),
            commit_log_segment_bytes: Some(64 * 1024),
            extra_args: args(),
            ..BrokerOpts::default()
        },
    );
    let mut conn = broker.connect();
    let refused = create(&mut conn, &unique_name("Bad"), "+cleanup.policy=COMPACT");
    assert_ne!(refused.code, response_code::SUCCESS, "{refused:?}");
    let topic = unique_name("Compacted");
    let created = create(&mut conn, &topic, "+cleanup.policy=COMPACTION");
    assert_eq!(created.code, response_code::SUCCESS, "{created:?}");
    let changed = create(&mut conn, &topic, "+cleanup.policy=DELETE");
    assert_ne!(
        changed.code,
        response_code::SUCCESS,
        "unchangeable: {changed:?}"
    );

    let mut sent = Vec::new();
    for version in 0..VERSIONS {
        for key in 0..KEYS {
            let version = format!("v{version}");
            sent.push((send(&mut conn, &topic, key, &version), key, version));
        }
    }
    let expected = newest(&sent);
    let compacted = wait_for(Duration::from_secs(30), || {
        let (seen, min) = read_all(&mut conn, &topic);
        (seen == expected).then_some(min)
    })
    .unwrap_or_else(|| panic!("never compacted: {:?}", read_all(&mut conn, &topic)));
    assert_eq!(
        compacted, expected[0].0,
        "minOffset: the first message kept"
    );

    // Newer messages read after the compacted ones, and fold in later.
    let late = send(&mut conn, &topic, 0, "late");
    sent.push((late, 0, "late".into()));
    let (seen, _) = read_all(&mut conn, &topic);
    assert_eq!(seen.last(), Some(&(late, "k0=late".to_string())));
    let expected = newest(&sent);
    wait_for(Duration::from_secs(30), || {
        (read_all(&mut conn, &topic).0 == expected).then_some(())
    })
    .expect("the late message never replaced k0's older one");

    // The CommitLog segments those came from expire; the view stays.
    let commitlog = broker.store_dir().join("commitlog");
    wait_for(Duration::from_secs(60), || {
        (std::fs::read_dir(&commitlog).unwrap().count() <= 2).then_some(())
    })
    .expect("old CommitLog segments were never deleted");
    assert_eq!(read_all(&mut conn, &topic).0, expected, "after retention");

    drop(conn);
    broker.restart();
    let mut conn = broker.connect();
    assert_eq!(read_all(&mut conn, &topic).0, expected, "after a restart");

    // A deleted and re-created topic starts afresh: no compacted messages.
    let deleted = conn.request(
        RemotingCommand::request(request_code::DELETE_TOPIC_IN_BROKER).with_ext("topic", &topic),
    );
    assert_eq!(deleted.code, response_code::SUCCESS, "{deleted:?}");
    assert!(!broker.store_dir().join("compaction").join(&topic).exists());
    let created = create(&mut conn, &topic, "+cleanup.policy=COMPACTION");
    assert_eq!(created.code, response_code::SUCCESS, "{created:?}");
    assert_eq!(send(&mut conn, &topic, 3, "reborn"), 0);
    let reborn = vec![(0, "k3=reborn".to_string())];
    wait_for(Duration::from_secs(20), || {
        (read_all(&mut conn, &topic).0 == reborn).then_some(())
    })
    .expect("the re-created topic reads its own message only");
}

/// Segments expire (1.5 s) long before the first compaction round (6 s):
/// the ones holding messages not compacted yet stay until it has run, so
/// the only version of each early key survives.
#[test]
fn retention_waits_for_compaction() {
    let namesrv = Namesrv::start();
    let broker = Broker::start(
        &namesrv.addr(),
        BrokerOpts {
            commit_log_segment_bytes: Some(64 * 1024),
            extra_args: args_compacting_every(6_000),
            ..BrokerOpts::default()
        },
    );
    let mut conn = broker.connect();
    let topic = unique_name("CompactLate");
    let created = create(&mut conn, &topic, "+cleanup.policy=COMPACTION");
    assert_eq!(created.code, response_code::SUCCESS, "{created:?}");
    let mut sent = Vec::new();
    for key in 0..KEYS {
        sent.push((
            send(&mut conn, &topic, key, "only"),
            key,
            "only".to_string(),
        ));
    }
    for version in 0..VERSIONS * 8 {
        let version = format!("v{version}");
        sent.push((send(&mut conn, &topic, KEYS, &version), KEYS, version));
    }
    let expected = newest(&sent);
    wait_for(Duration::from_secs(30), || {
        (read_all(&mut conn, &topic).0 == expected).then_some(())
    })
    .unwrap_or_else(|| panic!("compacted view: {:?}", read_all(&mut conn, &topic)));
}
