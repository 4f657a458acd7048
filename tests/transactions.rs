//! Transactional messages on the wire (raw Remoting, the way the Java
//! client speaks): half messages stay invisible; END_TRANSACTION commits
//! exactly once or rolls back; the broker checks open half messages back
//! on a producer connection, and both pending and ended state survive a
//! restart. (`tests/interop-rust` runs the same flows with
//! `rocketmq-client-rust`.)

mod harness;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use ferrocket_protocol::codes::{request_code, response_code};
use ferrocket_protocol::header::SendMessageRequestHeader;
use ferrocket_protocol::message_id::decode_offset_msg_id;
use ferrocket_protocol::properties::{self, Properties};
use ferrocket_protocol::record::{decode_record, records, sys_flag};
use ferrocket_protocol::RemotingCommand;
use harness::remoting::Outcome;
use harness::requests::{send_header, send_request};
use harness::{Broker, BrokerOpts, Namesrv, RemotingConn};

const GROUP: &str = "txn_group";

/// A half message as the send answer describes it.
#[derive(Debug, Clone)]
struct HalfSent {
    queue_offset: i64,
    commit_log_offset: i64,
    unique_key: String,
}

fn heartbeat(conn: &mut RemotingConn, client_id: &str) {
    let body = format!(
        r#"{{"clientID":"{client_id}","producerDataSet":[{{"groupName":"{GROUP}"}}],"consumerDataSet":[]}}"#
    );
    let request = RemotingCommand::request(request_code::HEART_BEAT).with_body(body);
    let response = conn.request(request);
    assert_eq!(response.code, response_code::SUCCESS, "{response:?}");
}

fn send(
    conn: &mut RemotingConn,
    topic: &str,
    body: &str,
    flag: i32,
    uniq: &str,
) -> RemotingCommand {
    send_with(conn, topic, body, flag, uniq, &[])
}

fn send_with(
    conn: &mut RemotingConn,
    topic: &str,
    body: &str,
    flag: i32,
    uniq: &str,
    extra: &[(&str, &str)],
) -> RemotingCommand {
    let mut props = Properties::new();
    for (name, value) in extra {
        props.insert(*name, *value);
    }
    props.insert(properties::UNIQ_KEY, uniq);
    if flag != 0 {
        props.insert(properties::TRAN_MSG, "true");
        props.insert(properties::PGROUP, GROUP);
    }
    let header = SendMessageRequestHeader {
        sys_flag: Some(flag),
        properties: Some(props.to_encoded_string()),
        ..send_header(GROUP, topic, 1)
    };
    conn.request(send_request(&header, body.to_string()))
}

fn send_half(conn: &mut RemotingConn, topic: &str, body: &str) -> HalfSent {
    let uniq = format!("UNIQ-{body}");
    let response = send(conn, topic, body, sys_flag::TRANSACTION_PREPARED, &uniq);
    assert_eq!(response.code, response_code::SUCCESS, "{response:?}");
    let msg_id = response.ext_fields.get("msgId").unwrap();
    HalfSent {
        queue_offset: response.ext_fields.get_i64("queueOffset").unwrap().unwrap(),
        commit_log_offset: decode_offset_msg_id(msg_id).unwrap().commit_log_offset,
        unique_key: uniq,
    }
}

fn end_request(half: &HalfSent, group: &str, kind: i32, from_check: bool) -> RemotingCommand {
    RemotingCommand::request(request_code::END_TRANSACTION)
        .with_ext("producerGroup", group)
        .with_ext("tranStateTableOffset", half.queue_offset)
        .with_ext("commitLogOffset", half.commit_log_offset)
        .with_ext("commitOrRollback", kind)
        .with_ext("fromTransactionCheck", from_check)
        .with_ext("msgId", &half.unique_key)
        .with_ext("transactionId", &half.unique_key)
}

fn end(conn: &mut RemotingConn, half: &HalfSent, kind: i32) -> RemotingCommand {
    conn.request(end_request(half, GROUP, kind, false))
}

