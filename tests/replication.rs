//! Master/slave replication with real processes on 127.0.0.1: a slave's
//! CommitLog equals its master's byte for byte, a SYNC_MASTER send is
//! acknowledged only once the slave has it (and says FLUSH_SLAVE_TIMEOUT
//! when the slave is gone), a slave refuses sends and serves reads, a new
//! slave starts at the master's last segment, and killing the master with
//! SIGKILL loses no acknowledged message.

mod harness;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ferrocket_protocol::codes::{request_code, response_code};
use ferrocket_protocol::record::records;
use ferrocket_protocol::RemotingCommand;
use harness::process::free_port;
use harness::requests::{create_topic, pull_request, send_header, send_request};
use harness::{unique_name, wait_for, Broker, BrokerOpts, Namesrv, RemotingConn};

const SEGMENT_BYTES: u64 = 1024 * 1024;
const QUEUES: i32 = 4;
const SLAVE_TIMEOUT_MS: u64 = 1_500;
const CATCH_UP: Duration = Duration::from_secs(60);

fn master(namesrv: &Namesrv, name: &str, role: &str) -> Broker {
    let extra = [
        format!("brokerRole={role}"),
        format!("haListenPort={}", free_port()),
        format!("slaveTimeout={SLAVE_TIMEOUT_MS}"),
    ];
    Broker::start(&namesrv.addr(), opts(name, &extra))
}

fn slave(namesrv: &Namesrv, name: &str) -> Broker {
    let extra = [
        "brokerId=1".to_string(),
        "brokerRole=SLAVE".to_string(),
        "slaveReadEnable=true".to_string(),
        format!("haListenPort={}", free_port()),
    ];
    Broker::start(&namesrv.addr(), opts(name, &extra))
}

fn opts(name: &str, extra: &[String]) -> BrokerOpts {
    BrokerOpts {
        broker_name: Some(name.to_string()),
        commit_log_segment_bytes: Some(SEGMENT_BYTES),
        extra_args: extra
            .iter()
            .flat_map(|s| ["--set".to_string(), s.clone()])
            .collect(),
        ..BrokerOpts::default()
    }
}

fn body(n: usize) -> String {
    format!("message-{n:06}-{}", "x".repeat(900 + n % 100))
}

/// Sends `body` to `topic`/`queue_id`; the answer.
fn send(conn: &mut RemotingConn, topic: &str, queue_id: i32, body: &str) -> RemotingCommand {
    let header = send_header("ha-producer", topic, queue_id);
    conn.request(send_request(&header, body.to_string()))
}

/// `commitLogMaxOffset` from GET_BROKER_RUNTIME_INFO.
fn commit_log_end(broker: &Broker) -> Option<i64> {
    let mut conn = RemotingConn::connect(broker.addr()).ok()?;
    let answer = conn.request(RemotingCommand::request(
        request_code::GET_BROKER_RUNTIME_INFO,
    ));
    let value: serde_json::Value = serde_json::from_slice(&answer.body).ok()?;
    value["table"]["commitLogMaxOffset"].as_str()?.parse().ok()
}

/// Waits until the master has a slave link (GET_BROKER_HA_STATUS).
fn wait_linked(master: &Broker) {
    let linked = wait_for(CATCH_UP, || {
        let mut conn = master.connect();
        let answer = conn.request(RemotingCommand::request(request_code::GET_BROKER_HA_STATUS));
        let info: serde_json::Value = serde_json::from_slice(&answer.body).ok()?;
        (info["haConnectionInfo"].as_array()?.len() == 1).then_some(())
    });
    assert!(
        linked.is_some(),
        "no slave linked to the master:\n{}",
        master.process.output()
    );
}

fn wait_caught_up(master: &Broker, slave: &Broker) -> i64 {
    let end = commit_log_end(master).expect("the master answers");
    wait_for(CATCH_UP, || commit_log_end(slave).filter(|s| *s == end)).unwrap_or_else(|| {
        panic!(
            "the slave did not reach {end}; its output:\n{}",
            slave.process.output()
        )
    })
}

/// The CommitLog bytes `[from, to)` of the store at `dir`.
fn log_bytes(dir: &Path, from: i64, to: i64) -> Vec<u8> {
    let mut out = Vec::new();
    let mut pos = from;
    while pos < to {
        let start = pos - pos % SEGMENT_BYTES as i64;
        let file = std::fs::read(dir.join("commitlog").join(format!("{start:020}"))).unwrap();
        let end = to.min(start + SEGMENT_BYTES as i64);
        out.extend_from_slice(&file[(pos - start) as usize..(end - start) as usize]);
        pos = end;
    }
    out
}

fn assert_same_log(master: &Broker, slave: &Broker, from: i64, to: i64) {
    let (m, s) = (
        log_bytes(master.store_dir(), from, to),
        log_bytes(slave.store_dir(), from, to),
    );
    assert_eq!(m.len(), s.len());
    assert!(
        m == s,
        "the slave's CommitLog differs from the master's in [{from}, {to})"
    );
}

