//! A half message checked back `transactionCheckMax` times without an
//! answer is copied to `TRANS_CHECK_MAX_TIME_TOPIC` (created on demand:
//! one queue, read and write) and rolled back: it never reaches its real
//! topic, is not checked again, and an operator can still pull it, with
//! its real topic, producer group and message id in its properties.

mod harness;

use std::time::Duration;

use ferrocket_protocol::body::{decode_json, TopicConfig};
use ferrocket_protocol::codes::{request_code, response_code};
use ferrocket_protocol::header::SendMessageRequestHeader;
use ferrocket_protocol::message_id::decode_offset_msg_id;
use ferrocket_protocol::properties::{self, Properties};
use ferrocket_protocol::record::{records, sys_flag};
use ferrocket_protocol::RemotingCommand;
use harness::remoting::Outcome;
use harness::requests::{send_header, send_request};
use harness::{wait_for, Broker, BrokerOpts, Namesrv, RemotingConn};

const GROUP: &str = "txn_max_group";
const MAX_TOPIC: &str = "TRANS_CHECK_MAX_TIME_TOPIC";
const CHECK_MAX: usize = 2;

fn heartbeat(conn: &mut RemotingConn) {
    let body = format!(
        r#"{{"clientID":"max-client","producerDataSet":[{{"groupName":"{GROUP}"}}],"consumerDataSet":[]}}"#
    );
    let request = RemotingCommand::request(request_code::HEART_BEAT).with_body(body);
    assert_eq!(conn.request(request).code, response_code::SUCCESS);
}

fn create_topic(conn: &mut RemotingConn, topic: &str) {
    harness::requests::create_topic(conn, topic, 1);
}

/// Sends a half message; answers (queue offset, CommitLog offset).
fn send_half(conn: &mut RemotingConn, topic: &str, body: &str, uniq: &str) -> (i64, i64) {
    let mut props = Properties::new();
    props.insert(properties::UNIQ_KEY, uniq);
    props.insert(properties::KEYS, "order-42");
    props.insert(properties::TRAN_MSG, "true");
    props.insert(properties::PGROUP, GROUP);
    let header = SendMessageRequestHeader {
        sys_flag: Some(sys_flag::TRANSACTION_PREPARED),
        flag: Some(7),
        properties: Some(props.to_encoded_string()),
        ..send_header(GROUP, topic, 0)
    };
    let request = send_request(&header, body.to_string());
    let response = conn.request(request);
    assert_eq!(response.code, response_code::SUCCESS, "{response:?}");
    let msg_id = response.ext_fields.get("msgId").unwrap();
    (
        response.ext_fields.get_i64("queueOffset").unwrap().unwrap(),
        decode_offset_msg_id(msg_id).unwrap().commit_log_offset,
    )
}

/// The raw records of queue 0 of `topic` from offset 0 (empty when the
/// pull finds nothing).
fn pull_all(conn: &mut RemotingConn, topic: &str) -> Vec<Vec<u8>> {
    let request = RemotingCommand::request(request_code::PULL_MESSAGE)
        .with_ext("consumerGroup", "max_reader")
        .with_ext("topic", topic)
        .with_ext("queueId", 0)
        .with_ext("queueOffset", 0)
        .with_ext("maxMsgNums", 32)
        .with_ext("sysFlag", 4)
        .with_ext("commitOffset", 0)
        .with_ext("suspendTimeoutMillis", 0)
        .with_ext("subscription", "*")
        .with_ext("subVersion", 0);
    let response = conn.request(request);
    if response.code != response_code::SUCCESS {
        return Vec::new();
    }
    records(&response.body, true)
        .map(|record| record.unwrap().record.to_vec())
        .collect()
}

/// Counts CHECK_TRANSACTION_STATE pushes for half offset `offset` seen on
/// `conn` within `timeout`.
fn count_checks(conn: &mut RemotingConn, offset: i64, timeout: Duration) -> usize {
    let deadline = std::time::Instant::now() + timeout;
    let mut seen = 0;
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            return seen;
        }
        match conn.read_outcome(left) {
            Outcome::Response(command) if command.code == request_code::CHECK_TRANSACTION_STATE => {
                if command.ext_fields.get("tranStateTableOffset")
                    == Some(offset.to_string().as_str())
                {
                    seen += 1;
                }
            }
            Outcome::Response(_) => continue,
            Outcome::TimedOut => return seen,
            other => panic!("waiting for checks: {other:?}"),
        }
    }
}

