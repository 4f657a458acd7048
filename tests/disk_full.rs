//! A full disk is an error, not a crash. The broker's store sits on a small
//! tmpfs made by the test; while a producer sends, the test fills the rest
//! of it. The broker must stay up, refuse sends with SERVICE_NOT_AVAILABLE
//! "disk full", be routed read-only, answer pulls, and, once the test frees
//! the space, take sends again by itself; every acknowledged message is
//! there afterwards, and again after a restart.
//!
//! Mounting a tmpfs needs root (CI and this project's machines run tests as
//! root); elsewhere the test says so and passes without running.

mod harness;

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ferrocket_protocol::body::{decode_json, perm, TopicRouteData};
use ferrocket_protocol::codes::response_code;
use ferrocket_protocol::record::records;
use ferrocket_protocol::RemotingCommand;
use ferrocket_store::disk_free_bytes;
use harness::remoting::route_request;
use harness::requests::{create_topic, pull_request, send_header, send_request};
use harness::{unique_name, wait_for, Broker, BrokerOpts, Namesrv, RemotingConn};

const TMPFS_BYTES: u64 = 128 << 20;
const SEGMENT_BYTES: u64 = 4 << 20;
const QUEUES: i32 = 4;
const BODY_BYTES: usize = 1000;
/// Sends refused for a full disk before the test frees the space.
const REFUSALS_MIN: usize = 20;
const PHASE: Duration = Duration::from_secs(60);

/// A tmpfs mounted on a temporary directory; unmounted (lazily, so a test
/// failure never leaves it busy) and removed on drop.
struct Tmpfs {
    dir: tempfile::TempDir,
}

impl Tmpfs {
    fn mount(bytes: u64) -> Option<Tmpfs> {
        let dir = tempfile::tempdir().ok()?;
        let mounted = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={bytes}")])
            .arg("tmpfs")
            .arg(dir.path())
            .status()
            .is_ok_and(|status| status.success());
        mounted.then_some(Tmpfs { dir })
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount")
            .arg("-l")
            .arg(self.dir.path())
            .status();
    }
}

/// Writes zeros to `path` until `leave_bytes` are free (or the file system
/// refuses); the bytes written. It never fills the disk completely on the
/// way when `leave_bytes` is above zero: a moment of a completely full disk
/// would let the broker's periodic used-share check stop writes first, and
/// the allocation failure under test would never be reached.
fn fill(path: &Path, leave_bytes: u64) -> u64 {
    const CHUNK_BYTES: u64 = 256 << 10;
    let mut file = fs::File::create(path).unwrap();
    let chunk = vec![0u8; CHUNK_BYTES as usize];
    let mut written = 0u64;
    loop {
        let free = disk_free_bytes(path).expect("statvfs of the tmpfs");
        if free <= leave_bytes {
            break;
        }
        let want = (free - leave_bytes).min(CHUNK_BYTES) as usize;
        match file.write(&chunk[..want]) {
            Ok(0) => break,
            Ok(n) => written += n as u64,
            Err(e) => {
                assert_eq!(e.kind(), std::io::ErrorKind::StorageFull, "{e}");
                break;
            }
        }
    }
    let _ = file.sync_all();
    written
}

fn body(n: usize) -> String {
    let head = format!("disk-full-{n:08}-");
    format!("{head}{}", "x".repeat(BODY_BYTES - head.len()))
}

/// What the producer saw: acknowledged `(queue, offset) -> body`, and
/// refusals (with every distinct remark: the allocation that failed and the
/// periodic used-share check each stop writes with their own, and which of
/// them notices first depends on timing).
#[derive(Default)]
struct Sent {
    acked: BTreeMap<(i32, i64), String>,
    refused: usize,
    remarks: BTreeSet<String>,
}

