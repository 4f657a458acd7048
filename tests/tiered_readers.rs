//! The broker's own readers of stored messages read through tiered
//! storage: a message whose CommitLog segment was offloaded and dropped
//! from the local disk before the broker needed it again is still
//! delivered, once: a timer and a delay-level message coming due, a
//! transaction half message committed by END_TRANSACTION and by a
//! check-back, a popped message never acked (revived), and a compaction
//! topic's records (every key's newest value is kept). A directory is the
//! object store; segments are 64 KiB and two sealed ones stay local. While
//! the store fails to give a segment, the messages in it wait.

mod harness;

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use ferrocket_protocol::codes::{request_code, response_code};
use ferrocket_protocol::header::SendMessageRequestHeader;
use ferrocket_protocol::message_id::decode_offset_msg_id;
use ferrocket_protocol::properties::{self, Properties};
use ferrocket_protocol::record::{records, sys_flag};
use ferrocket_protocol::RemotingCommand;
use harness::remoting::Outcome;
use harness::requests::{create_topic, pull_request, send_header, send_request};
use harness::tier::{self, posix, send_range, wait_dropped_locally};
use harness::{unique_name, wait_for, Broker, Namesrv, RemotingConn};

/// Messages of about 1 KiB that fill five 64 KiB segments: the first
/// segment is offloaded and dropped under the local budget.
const FILLER: i64 = 320;
/// How long the messages under test wait: longer than filling, offloading
/// and dropping their segment takes.
const DUE_IN_MS: i64 = 15_000;
const TXN_GROUP: &str = "tier_txn_pg";

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

/// Sends `body` to queue 0 of `topic` with `props`; answers the response.
fn send_with(
    conn: &mut RemotingConn,
    topic: &str,
    body: &str,
    flag: i32,
    props: &[(&str, String)],
) -> RemotingCommand {
    let mut encoded = Properties::new();
    for (name, value) in props {
        encoded.insert(*name, value.as_str());
    }
    encoded.insert(properties::UNIQ_KEY, format!("UNIQ-{body}"));
    let header = SendMessageRequestHeader {
        sys_flag: Some(flag),
        properties: Some(encoded.to_encoded_string()),
        ..send_header(TXN_GROUP, topic, 0)
    };
    let response = conn.request(send_request(&header, body.to_string()));
    assert_eq!(response.code, response_code::SUCCESS, "{response:?}");
    response
}

/// The CommitLog offset of a sent message (from its offset message id).
fn commit_log_offset(response: &RemotingCommand) -> i64 {
    let msg_id = response.ext_fields.get("msgId").unwrap();
    decode_offset_msg_id(msg_id).unwrap().commit_log_offset
}

/// Fills the CommitLog past the message at `physical_offset` and waits
/// until its segment is offloaded and gone from the local disk.
fn drop_segment_of(conn: &mut RemotingConn, broker: &Broker, physical_offset: i64) {
    let filler = unique_name("TierFill");
    create_topic(conn, &filler, 1);
    send_range(conn, &filler, 0, FILLER);
    wait_dropped_locally(conn, broker, physical_offset);
}

/// Bodies in queue 0 of `topic` (from offset 0), with how often each is there.
fn visible(conn: &mut RemotingConn, topic: &str) -> BTreeMap<String, usize> {
    let group = unique_name("tier_reader_cg");
    let mut seen = BTreeMap::new();
    let mut offset = 0;
    loop {
        let answer = conn.request(pull_request(&group, topic, 0, offset, 32, 0));
        if answer.code != response_code::SUCCESS {
            return seen;
        }
        for record in records(&answer.body, true) {
            let record = record.unwrap();
            offset = record.queue_offset + 1;
            *seen
                .entry(String::from_utf8_lossy(record.body).into_owned())
                .or_default() += 1;
        }
    }
}

/// Waits until every body of `bodies` is in `topic`, then a little longer,
/// and asserts each is there exactly once.
fn delivered_once(conn: &mut RemotingConn, topic: &str, bodies: &[&str], within: Duration) {
    let all = wait_for(within, || {
        let seen = visible(conn, topic);
        bodies
            .iter()
            .all(|body| seen.contains_key(*body))
            .then_some(())
    });
    assert!(all.is_some(), "not delivered: {:?}", visible(conn, topic));
    std::thread::sleep(Duration::from_secs(2));
    let seen = visible(conn, topic);
    for body in bodies {
        assert_eq!(seen.get(*body), Some(&1), "{body}: {seen:?}");
    }
}