#[test]
fn a_half_message_checked_too_often_is_kept_in_the_check_max_topic() {
    let namesrv = Namesrv::start();
    let broker = Broker::start(
        &namesrv.addr(),
        BrokerOpts {
            shards: Some(2),
            extra_args: [
                "transactionCheckInterval=200".to_string(),
                "transactionTimeOut=200".to_string(),
                format!("transactionCheckMax={CHECK_MAX}"),
            ]
            .iter()
            .flat_map(|s| ["--set".to_string(), s.clone()])
            .collect(),
            ..BrokerOpts::default()
        },
    );
    let mut conn = broker.connect();
    let topic = "TxnMaxCheck";
    create_topic(&mut conn, topic);
    heartbeat(&mut conn);
    let mut absent = RemotingCommand::request(request_code::GET_TOPIC_CONFIG);
    absent = absent.with_ext("topic", MAX_TOPIC);
    assert_eq!(
        conn.request(absent).code,
        response_code::TOPIC_NOT_EXIST,
        "created only when a half message is discarded"
    );

    let (queue_offset, commit_log_offset) = send_half(&mut conn, topic, "given-up", "UNIQ-max-1");
    // Checked exactly transactionCheckMax times, never answered.
    assert_eq!(
        count_checks(&mut conn, queue_offset, Duration::from_secs(5)),
        CHECK_MAX
    );

    let mut reader = broker.connect();
    let kept = wait_for(Duration::from_secs(20), || {
        let found = pull_all(&mut reader, MAX_TOPIC);
        (!found.is_empty()).then_some(found)
    })
    .expect("the discarded half message in TRANS_CHECK_MAX_TIME_TOPIC");
    assert_eq!(kept.len(), 1);
    let record = ferrocket_protocol::record::decode_record(&kept[0], true).unwrap();
    assert_eq!(record.topic, MAX_TOPIC);
    assert_eq!(record.queue_id, 0);
    assert_eq!(record.body, b"given-up");
    assert_eq!(record.flag, 7);
    assert_eq!(record.born_timestamp_ms, 1_700_000_000_000);
    assert_eq!(
        record.sys_flag & sys_flag::TRANSACTION_MASK,
        sys_flag::TRANSACTION_NOT_TYPE,
        "sysFlag as the half message was stored (not a transaction type)"
    );
    let props = record.properties();
    assert_eq!(props.get(properties::REAL_TOPIC), Some(topic));
    assert_eq!(props.get(properties::REAL_QID), Some("0"));
    assert_eq!(props.get(properties::PGROUP), Some(GROUP));
    assert_eq!(props.get(properties::UNIQ_KEY), Some("UNIQ-max-1"));
    assert_eq!(props.get(properties::KEYS), Some("order-42"));

    // The topic as Java creates it: one queue, read and write.
    let request =
        RemotingCommand::request(request_code::GET_TOPIC_CONFIG).with_ext("topic", MAX_TOPIC);
    let response = reader.request(request);
    assert_eq!(response.code, response_code::SUCCESS, "{response:?}");
    let config: TopicConfig = decode_json(&response.body).unwrap();
    assert_eq!(
        (config.read_queue_nums, config.write_queue_nums, config.perm),
        (1, 1, 6)
    );

    // Rolled back: never delivered, never checked again, a late commit
    // does nothing.
    assert_eq!(
        count_checks(&mut conn, queue_offset, Duration::from_secs(1)),
        0
    );
    let late = RemotingCommand::request(request_code::END_TRANSACTION)
        .with_ext("producerGroup", GROUP)
        .with_ext("tranStateTableOffset", queue_offset)
        .with_ext("commitLogOffset", commit_log_offset)
        .with_ext("commitOrRollback", sys_flag::TRANSACTION_COMMIT)
        .with_ext("fromTransactionCheck", true)
        .with_ext("msgId", "UNIQ-max-1");
    assert_eq!(conn.request(late).code, response_code::SUCCESS);
    assert!(pull_all(&mut reader, topic).is_empty(), "rolled back");
    assert_eq!(pull_all(&mut reader, MAX_TOPIC).len(), 1, "kept once");
}