/// Sends round-robin over the queues until `stop`; records every answer.
fn produce(addr: String, topic: String, sent: Arc<Mutex<Sent>>, stop: Arc<AtomicBool>) {
    let mut conn = RemotingConn::connect(&addr).unwrap();
    let mut n = 0usize;
    while !stop.load(Ordering::Acquire) {
        let queue_id = (n % QUEUES as usize) as i32;
        let text = body(n);
        let header = send_header("disk-full-producer", &topic, queue_id);
        let answer = conn.request(send_request(&header, text.clone()));
        let mut sent = sent.lock().unwrap();
        match answer.code {
            response_code::SUCCESS => {
                let offset = answer
                    .ext_fields
                    .get("queueOffset")
                    .unwrap()
                    .parse()
                    .unwrap();
                sent.acked.insert((queue_id, offset), text);
            }
            response_code::SERVICE_NOT_AVAILABLE => {
                sent.refused += 1;
                sent.remarks
                    .insert(answer.remark.clone().unwrap_or_default());
                drop(sent);
                std::thread::sleep(Duration::from_millis(20));
            }
            other => panic!("send answered {other}: {answer:?}"),
        }
        n += 1;
    }
}

/// Every message of a queue as (offset, body); pulls must never fail.
fn pull_all(conn: &mut RemotingConn, topic: &str, queue_id: i32) -> Vec<(i64, String)> {
    let mut out = Vec::new();
    let mut offset = 0;
    loop {
        let answer = conn.request(pull_request(
            "disk-full-consumer",
            topic,
            queue_id,
            offset,
            32,
            0,
        ));
        let next = |answer: &RemotingCommand| {
            answer
                .ext_fields
                .get("nextBeginOffset")
                .unwrap()
                .parse()
                .unwrap()
        };
        match answer.code {
            response_code::SUCCESS => {
                for record in records(&answer.body, true) {
                    let record = record.unwrap();
                    let text = String::from_utf8_lossy(record.body).into_owned();
                    out.push((record.queue_offset, text));
                }
                offset = next(&answer);
            }
            response_code::PULL_NOT_FOUND => return out,
            response_code::PULL_RETRY_IMMEDIATELY | response_code::PULL_OFFSET_MOVED => {
                offset = next(&answer)
            }
            other => panic!("pull answered {other}: {answer:?}"),
        }
    }
}

/// The acknowledged messages not (yet) in their queue at their offset.
fn missing(broker: &Broker, topic: &str, acked: &BTreeMap<(i32, i64), String>) -> Vec<(i32, i64)> {
    let mut conn = broker.connect();
    let mut missing = Vec::new();
    for queue_id in 0..QUEUES {
        let stored: BTreeMap<i64, String> =
            pull_all(&mut conn, topic, queue_id).into_iter().collect();
        for ((queue, offset), text) in acked.range((queue_id, i64::MIN)..=(queue_id, i64::MAX)) {
            if stored.get(offset) != Some(text) {
                missing.push((*queue, *offset));
            }
        }
    }
    missing
}

/// Fails unless every acknowledged message is readable (dispatches may
/// trail a send by a moment, so this waits a little for them).
fn assert_all_readable(broker: &Broker, topic: &str, acked: &BTreeMap<(i32, i64), String>) {
    let all = wait_for(Duration::from_secs(10), || {
        missing(broker, topic, acked).is_empty().then_some(())
    });
    if all.is_none() {
        let missing = missing(broker, topic, acked);
        panic!(
            "{} of {} acknowledged messages are missing, first {:?}",
            missing.len(),
            acked.len(),
            &missing[..missing.len().min(5)]
        );
    }
}

/// The permission the name server routes `topic` with (of its one broker).
fn routed_perm(namesrv: &Namesrv, topic: &str) -> Option<i32> {
    let answer = namesrv.connect().request(route_request(topic));
    let data: TopicRouteData = decode_json(&answer.body).ok()?;
    data.queue_datas.first().map(|queue| queue.perm)
}

fn start_broker(namesrv: &Namesrv, store: PathBuf) -> Broker {
    let settings = [
        // Only a real ENOSPC stops writes here: the used-share check
        // (default 90%) would stop them first, cleanly.
        "diskSpaceWarningLevelRatio=100",
        "cleanFileForciblyEnable=false",
        "diskMaxUsedSpaceRatio=100",
    ];
    Broker::start(
        &namesrv.addr(),
        BrokerOpts {
            shards: Some(1),
            commit_log_segment_bytes: Some(SEGMENT_BYTES),
            register_interval_ms: Some(1_000),
            store_dir: Some(store),
            extra_args: settings
                .iter()
                .flat_map(|s| ["--set".to_string(), s.to_string()])
                .collect(),
            ..BrokerOpts::default()
        },
    )
}