fn start_broker(namesrv: &Namesrv, remote: &std::path::Path, extra: &[&str]) -> Broker {
    tier::start_broker(namesrv, &posix(remote), extra)
}

#[test]
fn a_timer_message_due_after_its_segment_left_is_delivered() {
    let remote = tempfile::tempdir().unwrap();
    let namesrv = Namesrv::start();
    let broker = start_broker(&namesrv, remote.path(), &[]);
    let mut conn = broker.connect();
    let topic = unique_name("TierTimer");
    create_topic(&mut conn, &topic, 1);
    let due_at = now_ms() + DUE_IN_MS;
    let timer = send_with(
        &mut conn,
        &topic,
        "timer",
        0,
        &[(properties::TIMER_DELIVER_MS, due_at.to_string())],
    );
    let offset = commit_log_offset(&timer);
    drop_segment_of(&mut conn, &broker, offset);
    assert!(now_ms() < due_at, "the segment left only after it was due");
    assert!(visible(&mut conn, &topic).is_empty(), "delivered early");
    // The object store fails to give the segment when it comes due (nothing
    // read it since it left the local disk): it waits, and is delivered once
    // the store answers again.
    let segment = offset - offset % tier::SEGMENT_BYTES as i64;
    let object = tier::segment_objects(&remote.path().join(tier::SET_PREFIX), segment)
        .pop()
        .expect("the segment's object");
    let away = remote.path().join("away");
    std::fs::rename(&object, &away).unwrap();
    while now_ms() < due_at + 3_000 {
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(
        visible(&mut conn, &topic).is_empty(),
        "delivered without the store"
    );
    std::fs::rename(&away, &object).unwrap();
    delivered_once(&mut conn, &topic, &["timer"], Duration::from_secs(60));
}

#[test]
fn a_delay_level_message_due_after_its_segment_left_is_delivered() {
    let remote = tempfile::tempdir().unwrap();
    let namesrv = Namesrv::start();
    // Level 3 waits DUE_IN_MS.
    let levels = format!("messageDelayLevel=1s 5s {}s 30s", DUE_IN_MS / 1000);
    let broker = start_broker(&namesrv, remote.path(), &[&levels]);
    let mut conn = broker.connect();
    let topic = unique_name("TierDelay");
    create_topic(&mut conn, &topic, 1);
    let due_at = now_ms() + DUE_IN_MS;
    let delayed = send_with(
        &mut conn,
        &topic,
        "delay",
        0,
        &[(properties::DELAY, "3".to_string())],
    );
    drop_segment_of(&mut conn, &broker, commit_log_offset(&delayed));
    assert!(now_ms() < due_at, "the segment left only after it was due");
    assert!(visible(&mut conn, &topic).is_empty(), "delivered early");
    delivered_once(&mut conn, &topic, &["delay"], Duration::from_secs(60));
}

/// The broker's next CHECK_TRANSACTION_STATE on `conn`.
fn next_check(conn: &mut RemotingConn, timeout: Duration) -> Option<RemotingCommand> {
    let deadline = std::time::Instant::now() + timeout;
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        match conn.read_outcome(left) {
            Outcome::Response(command) if command.code == request_code::CHECK_TRANSACTION_STATE => {
                return Some(command)
            }
            Outcome::Response(_) => continue,
            Outcome::TimedOut => return None,
            other => panic!("waiting for a check: {other:?}"),
        }
    }
}

fn end_transaction(
    conn: &mut RemotingConn,
    sent: &RemotingCommand,
    body: &str,
    from_check: bool,
) -> RemotingCommand {
    let queue_offset = sent.ext_fields.get_i64("queueOffset").unwrap().unwrap();
    conn.request(
        RemotingCommand::request(request_code::END_TRANSACTION)
            .with_ext("producerGroup", TXN_GROUP)
            .with_ext("tranStateTableOffset", queue_offset)
            .with_ext("commitLogOffset", commit_log_offset(sent))
            .with_ext("commitOrRollback", sys_flag::TRANSACTION_COMMIT)
            .with_ext("fromTransactionCheck", from_check)
            .with_ext("msgId", format!("UNIQ-{body}"))
            .with_ext("transactionId", format!("UNIQ-{body}")),
    )
}