/// Bodies in `topic` (queues 0..4, from offset 0), with how often each is there.
fn visible(conn: &mut RemotingConn, topic: &str) -> BTreeMap<String, usize> {
    let mut seen = BTreeMap::new();
    for queue_id in 0..4 {
        let request = RemotingCommand::request(request_code::PULL_MESSAGE)
            .with_ext("consumerGroup", "txn_checker")
            .with_ext("topic", topic)
            .with_ext("queueId", queue_id)
            .with_ext("queueOffset", 0)
            .with_ext("maxMsgNums", 32)
            .with_ext("sysFlag", 4)
            .with_ext("commitOffset", 0)
            .with_ext("suspendTimeoutMillis", 0)
            .with_ext("subscription", "*")
            .with_ext("subVersion", 0);
        let response = conn.request(request);
        if response.code != response_code::SUCCESS {
            continue;
        }
        for record in records(&response.body, true) {
            let record = record.unwrap();
            *seen
                .entry(String::from_utf8_lossy(record.body).into_owned())
                .or_default() += 1;
        }
    }
    seen
}

/// Waits for the broker's next CHECK_TRANSACTION_STATE on `conn`.
fn next_check(conn: &mut RemotingConn, timeout: Duration) -> Option<RemotingCommand> {
    let deadline = Instant::now() + timeout;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
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

fn create_topic(conn: &mut RemotingConn, topic: &str) {
    harness::requests::create_topic(conn, topic, 4);
}

#[test]
fn commit_is_delivered_once_and_rollback_never() {
    let namesrv = Namesrv::start();
    let broker = Broker::start(
        &namesrv.addr(),
        BrokerOpts {
            shards: Some(2),
            ..BrokerOpts::default()
        },
    );
    let mut conn = broker.connect();
    let topic = "TxnWire";
    create_topic(&mut conn, topic);
    heartbeat(&mut conn, "client-1");

    let commit = send_half(&mut conn, topic, "to-commit");
    let rollback = send_half(&mut conn, topic, "to-rollback");
    let plain = send(&mut conn, topic, "plain", 0, "UNIQ-plain");
    assert_eq!(plain.code, response_code::SUCCESS);
    assert_eq!(
        visible(&mut conn, topic).keys().collect::<Vec<_>>(),
        vec!["plain"],
        "half messages must stay invisible"
    );

    // The wrong producer group or offset is refused and changes nothing.
    let wrong = conn.request(end_request(
        &commit,
        "other_group",
        sys_flag::TRANSACTION_COMMIT,
        false,
    ));
    assert_eq!(wrong.code, response_code::SYSTEM_ERROR, "{wrong:?}");
    let mut moved = commit.clone();
    moved.commit_log_offset += 1;
    let wrong = end(&mut conn, &moved, sys_flag::TRANSACTION_COMMIT);
    assert_eq!(wrong.code, response_code::SYSTEM_ERROR, "{wrong:?}");
    // Unknown leaves it open.
    assert_eq!(end(&mut conn, &commit, 0).code, response_code::SUCCESS);

    assert_eq!(
        end(&mut conn, &commit, sys_flag::TRANSACTION_COMMIT).code,
        response_code::SUCCESS
    );
    assert_eq!(
        end(&mut conn, &rollback, sys_flag::TRANSACTION_ROLLBACK).code,
        response_code::SUCCESS
    );
    // Repeats (a check answer racing the first end) do nothing.
    assert_eq!(
        end(&mut conn, &commit, sys_flag::TRANSACTION_COMMIT).code,
        response_code::SUCCESS
    );
    assert_eq!(
        end(&mut conn, &rollback, sys_flag::TRANSACTION_COMMIT).code,
        response_code::SUCCESS
    );

    let seen = visible(&mut conn, topic);
    assert_eq!(seen.get("to-commit"), Some(&1), "{seen:?}");
    assert_eq!(seen.get("to-rollback"), None, "{seen:?}");
}

#[test]
fn open_half_messages_are_checked_back_across_restarts() {
    let namesrv = Namesrv::start();
    let mut broker = Broker::start(
        &namesrv.addr(),
        BrokerOpts {
            shards: Some(2),
            extra_args: [
                "transactionCheckInterval=300",
                "transactionTimeOut=300",
                "transactionCheckMax=1000",
            ]
            .iter()
            .flat_map(|s| ["--set".to_string(), s.to_string()])
            .collect(),
            ..BrokerOpts::default()
        },
    );
    let topic = "TxnCheck";
    let mut conn = broker.connect();
    create_topic(&mut conn, topic);
    heartbeat(&mut conn, "client-1");
    let open = send_half(&mut conn, topic, "checked");
    let ended = send_half(&mut conn, topic, "ended-early");
    assert_eq!(
        end(&mut conn, &ended, sys_flag::TRANSACTION_COMMIT).code,
        response_code::SUCCESS
    );

    let check = next_check(&mut conn, Duration::from_secs(10)).expect("a check-back");
    assert!(check.is_oneway(), "checks are oneway");
    let field = |name: &str| check.ext_fields.get(name).unwrap_or("").to_string();
    assert_eq!(field("tranStateTableOffset"), open.queue_offset.to_string());
    assert_eq!(field("commitLogOffset"), open.commit_log_offset.to_string());
    assert_eq!(field("msgId"), open.unique_key);
    assert_eq!(field("transactionId"), open.unique_key);
    assert!(!field("offsetMsgId").is_empty());
    let record = decode_record(&check.body, true).unwrap();
    assert_eq!(record.topic, topic, "the check body names the real topic");
    assert_eq!(record.queue_id, 1);
    assert_eq!(record.body, b"checked");
    assert_eq!(record.properties().get(properties::PGROUP), Some(GROUP));
    assert_eq!(record.physical_offset, open.commit_log_offset);

    // Restart with the half message open: it is still checked.
    drop(conn);
    broker.restart();
    let mut conn = broker.connect();
    heartbeat(&mut conn, "client-1");
    let check = next_check(&mut conn, Duration::from_secs(10)).expect("a check after the restart");
    assert_eq!(
        check.ext_fields.get("tranStateTableOffset"),
        Some(open.queue_offset.to_string().as_str())
    );
    let answer = end_request(&open, GROUP, sys_flag::TRANSACTION_COMMIT, true);
    assert_eq!(conn.request(answer).code, response_code::SUCCESS);
    let seen = visible(&mut conn, topic);
    assert_eq!(seen.get("checked"), Some(&1), "{seen:?}");
    assert_eq!(seen.get("ended-early"), Some(&1), "{seen:?}");

    // Restart again: both are ended for good, nothing is checked or redone.
    drop(conn);
    broker.restart();
    let mut conn = broker.connect();
    heartbeat(&mut conn, "client-1");
    assert!(
        next_check(&mut conn, Duration::from_millis(1_500)).is_none(),
        "ended transactions must not be checked after a restart"
    );
    assert_eq!(
        end(&mut conn, &open, sys_flag::TRANSACTION_COMMIT).code,
        response_code::SUCCESS
    );
    let seen = visible(&mut conn, topic);
    assert_eq!(seen.get("checked"), Some(&1), "{seen:?}");
    assert_eq!(seen.get("ended-early"), Some(&1), "{seen:?}");
}

#[test]
fn a_committed_timer_message_waits_until_due() {
    let namesrv = Namesrv::start();
    let broker = Broker::start(&namesrv.addr(), BrokerOpts::default());
    let mut conn = broker.connect();
    let topic = "TxnTimer";
    create_topic(&mut conn, topic);
    heartbeat(&mut conn, "client-1");
    let response = send_with(
        &mut conn,
        topic,
        "later",
        sys_flag::TRANSACTION_PREPARED,
        "UNIQ-later",
        &[(properties::TIMER_DELAY_SEC, "2")],
    );
    assert_eq!(response.code, response_code::SUCCESS, "{response:?}");
    let half = HalfSent {
        queue_offset: response.ext_fields.get_i64("queueOffset").unwrap().unwrap(),
        commit_log_offset: decode_offset_msg_id(response.ext_fields.get("msgId").unwrap())
            .unwrap()
            .commit_log_offset,
        unique_key: "UNIQ-later".into(),
    };
    let committed_at = Instant::now();
    assert_eq!(
        end(&mut conn, &half, sys_flag::TRANSACTION_COMMIT).code,
        response_code::SUCCESS
    );
    assert!(
        visible(&mut conn, topic).is_empty(),
        "a timer commit is held"
    );
    let deadline = Instant::now() + Duration::from_secs(15);
    while visible(&mut conn, topic).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(visible(&mut conn, topic).get("later"), Some(&1));
    assert!(committed_at.elapsed() >= Duration::from_millis(1_500));
}
