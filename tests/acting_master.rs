//! Slave acting master (`enableSlaveActingMaster`) with real processes on
//! 127.0.0.1: a name server with `supportActingMaster` and
//! `notifyMinBrokerIdChanged`, a master and its slave. Killing the master
//! makes the slave act (the name server tells it, the route lists it as
//! id 0, read-only), consumers keep reading and committing offsets there,
//! and the master's return hands the set back.

mod harness;

use std::time::Duration;

use ferrocket_protocol::codes::{request_code, response_code};
use ferrocket_protocol::record::records;
use ferrocket_protocol::RemotingCommand;
use harness::process::free_port;
use harness::remoting::Outcome;
use harness::requests::{create_topic, pull_request, send_header, send_request};
use harness::{unique_name, wait_for, Broker, BrokerOpts, Namesrv, NamesrvOpts, RemotingConn};

const QUEUES: i32 = 2;
const MESSAGES: usize = 20;
const WAIT: Duration = Duration::from_secs(60);

fn set_args(settings: &[String]) -> Vec<String> {
    settings
        .iter()
        .flat_map(|s| ["--set".to_string(), s.clone()])
        .collect()
}

fn broker(namesrv: &Namesrv, name: &str, extra: &[String]) -> Broker {
    let mut settings = vec![
        "enableSlaveActingMaster=true".to_string(),
        format!("haListenPort={}", free_port()),
    ];
    settings.extend_from_slice(extra);
    let opts = BrokerOpts {
        broker_name: Some(name.to_string()),
        extra_args: set_args(&settings),
        ..BrokerOpts::default()
    };
    Broker::start(&namesrv.addr(), opts)
}

/// GET_BROKER_RUNTIME_INFO's table.
fn runtime_info(broker: &Broker) -> Option<serde_json::Value> {
    let mut conn = RemotingConn::connect(broker.addr()).ok()?;
    let answer = conn.request(RemotingCommand::request(
        request_code::GET_BROKER_RUNTIME_INFO,
    ));
    let value: serde_json::Value = serde_json::from_slice(&answer.body).ok()?;
    Some(value["table"].clone())
}

fn info_field(broker: &Broker, key: &str) -> Option<String> {
    Some(runtime_info(broker)?[key].as_str()?.to_string())
}

/// Waits until the broker's runtime info says `key=value`.
fn wait_info(broker: &Broker, key: &str, value: &str) {
    let seen = wait_for(WAIT, || info_field(broker, key).filter(|v| v == value));
    assert!(
        seen.is_some(),
        "{key} never became {value} (last {:?}); broker output:\n{}",
        info_field(broker, key),
        broker.process.output()
    );
}

/// The topic's route: (broker addresses by id, enableActingMaster, perm).
fn route(namesrv: &Namesrv, topic: &str) -> Option<(serde_json::Value, bool, i64)> {
    let mut conn = namesrv.connect();
    let answer = conn.request(
        RemotingCommand::request(request_code::GET_ROUTEINFO_BY_TOPIC).with_ext("topic", topic),
    );
    let value: serde_json::Value = serde_json::from_slice(&answer.body).ok()?;
    let broker = &value["brokerDatas"][0];
    let perm = value["queueDatas"][0]["perm"].as_i64()?;
    Some((
        broker["brokerAddrs"].clone(),
        broker["enableActingMaster"].as_bool()?,
        perm,
    ))
}

fn wait_route(namesrv: &Namesrv, topic: &str, addrs: serde_json::Value, perm: i64) {
    let seen = wait_for(WAIT, || {
        route(namesrv, topic).filter(|(a, acting, p)| *a == addrs && *acting && *p == perm)
    });
    assert!(
        seen.is_some(),
        "the route never became {addrs} perm {perm}: {:?}",
        route(namesrv, topic)
    );
}