fn send_half(conn: &mut RemotingConn, topic: &str, body: &str) -> RemotingCommand {
    let props = [
        (properties::TRAN_MSG, "true".to_string()),
        (properties::PGROUP, TXN_GROUP.to_string()),
    ];
    send_with(conn, topic, body, sys_flag::TRANSACTION_PREPARED, &props)
}

#[test]
fn half_messages_whose_segment_left_are_committed_and_checked_back() {
    let remote = tempfile::tempdir().unwrap();
    commits_and_checks_back(&posix(remote.path()));
}

#[test]
fn half_messages_whose_segment_left_an_s3_bucket_are_committed_and_checked_back() {
    let Some(binary) = tier::s3s_fs_binary() else {
        return;
    };
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(root.path().join("txn-bucket")).unwrap();
    let port = harness::free_port();
    let mut s3 = tier::start_s3(&binary, root.path(), port);
    commits_and_checks_back(&tier::s3(port, "txn-bucket"));
    s3.stop();
}

fn commits_and_checks_back(backend: &[String]) {
    let namesrv = Namesrv::start();
    let broker = tier::start_broker(
        &namesrv,
        backend,
        &[
            "transactionCheckInterval=300",
            "transactionTimeOut=300",
            "transactionCheckMax=1000",
        ],
    );
    let mut conn = broker.connect();
    let topic = unique_name("TierTxn");
    create_topic(&mut conn, &topic, 1);
    // No producer of the group is connected yet: nothing is checked back.
    let ended = send_half(&mut conn, &topic, "ended");
    let checked = send_half(&mut conn, &topic, "checked");
    drop_segment_of(&mut conn, &broker, commit_log_offset(&ended));
    assert!(visible(&mut conn, &topic).is_empty());
    let answer = end_transaction(&mut conn, &ended, "ended", false);
    assert_eq!(answer.code, response_code::SUCCESS, "{answer:?}");
    // A producer of the group comes: the open one is checked back, with
    // its body, and committed from the check.
    let mut producer = broker.connect();
    let heartbeat = format!(
        r#"{{"clientID":"tier-producer","producerDataSet":[{{"groupName":"{TXN_GROUP}"}}],"consumerDataSet":[]}}"#
    );
    let beat =
        producer.request(RemotingCommand::request(request_code::HEART_BEAT).with_body(heartbeat));
    assert_eq!(beat.code, response_code::SUCCESS, "{beat:?}");
    let check = next_check(&mut producer, Duration::from_secs(30)).expect("a check-back");
    let held = ferrocket_protocol::record::decode_record(&check.body, true).unwrap();
    assert_eq!(held.body, b"checked");
    let answer = end_transaction(&mut producer, &checked, "checked", true);
    assert_eq!(answer.code, response_code::SUCCESS, "{answer:?}");
    delivered_once(
        &mut conn,
        &topic,
        &["ended", "checked"],
        Duration::from_secs(30),
    );
}

#[test]
fn a_popped_message_whose_segment_left_is_revived() {
    let remote = tempfile::tempdir().unwrap();
    let namesrv = Namesrv::start();
    let broker = start_broker(&namesrv, remote.path(), &[]);
    let mut conn = broker.connect();
    let topic = unique_name("TierPop");
    let group = unique_name("tier_pop_cg");
    create_topic(&mut conn, &topic, 1);
    let sent = send_with(&mut conn, &topic, "popped", 0, &[]);
    let popped = wait_for(Duration::from_secs(30), || {
        let (_, got) = ferrocket_testkit::pop::pop(&mut conn, &group, &topic, 1, DUE_IN_MS, 0);
        got.into_iter().next()
    })
    .expect("the message was not popped");
    let popped_at = now_ms();
    assert_eq!(popped.body, "popped");
    drop_segment_of(&mut conn, &broker, commit_log_offset(&sent));
    assert!(now_ms() < popped_at + DUE_IN_MS, "dropped after the revive");
    let (_, early) = ferrocket_testkit::pop::pop(&mut conn, &group, &topic, 1, 60_000, 0);
    assert!(early.is_empty(), "invisible yet: {early:?}");
    // Not acked: revived from object storage, popped again, once.
    let again = wait_for(Duration::from_secs(60), || {
        let (_, got) = ferrocket_testkit::pop::pop(&mut conn, &group, &topic, 1, 60_000, 0);
        got.into_iter().next()
    })
    .expect("the message was not revived");
    assert_eq!(again.body, "popped");
    assert_eq!(again.reconsume_times, 1);
    std::thread::sleep(Duration::from_secs(2));
    let (_, more) = ferrocket_testkit::pop::pop(&mut conn, &group, &topic, 8, 60_000, 0);
    assert!(more.is_empty(), "revived twice: {more:?}");
}

