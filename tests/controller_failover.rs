//! Automatic failover with real processes on 127.0.0.1: one controller, a
//! name server and two brokers of one set in controller mode
//! (`allAckInSyncStateSet=true`). The first broker is elected master, the
//! second follows it and joins the in-sync set. With the slave paused, the
//! master takes sends that do not wait (`WAIT=false`), more than the socket
//! buffers hold, so its log runs past the slave's; then the master is
//! killed with SIGKILL. The slave is
//! elected, restarts as master with every acknowledged message, and takes
//! sends; the old master comes back, cuts its log back to the fork point,
//! follows the new master, and ends with the same CommitLog.

mod harness;

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use ferrocket_protocol::body::{decode_json, encode_json, BrokerReplicasInfo};
use ferrocket_protocol::codes::{request_code, response_code};
use ferrocket_protocol::record::records;
use ferrocket_protocol::RemotingCommand;
use harness::process::free_port;
use harness::requests::{pull_request, send_header, send_request};
use harness::{unique_name, wait_for, Broker, BrokerOpts, Namesrv, RemotingConn, ServerProcess};

const SET: &str = "failover-set";
const QUEUES: i32 = 4;
const MESSAGES: usize = 200;
const WAIT: Duration = Duration::from_secs(60);

fn controller(dir: &std::path::Path) -> ServerProcess {
    let port = free_port();
    let args: Vec<String> = [
        "controller".to_string(),
        "--listen-addr".into(),
        "127.0.0.1".into(),
        "--listen-port".into(),
        port.to_string(),
        "--set".into(),
        format!("controllerStorePath={}", dir.join("controller").display()),
    ]
    .into();
    ServerProcess::start("controller", &args, dir, port).unwrap()
}

fn broker(namesrv: &Namesrv, controller_addr: &str) -> Broker {
    let extra = [
        "enableControllerMode=true".to_string(),
        format!("controllerAddr={controller_addr}"),
        format!("haListenPort={}", free_port()),
        "allAckInSyncStateSet=true".into(),
        "syncBrokerMetadataPeriod=1000".into(),
        "checkSyncStateSetPeriod=1000".into(),
        "slaveTimeout=3000".into(),
    ];
    Broker::start(
        &namesrv.addr(),
        BrokerOpts {
            broker_name: Some(SET.into()),
            extra_args: extra
                .iter()
                .flat_map(|s| ["--set".to_string(), s.clone()])
                .collect(),
            ..BrokerOpts::default()
        },
    )
}

/// The set's in-sync replica ids and master id, from the controller.
fn sync_state(controller: &str) -> Option<(BTreeSet<i64>, Option<i64>, i32)> {
    let mut conn = RemotingConn::connect(controller).ok()?;
    let request = RemotingCommand::request(request_code::CONTROLLER_GET_SYNC_STATE_DATA)
        .with_body(encode_json(&vec![SET.to_string()]));
    let answer = conn.request(request);
    let info: BrokerReplicasInfo = decode_json(&answer.body).ok()?;
    let set = info.replicas_info_table.get(SET)?;
    let ids = set.in_sync_replicas.iter().map(|r| r.broker_id).collect();
    Some((ids, set.master_broker_id, set.master_epoch))
}

fn send(conn: &mut RemotingConn, topic: &str, n: usize) -> i32 {
    let header = send_header("failover-producer", topic, (n % QUEUES as usize) as i32);
    conn.request(send_request(&header, format!("failover-{n:05}")))
        .code
}

/// A send that does not wait for replicas (`WAIT=false`).
fn send_no_wait(conn: &mut RemotingConn, topic: &str, n: usize) -> i32 {
    let mut header = send_header("failover-producer", topic, (n % QUEUES as usize) as i32);
    header.properties = Some("WAIT\u{1}false\u{2}".into());
    // Large bodies: more than the socket buffers hold, so a paused slave
    // cannot have been sent them all.
    let body = format!("unreplicated-{n:05}-{}", "u".repeat(100 * 1024));
    conn.request(send_request(&header, body)).code
}

/// `commitLogMaxOffset` of a broker.
fn commit_log_end(broker: &Broker) -> Option<i64> {
    let mut conn = RemotingConn::connect(broker.addr()).ok()?;
    let answer = conn.request(RemotingCommand::request(
        request_code::GET_BROKER_RUNTIME_INFO,
    ));
    let value: serde_json::Value = serde_json::from_slice(&answer.body).ok()?;
    value["table"]["commitLogMaxOffset"].as_str()?.parse().ok()
}

/// The CommitLog bytes below `end` of the store at `dir` (test segments).
fn log_bytes(dir: &std::path::Path, end: i64) -> Vec<u8> {
    let seg = harness::TEST_COMMIT_LOG_SEGMENT_BYTES as i64;
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < end {
        let file = std::fs::read(dir.join("commitlog").join(format!("{pos:020}"))).unwrap();
        let upto = end.min(pos + seg);
        out.extend_from_slice(&file[..(upto - pos) as usize]);
        pos = upto;
    }
    out
}