/// Every message body of a queue from `offset` on, and the next offset.
fn pull_all(
    conn: &mut RemotingConn,
    group: &str,
    topic: &str,
    queue_id: i32,
) -> (Vec<String>, i64) {
    let (mut out, mut offset) = (Vec::new(), 0);
    loop {
        let answer = conn.request(pull_request(group, topic, queue_id, offset, 32, 0));
        let next = |a: &RemotingCommand| {
            a.ext_fields
                .get("nextBeginOffset")
                .unwrap()
                .parse()
                .unwrap()
        };
        match answer.code {
            response_code::SUCCESS => {
                for record in records(&answer.body, true) {
                    out.push(String::from_utf8_lossy(record.unwrap().body).into_owned());
                }
                offset = next(&answer);
            }
            response_code::PULL_NOT_FOUND => return (out, offset),
            response_code::PULL_OFFSET_MOVED | response_code::PULL_RETRY_IMMEDIATELY => {
                offset = next(&answer)
            }
            other => panic!("pull answered {other}: {answer:?}"),
        }
    }
}

fn commit_offset(
    conn: &mut RemotingConn,
    group: &str,
    topic: &str,
    queue_id: i32,
    offset: i64,
) -> i32 {
    let commit = RemotingCommand::request(request_code::UPDATE_CONSUMER_OFFSET)
        .with_ext("consumerGroup", group)
        .with_ext("topic", topic)
        .with_ext("queueId", queue_id)
        .with_ext("commitOffset", offset);
    conn.request(commit).code
}

fn query_offset(conn: &mut RemotingConn, group: &str, topic: &str, queue_id: i32) -> Option<i64> {
    let query = RemotingCommand::request(request_code::QUERY_CONSUMER_OFFSET)
        .with_ext("consumerGroup", group)
        .with_ext("topic", topic)
        .with_ext("queueId", queue_id);
    let answer = conn.request(query);
    (answer.code == response_code::SUCCESS)
        .then(|| answer.ext_fields.get("offset")?.parse().ok())
        .flatten()
}

fn commit_log_end(broker: &Broker) -> Option<String> {
    info_field(broker, "commitLogMaxOffset")
}