/// Every message of a queue from `offset` on, as (queue offset, body).
fn pull_all(
    conn: &mut RemotingConn,
    topic: &str,
    queue_id: i32,
    mut offset: i64,
) -> Vec<(i64, String)> {
    let mut out = Vec::new();
    loop {
        let answer = conn.request(pull_request("ha-consumer", topic, queue_id, offset, 32, 0));
        match answer.code {
            response_code::SUCCESS => {
                for record in records(&answer.body, true) {
                    let record = record.unwrap();
                    out.push((
                        record.queue_offset,
                        String::from_utf8_lossy(record.body).into_owned(),
                    ));
                }
                offset = answer
                    .ext_fields
                    .get("nextBeginOffset")
                    .unwrap()
                    .parse()
                    .unwrap();
            }
            response_code::PULL_NOT_FOUND => return out,
            response_code::PULL_OFFSET_MOVED | response_code::PULL_RETRY_IMMEDIATELY => {
                offset = answer
                    .ext_fields
                    .get("nextBeginOffset")
                    .unwrap()
                    .parse()
                    .unwrap();
            }
            other => panic!("pull answered {other}: {answer:?}"),
        }
    }
}

fn min_offset(conn: &mut RemotingConn, topic: &str, queue_id: i32) -> i64 {
    let answer = conn.request(
        RemotingCommand::request(request_code::GET_MIN_OFFSET)
            .with_ext("topic", topic)
            .with_ext("queueId", queue_id),
    );
    answer.ext_fields.get("offset").unwrap().parse().unwrap()
}

/// Waits until the slave's metadata sync brought `topic` over.
fn wait_topic_synced(slave: &Broker, topic: &str) {
    let synced = wait_for(CATCH_UP, || {
        let mut conn = slave.connect();
        let answer = conn.request(RemotingCommand::request(request_code::GET_ALL_TOPIC_CONFIG));
        String::from_utf8_lossy(&answer.body)
            .contains(topic)
            .then_some(())
    });
    assert!(synced.is_some(), "the slave never synced topic {topic}");
}

#[test]
fn sync_master_is_acknowledged_once_the_slave_has_it_and_times_out_without_it() {
    let namesrv = Namesrv::start();
    let name = unique_name("ha-sync");
    let master = master(&namesrv, &name, "SYNC_MASTER");
    let mut slave = slave(&namesrv, &name);
    let topic = unique_name("HaSync");
    let mut conn = master.connect();
    create_topic(&mut conn, &topic, QUEUES);
    wait_linked(&master);
    for n in 0..400 {
        let answer = send(&mut conn, &topic, n as i32 % QUEUES, &body(n));
        assert_eq!(answer.code, response_code::SUCCESS, "send {n}: {answer:?}");
    }
    let end = wait_caught_up(&master, &slave);
    assert_same_log(&master, &slave, 0, end);
    wait_topic_synced(&slave, &topic);
    let mut at_slave = slave.connect();
    let mut seen = 0;
    for queue_id in 0..QUEUES {
        let got = pull_all(&mut at_slave, &topic, queue_id, 0);
        for (offset, text) in &got {
            assert_eq!(
                text,
                &body((*offset as usize) * QUEUES as usize + queue_id as usize)
            );
        }
        seen += got.len();
    }
    assert_eq!(seen, 400, "the slave serves every message");
    let refused = send(&mut at_slave, &topic, 0, "to a slave");
    assert_eq!(
        refused.code,
        response_code::SERVICE_NOT_AVAILABLE,
        "{refused:?}"
    );

    slave.process.kill();
    let started = Instant::now();
    let answer = send(&mut conn, &topic, 0, "no slave");
    let waited = started.elapsed();
    assert_eq!(
        answer.code,
        response_code::FLUSH_SLAVE_TIMEOUT,
        "{answer:?}"
    );
    assert!(
        answer.ext_fields.get("msgId").is_some(),
        "the header is filled: {answer:?}"
    );
    assert!(
        waited >= Duration::from_millis(SLAVE_TIMEOUT_MS - 100),
        "{waited:?}"
    );
    assert!(
        waited < Duration::from_millis(SLAVE_TIMEOUT_MS + 2_000),
        "{waited:?}"
    );

    // Back, the slave catches up from where it was.
    slave.start_again();
    for n in 400..600 {
        let answer = send(&mut conn, &topic, n as i32 % QUEUES, &body(n));
        assert_eq!(
            answer.code,
            response_code::SUCCESS,
            "send {n} after the slave came back"
        );
    }
    let end = wait_caught_up(&master, &slave);
    assert_same_log(&master, &slave, 0, end);
}