/// Fills the disk, leaving `leave_bytes`, under a send load; the refusals'
/// remark must contain `remark_needle`.
fn full_disk_under_load(leave_bytes: u64, remark_needle: &str) {
    let Some(tmpfs) = Tmpfs::mount(TMPFS_BYTES) else {
        eprintln!("SKIPPED: mounting a tmpfs needs root; this test did not run");
        return;
    };
    let namesrv = Namesrv::start();
    let mut broker = start_broker(&namesrv, tmpfs.path().join("store"));
    let topic = unique_name("DiskFull");
    create_topic(&mut broker.connect(), &topic, QUEUES);
    let sent = Arc::new(Mutex::new(Sent::default()));
    let stop = Arc::new(AtomicBool::new(false));
    let producer = {
        let (addr, topic) = (broker.addr(), topic.clone());
        let (sent, stop) = (Arc::clone(&sent), Arc::clone(&stop));
        std::thread::spawn(move || produce(addr, topic, sent, stop))
    };
    wait_for(PHASE, || {
        (sent.lock().unwrap().acked.len() >= 2_000).then_some(())
    })
    .expect("the producer's first sends");

    // The consumer group exists before the disk fills (a new group cannot
    // be persisted on a full disk, and is refused).
    let mut conn = broker.connect();
    for queue_id in 0..QUEUES {
        pull_all(&mut conn, &topic, queue_id);
    }

    // Fill the disk under the running load.
    let filler = tmpfs.path().join("filler");
    let filled = fill(&filler, leave_bytes);
    assert!(filled > 0, "the filler found no room at all");
    let refused = wait_for(PHASE, || {
        let sent = sent.lock().unwrap();
        let remark = sent.remarks.iter().find(|r| r.contains(remark_needle));
        remark.filter(|_| sent.refused >= REFUSALS_MIN).cloned()
    });
    let remark = refused.expect("sends are refused once the disk is full");
    assert!(remark.contains("disk is full"), "remark: {remark}");
    assert!(remark.contains(remark_needle), "remark: {remark}");
    assert!(
        broker.process.is_running(),
        "the broker died on a full disk"
    );
    let read_only = wait_for(PHASE, || {
        routed_perm(&namesrv, &topic).filter(|p| p & perm::WRITE == 0)
    });
    assert!(
        read_only.is_some(),
        "a full broker must be routed read-only"
    );
    // Reads go on while full (what is dispatched is served; nothing errs).
    for queue_id in 0..QUEUES {
        pull_all(&mut conn, &topic, queue_id);
    }

    // Space back: writes resume by themselves, routes turn writable.
    fs::remove_file(&filler).unwrap();
    let acked_before = sent.lock().unwrap().acked.len();
    wait_for(PHASE, || {
        (sent.lock().unwrap().acked.len() > acked_before + 100).then_some(())
    })
    .expect("sends succeed again once space is freed");
    let writable = wait_for(PHASE, || {
        routed_perm(&namesrv, &topic).filter(|p| p & perm::WRITE != 0)
    });
    assert!(writable.is_some(), "the broker is routed writable again");
    stop.store(true, Ordering::Release);
    producer.join().unwrap();
    let acked = std::mem::take(&mut sent.lock().unwrap().acked);
    assert_all_readable(&broker, &topic, &acked);

    for line in broker.process.output().lines() {
        if line.contains("ferrocket_store::disk") || line.contains("deferr") {
            eprintln!("broker: {line}");
        }
    }
    broker.restart();
    assert_all_readable(&broker, &topic, &acked);
    drop(broker);
    drop(tmpfs);
}

/// Completely full: the used-share check (100% here) stops writes.
#[test]
fn a_full_disk_refuses_writes_keeps_reads_and_recovers_by_itself() {
    full_disk_under_load(0, "diskSpaceWarningLevelRatio");
}

/// Less room left than a segment: the roll to the next segment finds no
/// space (ENOSPC from fallocate), and the appender stops there instead of
/// failing for good.
#[test]
fn no_room_for_the_next_segment_refuses_writes_until_space_is_back() {
    full_disk_under_load(SEGMENT_BYTES / 2, "No space left");
}