#[test]
fn a_slave_acts_while_its_master_is_down_and_hands_back() {
    let namesrv = Namesrv::start_with(NamesrvOpts {
        extra_args: set_args(&[
            "supportActingMaster=true".into(),
            "notifyMinBrokerIdChanged=true".into(),
        ]),
        ..NamesrvOpts::default()
    });
    let name = unique_name("acting");
    let mut master = broker(&namesrv, &name, &["brokerRole=ASYNC_MASTER".into()]);
    let slave = broker(
        &namesrv,
        &name,
        &[
            "brokerId=1".into(),
            "brokerRole=SLAVE".into(),
            "slaveReadEnable=true".into(),
        ],
    );
    let topic = unique_name("ActingTopic");
    let mut conn = master.connect();
    create_topic(&mut conn, &topic, QUEUES);
    for n in 0..MESSAGES {
        let queue_id = (n % QUEUES as usize) as i32;
        let header = send_header("acting-producer", &topic, queue_id);
        let answer = conn.request(send_request(&header, format!("m-{n}")));
        assert_eq!(answer.code, response_code::SUCCESS, "{answer:?}");
    }
    drop(conn);
    let end = commit_log_end(&master).expect("the master answers");
    let caught_up = wait_for(WAIT, || commit_log_end(&slave).filter(|e| *e == end));
    assert!(
        caught_up.is_some(),
        "the slave did not catch up:\n{}",
        slave.process.output()
    );
    // The slave copies topics from its master every few seconds.
    let knows_topic = wait_for(WAIT, || {
        let mut conn = slave.connect();
        let answer = conn.request(pull_request("probe", &topic, 0, 0, 1, 0));
        (answer.code != response_code::TOPIC_NOT_EXIST).then_some(())
    });
    assert!(knows_topic.is_some(), "the slave never synced the topic");
    let both = serde_json::json!({"0": master.addr(), "1": slave.addr()});
    wait_route(&namesrv, &topic, both.clone(), 6);
    assert_eq!(info_field(&slave, "brokerActive").as_deref(), Some("false"));
    assert_eq!(info_field(&master, "brokerActive").as_deref(), Some("true"));

    // The master dies: the name server drops it, tells the slave, and
    // routes the slave as the set's id 0, read-only.
    master.process.kill();
    wait_info(&slave, "brokerActive", "true");
    wait_info(&slave, "minBrokerIdInGroup", "1");
    let notices = info_field(&slave, "minBrokerIdNotices").unwrap();
    assert!(
        notices.parse::<u64>().unwrap() >= 1,
        "the name server did not notify the slave"
    );
    wait_route(&namesrv, &topic, serde_json::json!({"0": slave.addr()}), 4);

    // Consumers read and commit on the acting master; it takes no sends.
    let group = unique_name("ActingGroup");
    let mut on_slave = slave.connect();
    let mut bodies = Vec::new();
    for queue_id in 0..QUEUES {
        let (got, next) = pull_all(&mut on_slave, &group, &topic, queue_id);
        bodies.extend(got);
        assert_eq!(
            commit_offset(&mut on_slave, &group, &topic, queue_id, next),
            response_code::SUCCESS
        );
        assert_eq!(
            query_offset(&mut on_slave, &group, &topic, queue_id),
            Some(next)
        );
    }
    bodies.sort();
    let mut sent: Vec<String> = (0..MESSAGES).map(|n| format!("m-{n}")).collect();
    sent.sort();
    assert_eq!(bodies, sent);
    let header = send_header("acting-producer", &topic, 0);
    let refused = on_slave.request(send_request(&header, "to-a-slave"));
    assert_ne!(
        refused.code,
        response_code::SUCCESS,
        "an acting master took a send"
    );
    // A consumer's send-back is refused as Java refuses it (SYSTEM_ERROR,
    // "no master available"); Java's client then sends the retry through
    // another set.
    let back = RemotingCommand::request(request_code::CONSUMER_SEND_MSG_BACK)
        .with_ext("offset", 0)
        .with_ext("group", &group)
        .with_ext("delayLevel", 0);
    let back = on_slave.request(back);
    assert_eq!(back.code, response_code::SYSTEM_ERROR, "{back:?}");
    assert!(
        back.remark
            .as_deref()
            .is_some_and(|r| r.starts_with("no master available along with")),
        "{back:?}"
    );

    // The master returns: the slave hands back, the route is whole again.
    master.start_again();
    wait_info(&slave, "brokerActive", "false");
    wait_info(&slave, "minBrokerIdInGroup", "0");
    wait_route(&namesrv, &topic, both, 6);
}

/// Level 2 comes due 8 s after the send: long enough to kill the master
/// first, short enough for a test.
const DELAY_LEVELS: &str = "messageDelayLevel=1s 8s";

/// Two sets, every broker with `settings`: A, a master and its slave (which
/// escapes to another set while it acts), and B, a master; the topic on
/// both masters.
struct EscapeSets {
    master: Broker,
    slave: Broker,
    other: Broker,
    topic: String,
    _namesrv: Namesrv,
}

impl EscapeSets {
    fn start(prefix: &str, settings: &[String]) -> Self {
        let namesrv = Namesrv::start();
        let name_a = unique_name(&format!("{prefix}A"));
        let master = broker(&namesrv, &name_a, settings);
        let mut slave_settings = settings.to_vec();
        slave_settings.extend(
            ["brokerId=1", "brokerRole=SLAVE", "enableRemoteEscape=true"].map(String::from),
        );
        let slave = broker(&namesrv, &name_a, &slave_settings);
        let other = broker(&namesrv, &unique_name(&format!("{prefix}B")), settings);
        let topic = unique_name(&format!("{prefix}Escape"));
        create_topic(&mut other.connect(), &topic, QUEUES);
        create_topic(&mut master.connect(), &topic, QUEUES);
        Self {
            master,
            slave,
            other,
            topic,
            _namesrv: namesrv,
        }
    }