#[test]
fn a_new_slave_starts_at_the_masters_last_segment_and_serves_it() {
    let namesrv = Namesrv::start();
    let name = unique_name("ha-new");
    let master = master(&namesrv, &name, "ASYNC_MASTER");
    let topic = unique_name("HaNew");
    let mut conn = master.connect();
    create_topic(&mut conn, &topic, QUEUES);
    for n in 0..3_000 {
        let answer = send(&mut conn, &topic, n as i32 % QUEUES, &body(n));
        assert_eq!(answer.code, response_code::SUCCESS);
    }
    let master_end = commit_log_end(&master).unwrap();
    assert!(
        master_end > 2 * SEGMENT_BYTES as i64,
        "history spans segments"
    );
    let slave = slave(&namesrv, &name);
    let end = wait_caught_up(&master, &slave);
    let last_segment = end - end % SEGMENT_BYTES as i64;
    assert_same_log(&master, &slave, last_segment, end);
    wait_topic_synced(&slave, &topic);
    let mut at_slave = slave.connect();
    for queue_id in 0..QUEUES {
        let first = min_offset(&mut at_slave, &topic, queue_id);
        assert!(
            first > 0,
            "the slave's queue {queue_id} begins where its copy does"
        );
        let from_slave = pull_all(&mut at_slave, &topic, queue_id, first);
        let from_master = pull_all(&mut conn, &topic, queue_id, first);
        assert!(!from_slave.is_empty());
        assert_eq!(from_slave, from_master, "queue {queue_id}");
    }
}

/// (queue id, queue offset) -> body of every acknowledged send.
type Acked = Arc<Mutex<BTreeMap<(i32, i64), String>>>;

fn produce_until(
    addr: String,
    topic: String,
    producer: usize,
    stop: Arc<AtomicBool>,
    acked: Acked,
) {
    let Ok(conn) = RemotingConn::connect(&addr) else {
        return;
    };
    let mut conn = conn.with_answer_timeout(Duration::from_secs(5));
    let mut n = 0;
    while !stop.load(Ordering::SeqCst) {
        let text = format!("p{producer}-{n}-{}", "y".repeat(500));
        let queue_id = (n % QUEUES as usize) as i32;
        let mut request = send_request(&send_header("ha-producer", &topic, queue_id), text.clone());
        if conn.send(&mut request).is_err() {
            return;
        }
        match conn.recv() {
            Some(answer) if answer.code == response_code::SUCCESS => {
                let offset = answer
                    .ext_fields
                    .get("queueOffset")
                    .unwrap()
                    .parse()
                    .unwrap();
                acked.lock().unwrap().insert((queue_id, offset), text);
            }
            Some(_) => {}
            None => return,
        }
        n += 1;
    }
}

#[test]
fn killing_a_sync_master_loses_no_acknowledged_message_and_it_rejoins() {
    let namesrv = Namesrv::start();
    let name = unique_name("ha-kill");
    let mut master = master(&namesrv, &name, "SYNC_MASTER");
    let slave = slave(&namesrv, &name);
    let topic = unique_name("HaKill");
    create_topic(&mut master.connect(), &topic, QUEUES);
    wait_linked(&master);
    // A slave knows a topic from its metadata sync (every 10 s, as Java's):
    // one created just before its master dies is not served yet.
    wait_topic_synced(&slave, &topic);
    let stop = Arc::new(AtomicBool::new(false));
    let acked: Acked = Arc::default();
    let producers: Vec<_> = (0..3)
        .map(|p| {
            let (addr, topic, stop, acked) = (
                master.addr(),
                topic.clone(),
                Arc::clone(&stop),
                Arc::clone(&acked),
            );
            std::thread::spawn(move || produce_until(addr, topic, p, stop, acked))
        })
        .collect();
    std::thread::sleep(Duration::from_millis(1_500));
    master.process.kill();
    stop.store(true, Ordering::SeqCst);
    for producer in producers {
        producer.join().unwrap();
    }
    let acked = acked.lock().unwrap().clone();
    assert!(
        acked.len() > 50,
        "the load ran: {} acknowledged",
        acked.len()
    );
    wait_topic_synced(&slave, &topic);
    let mut at_slave = slave.connect();
    let mut on_slave = BTreeMap::new();
    for queue_id in 0..QUEUES {
        for (offset, text) in pull_all(&mut at_slave, &topic, queue_id, 0) {
            on_slave.insert((queue_id, offset), text);
        }
    }
    for (place, text) in &acked {
        assert_eq!(
            on_slave.get(place),
            Some(text),
            "acknowledged message at {place:?} missing on the slave"
        );
    }
    // The master comes back; the slave follows it again.
    master.start_again();
    let mut conn = master.connect();
    for n in 0..100 {
        let answer = send(&mut conn, &topic, n % QUEUES, &body(n as usize));
        assert_eq!(answer.code, response_code::SUCCESS, "{answer:?}");
    }
    let end = wait_caught_up(&master, &slave);
    assert_same_log(&master, &slave, 0, end);
}