/// Every body in the topic's queues on `broker`.
fn bodies(broker: &Broker, topic: &str) -> BTreeSet<String> {
    let mut conn = broker.connect();
    let mut out = BTreeSet::new();
    for queue_id in 0..QUEUES {
        let mut offset = 0;
        loop {
            let answer = conn.request(pull_request(
                "failover-consumer",
                topic,
                queue_id,
                offset,
                32,
                0,
            ));
            if answer.code != response_code::SUCCESS {
                break;
            }
            for record in records(&answer.body, true) {
                out.insert(String::from_utf8_lossy(record.unwrap().body).into_owned());
            }
            offset = answer
                .ext_fields
                .get("nextBeginOffset")
                .unwrap()
                .parse()
                .unwrap();
        }
    }
    out
}

#[test]
fn killing_the_master_elects_the_in_sync_slave_and_keeps_every_acknowledged_message() {
    let dir = tempfile::tempdir().unwrap();
    let controller = controller(dir.path());
    let controller_addr = controller.addr().to_string();
    let namesrv = Namesrv::start();
    let mut first = broker(&namesrv, &controller_addr);
    let mut second = broker(&namesrv, &controller_addr);

    // The first is master (id 1), the second follows and joins the set.
    let joined = wait_for(WAIT, || {
        let (isr, master, _) = sync_state(&controller_addr)?;
        (master == Some(1) && isr == BTreeSet::from([1, 2])).then_some(())
    });
    assert!(
        joined.is_some(),
        "the slave never joined the in-sync set: {:?}\nfirst:\n{}\nsecond:\n{}",
        sync_state(&controller_addr),
        first.process.output(),
        second.process.output()
    );

    // Sends wait for the slave's copy (minInSyncReplicas=2).
    let topic = unique_name("Failover");
    let mut conn = first.connect();
    let mut acked = BTreeSet::new();
    for n in 0..MESSAGES {
        if send(&mut conn, &topic, n) == response_code::SUCCESS {
            acked.insert(format!("failover-{n:05}"));
        }
    }
    assert_eq!(
        acked.len(),
        MESSAGES,
        "every send is acknowledged while both run"
    );

    // The slave stops (SIGSTOP: its connections stay open, so the
    // controller still counts it alive and in sync); the master takes
    // sends that do not wait, which the slave never gets.
    second.process.signal(libc::SIGSTOP);
    for n in 0..300 {
        assert_eq!(send_no_wait(&mut conn, &topic, n), response_code::SUCCESS);
    }
    first.process.kill();
    let killed = Instant::now();
    second.process.signal(libc::SIGCONT);
    let mut conn_second = None;
    let served = wait_for(WAIT, || {
        let conn = match conn_second.as_mut() {
            Some(conn) => conn,
            None => conn_second.insert(RemotingConn::connect(second.addr()).ok()?),
        };
        let code = send(conn, &topic, MESSAGES);
        if code != response_code::SUCCESS {
            conn_second = None;
        }
        (code == response_code::SUCCESS).then_some(())
    });
    let failover = killed.elapsed();
    assert!(
        served.is_some(),
        "the slave never took sends after the master died: {:?}\n{}",
        sync_state(&controller_addr),
        second.process.output()
    );
    eprintln!(
        "failover: kill -9 to the first acknowledged send on the new master took {failover:?}"
    );
    let (_, master, epoch) = sync_state(&controller_addr).unwrap();
    assert_eq!((master, epoch), (Some(2), 2));

    let kept = bodies(&second, &topic);
    let lost: Vec<&String> = acked.difference(&kept).collect();
    assert!(
        lost.is_empty(),
        "{} acknowledged messages lost, e.g. {:?}",
        lost.len(),
        lost.first()
    );
    let mut conn = second.connect();
    for n in MESSAGES + 1..MESSAGES + 50 {
        assert_eq!(send(&mut conn, &topic, n), response_code::SUCCESS);
    }

    // The old master returns: it cuts its unreplicated tail, follows the
    // new master, rejoins the in-sync set, and holds the same log.
    first.start_again();
    let rejoined = wait_for(WAIT, || {
        let (isr, master, _) = sync_state(&controller_addr)?;
        (master == Some(2) && isr == BTreeSet::from([1, 2])).then_some(())
    });
    assert!(
        rejoined.is_some(),
        "the old master never rejoined:\n{}",
        first.process.output()
    );
    assert!(
        first.process.output().contains("cutting it back"),
        "the old master did not cut its tail:\n{}",
        first.process.output()
    );
    let end = commit_log_end(&second).unwrap();
    let same = wait_for(WAIT, || (commit_log_end(&first)? == end).then_some(()));
    assert!(same.is_some(), "the old master did not catch up to {end}");
    assert!(
        log_bytes(first.store_dir(), end) == log_bytes(second.store_dir(), end),
        "the two CommitLogs differ"
    );
    assert!(!bodies(&first, &topic)
        .iter()
        .any(|b| b.starts_with("unreplicated-")));
    drop(controller);
}