    /// Sends `request` to set A's master, waits until the slave holds it,
    /// kills the master and waits until the slave acts: the send's answer
    /// and the end of the CommitLog both hold.
    fn send_and_lose_the_master(&mut self, request: RemotingCommand) -> (RemotingCommand, String) {
        let answer = self.master.connect().request(request);
        assert_eq!(answer.code, response_code::SUCCESS, "{answer:?}");
        let end = commit_log_end(&self.master).expect("the master answers");
        let caught_up = wait_for(WAIT, || commit_log_end(&self.slave).filter(|e| *e == end));
        assert!(
            caught_up.is_some(),
            "the slave did not catch up:\n{}",
            self.slave.process.output()
        );
        self.master.process.kill();
        wait_info(&self.slave, "brokerActive", "true");
        (answer, end)
    }

    /// Starts set A's master again and waits until the slave stops acting.
    fn master_returns(&mut self) {
        self.master.start_again();
        wait_info(&self.slave, "brokerActive", "false");
    }
}

/// The bodies in queue 1 of `topic` for `group`, once there are any.
fn wait_bodies(conn: &mut RemotingConn, group: &str, topic: &str) -> Option<Vec<String>> {
    wait_for(WAIT, || {
        let (bodies, _) = pull_all(conn, group, topic, 1);
        (!bodies.is_empty()).then_some(bodies)
    })
}

#[test]
fn an_acting_master_sends_due_delay_messages_to_another_set() {
    let mut sets = EscapeSets::start("escape", &[DELAY_LEVELS.to_string()]);
    let topic = sets.topic.clone();
    let mut header = send_header("escape-producer", &topic, 1);
    header.properties = Some("DELAY\u{1}2\u{2}".into());
    let (_, end) = sets.send_and_lose_the_master(send_request(&header, "delayed-body"));
    // Due 8 s after the send: the acting slave hands it to set B's master.
    let mut on_other = sets.other.connect();
    let delivered = wait_bodies(&mut on_other, "escape-group", &topic);
    assert_eq!(
        delivered.as_deref(),
        Some(&["delayed-body".to_string()][..]),
        "the acting master did not deliver the due message; its output:\n{}",
        sets.slave.process.output()
    );
    // Nothing was written into the slave's own CommitLog.
    assert_eq!(commit_log_end(&sets.slave), Some(end));

    // The master returns and takes the level's progress from the slave: a
    // later message of the same level comes out, the first not again.
    sets.master_returns();
    let mut conn = sets.master.connect();
    let answer = conn.request(send_request(&header, "after-return"));
    assert_eq!(answer.code, response_code::SUCCESS, "{answer:?}");
    assert_eq!(
        wait_bodies(&mut conn, "escape-group", &topic).as_deref(),
        Some(&["after-return".to_string()][..]),
        "the returning master delivered the slave's message again (or not its own)"
    );
}