/// Keys sent once, before everything else: their only (newest) value lies
/// in the segment that leaves the local disk.
const OLD_KEYS: i64 = 10;
/// Keys sent many times after them.
const NEW_KEYS: i64 = 5;
const NEW_VERSIONS: i64 = 64;

fn send_keyed(conn: &mut RemotingConn, topic: &str, key: i64, version: i64) -> RemotingCommand {
    let mut body = format!("k{key}=v{version};");
    body.push_str(&".".repeat(1000 - body.len()));
    send_with(
        conn,
        topic,
        &body,
        0,
        &[(properties::KEYS, format!("k{key}"))],
    )
}

/// `key -> values` of a new group's pull of queue 0 from offset 0.
fn compacted_view(conn: &mut RemotingConn, topic: &str) -> BTreeMap<String, Vec<String>> {
    let mut view: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for body in visible(conn, topic)
        .into_iter()
        .flat_map(|(body, n)| vec![body; n])
    {
        let entry = body.split(';').next().unwrap_or("");
        let (key, value) = entry.split_once('=').unwrap_or((entry, ""));
        view.entry(key.to_string())
            .or_default()
            .push(value.to_string());
    }
    view
}

#[test]
fn a_compaction_topic_keeps_offloaded_newest_values() {
    let remote = tempfile::tempdir().unwrap();
    let namesrv = Namesrv::start();
    // Compaction off at first: nothing holds the topic's segments locally.
    // A read cache of four chunks: a pass fetches little at a time.
    let mut broker = start_broker(
        &namesrv,
        remote.path(),
        &[
            "enableCompaction=false",
            "compactionScheduleInternal=300",
            "tieredStoreReadAheadBytes=16384",
            "tieredStoreReadCacheBytes=65536",
        ],
    );
    let mut conn = broker.connect();
    let topic = unique_name("TierCompact");
    let create = harness::requests::create_topic_request(&topic, 1)
        .with_ext("attributes", "+cleanup.policy=COMPACTION");
    let created = conn.request(create);
    assert_eq!(created.code, response_code::SUCCESS, "{created:?}");
    let first = send_keyed(&mut conn, &topic, 0, 0);
    for key in 1..OLD_KEYS {
        send_keyed(&mut conn, &topic, key, 0);
    }
    for version in 0..NEW_VERSIONS {
        for key in OLD_KEYS..OLD_KEYS + NEW_KEYS {
            send_keyed(&mut conn, &topic, key, version);
        }
    }
    wait_dropped_locally(&mut conn, &broker, commit_log_offset(&first));
    drop(conn);
    broker.set_on_restart(&["enableCompaction=true"]);
    broker.restart();
    let mut conn = broker.connect();
    // The passes run first (every 300 ms), before any read of this test
    // brings the offloaded records into the read cache.
    std::thread::sleep(Duration::from_secs(3));
    let mut expected: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for key in 0..OLD_KEYS {
        expected.insert(format!("k{key}"), vec!["v0".to_string()]);
    }
    for key in OLD_KEYS..OLD_KEYS + NEW_KEYS {
        expected.insert(format!("k{key}"), vec![format!("v{}", NEW_VERSIONS - 1)]);
    }
    // Compacted: every key once, with its newest value.
    let compacted = wait_for(Duration::from_secs(60), || {
        (compacted_view(&mut conn, &topic) == expected).then_some(())
    });
    assert!(
        compacted.is_some(),
        "compacted view {:?}",
        compacted_view(&mut conn, &topic)
    );
}