/// A master that hangs keeps its connections open: the name server drops it
/// when its heartbeats stop (`brokerNotActiveTimeoutMillis`), while the
/// slave's heartbeats keep the slave listed, and the slave acts.
#[test]
fn a_hung_master_expires_and_the_heartbeating_slave_acts() {
    let namesrv = Namesrv::start_with(NamesrvOpts {
        extra_args: set_args(&["scanNotActiveBrokerInterval=500".into()]),
        ..NamesrvOpts::default()
    });
    let name = unique_name("hung");
    let expiry = "brokerNotActiveTimeoutMillis=3000".to_string();
    let mut master = broker(&namesrv, &name, std::slice::from_ref(&expiry));
    let slave = broker(
        &namesrv,
        &name,
        &[expiry, "brokerId=1".into(), "brokerRole=SLAVE".into()],
    );
    // Several expiries pass: heartbeats keep both listed.
    std::thread::sleep(Duration::from_secs(5));
    assert_eq!(info_field(&slave, "brokerActive").as_deref(), Some("false"));

    master.process.signal(libc::SIGSTOP);
    wait_info(&slave, "brokerActive", "true");
    let mut conn = namesrv.connect();
    let info = conn.request(RemotingCommand::request(
        request_code::GET_BROKER_CLUSTER_INFO,
    ));
    let listed = String::from_utf8_lossy(&info.body).into_owned();
    master.process.signal(libc::SIGCONT);
    assert!(
        !listed.contains(&master.addr()),
        "the hung master is still listed: {listed}"
    );
    assert!(
        listed.contains(&slave.addr()),
        "the slave expired too: {listed}"
    );
}

/// A timer message that comes due while its set's master is down is sent
/// to another set's master by the acting slave, once: the returning master
/// asks the slave what it delivered before its own timers run, and does
/// not deliver it again.
#[test]
fn a_timer_message_due_while_the_master_is_down_is_delivered_once() {
    let mut sets = EscapeSets::start("timer", &[]);
    let topic = sets.topic.clone();
    let (_, end) = sets.send_and_lose_the_master(timer_send(&topic, "due-while-down", 8_000));
    let mut on_other = sets.other.connect();
    let delivered = wait_bodies(&mut on_other, "timer-group", &topic);
    assert_eq!(
        delivered.as_deref(),
        Some(&["due-while-down".to_string()][..]),
        "the acting master did not deliver the due timer message; its output:\n{}",
        sets.slave.process.output()
    );
    assert_eq!(commit_log_end(&sets.slave), Some(end));

    // The master returns; a later timer message shows its timers ran past
    // the first one's due time.
    sets.master_returns();
    let mut conn = sets.master.connect();
    let answer = conn.request(timer_send(&topic, "after-return", 2_000));
    assert_eq!(answer.code, response_code::SUCCESS, "{answer:?}");
    assert_eq!(
        wait_bodies(&mut conn, "timer-group", &topic).as_deref(),
        Some(&["after-return".to_string()][..]),
        "the returning master delivered the slave's timer message again (or not its own); its output:\n{}",
        sets.master.process.output()
    );
    let (again, _) = pull_all(&mut on_other, "timer-group", &topic, 1);
    assert_eq!(again, vec!["due-while-down".to_string()]);
}

/// A send of a timer message for queue 1 of `topic`, due `delay_ms` from now.
fn timer_send(topic: &str, body: &str, delay_ms: i64) -> RemotingCommand {
    let due = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
        + delay_ms;
    let mut header = send_header("timer-producer", topic, 1);
    header.properties = Some(format!(
        "TIMER_DELIVER_MS\u{1}{due}\u{2}UNIQ_KEY\u{1}{}\u{2}",
        unique_name("AC1F")
    ));
    send_request(&header, body.to_string())
}

const TXN_GROUP: &str = "acting_txn_group";
const FAST_CHECKS: [&str; 2] = ["transactionCheckInterval=300", "transactionTimeOut=300"];

/// An open half message while its set's master is down: the acting slave
/// refuses the producer's commit (SLAVE_NOT_AVAILABLE, as Java) and sends
/// the half message to another set, whose check-back the producer answers
/// with a commit there. The returning master ends it as rolled back and
/// never checks it back again.
#[test]
fn an_open_transaction_is_committed_through_another_set_while_the_master_is_down() {
    let fast: Vec<String> = FAST_CHECKS.iter().map(|s| s.to_string()).collect();
    let mut sets = EscapeSets::start("txn", &fast);
    let topic = sets.topic.clone();
    let mut on_other = sets.other.connect();
    producer_heartbeat(&mut on_other);
    let (answer, _) = sets.send_and_lose_the_master(half_send(&topic, "committed-elsewhere"));
    let half_offset: i64 = answer.ext_fields.get_i64("queueOffset").unwrap().unwrap();
    let commit = RemotingCommand::request(request_code::END_TRANSACTION)
        .with_ext("producerGroup", TXN_GROUP)
        .with_ext("tranStateTableOffset", half_offset)
        .with_ext("commitLogOffset", 0)
        .with_ext("commitOrRollback", 8);
    let refused = sets.slave.connect().request(commit);
    assert_eq!(
        refused.code,
        response_code::SLAVE_NOT_AVAILABLE,
        "{refused:?}"
    );
    // Set B checks the escaped half message back; the producer commits.
    let check = next_check(&mut on_other, WAIT).unwrap_or_else(|| {
        panic!(
            "set B never checked back; slave output:\n{}",
            sets.slave.process.output()
        )
    });
    let field = |name: &str| check.ext_fields.get(name).unwrap_or("").to_string();
    let commit = RemotingCommand::request(request_code::END_TRANSACTION)
        .with_ext("producerGroup", TXN_GROUP)
        .with_ext("tranStateTableOffset", field("tranStateTableOffset"))
        .with_ext("commitLogOffset", field("commitLogOffset"))
        .with_ext("commitOrRollback", 8)
        .with_ext("fromTransactionCheck", true)
        .with_ext("msgId", field("msgId"))
        .with_ext("transactionId", field("transactionId"));
    let answer = on_other.request(commit);
    assert_eq!(answer.code, response_code::SUCCESS, "{answer:?}");
    let delivered = wait_for(WAIT, || {
        let bodies: Vec<String> = (0..QUEUES)
            .flat_map(|q| pull_all(&mut on_other, "txn-reader", &topic, q).0)
            .collect();
        (!bodies.is_empty()).then_some(bodies)
    });
    assert_eq!(delivered, Some(vec!["committed-elsewhere".to_string()]));

    // The returning master does not ask the producer about it again.
    sets.master_returns();
    let mut on_master = sets.master.connect();
    producer_heartbeat(&mut on_master);
    let again = next_check(&mut on_master, Duration::from_secs(5));
    assert!(
        again.is_none(),
        "the returning master checked the escaped half message back: {again:?}"
    );
}

fn producer_heartbeat(conn: &mut RemotingConn) {
    let body = format!(
        r#"{{"clientID":"{}","producerDataSet":[{{"groupName":"{TXN_GROUP}"}}],"consumerDataSet":[]}}"#,
        unique_name("txn-client")
    );
    let answer = conn.request(RemotingCommand::request(request_code::HEART_BEAT).with_body(body));
    assert_eq!(answer.code, response_code::SUCCESS, "{answer:?}");
}

/// A half message for queue 1 of `topic`.
fn half_send(topic: &str, body: &str) -> RemotingCommand {
    let mut header = send_header(TXN_GROUP, topic, 1);
    header.sys_flag = Some(4);
    header.properties = Some(format!(
        "TRAN_MSG\u{1}true\u{2}PGROUP\u{1}{TXN_GROUP}\u{2}UNIQ_KEY\u{1}{}\u{2}",
        unique_name("AC1E")
    ));
    send_request(&header, body.to_string())
}

/// The broker's next CHECK_TRANSACTION_STATE on `conn` within `timeout`.
fn next_check(conn: &mut RemotingConn, timeout: Duration) -> Option<RemotingCommand> {
    let deadline = std::time::Instant::now() + timeout;
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        match conn.read_outcome(left) {
            Outcome::Response(c) if c.code == request_code::CHECK_TRANSACTION_STATE => {
                return Some(c)
            }
            Outcome::Response(_) => continue,
            Outcome::TimedOut => return None,
            other => panic!("waiting for a check: {other:?}"),
        }
    }
}
