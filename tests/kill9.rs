//! Crash campaign: a SYNC_FLUSH broker under several producers is killed
//! with SIGKILL at a random moment, restarted on its store, and checked:
//! every acknowledged message is exactly where its acknowledgement said
//! (queue and queue offset, same body), and every queue's offsets are dense
//! from 0 to its end. `KILL9_CYCLES` sets the number of cycles (default 3,
//! what CI runs); `scripts/chaos/kill9.sh N` runs N on a release build.

mod harness;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ferrocket_protocol::codes::response_code;
use ferrocket_protocol::record::records;
use ferrocket_protocol::RemotingCommand;
use harness::remoting::Outcome;
use harness::requests::{create_topic, pull_request, send_header, send_request};
use harness::{unique_name, Broker, BrokerOpts, Namesrv, RemotingConn};

const QUEUES: i32 = 4;
const PRODUCERS: usize = 4;
/// Longest a cycle's load runs before the kill.
const LOAD_MS_MAX: u64 = 1_500;
/// Longest one producer waits for an answer before giving up on it.
const ANSWER_MS: u64 = 5_000;

/// (queue id, queue offset) -> body, for every acknowledged send.
type Acked = Arc<Mutex<BTreeMap<(i32, i64), String>>>;

fn cycles() -> usize {
    std::env::var("KILL9_CYCLES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3)
}

/// A small xorshift for kill times and queue choice (no dependency).
fn next_random(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

/// Sends `request` and waits for its answer; `None` when the connection
/// dies or nothing comes (the broker was killed).
fn try_request(conn: &mut RemotingConn, mut request: RemotingCommand) -> Option<RemotingCommand> {
    let opaque = conn.send(&mut request).ok()?;
    let deadline = Instant::now() + Duration::from_millis(ANSWER_MS);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match conn.read_outcome(left) {
            Outcome::Response(answer) if answer.opaque == opaque && answer.is_response() => {
                return Some(answer)
            }
            Outcome::Response(_) => continue,
            _ => return None,
        }
    }
}

/// One producer: sends until the broker stops answering or `stop` is set;
/// records each acknowledgement.
fn produce(
    addr: String,
    topic: String,
    id: usize,
    cycle: usize,
    acked: Acked,
    stop: Arc<AtomicBool>,
) {
    let Ok(mut conn) = RemotingConn::connect(&addr) else {
        return;
    };
    let mut seed = ((id as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ cycle as u64) | 1;
    for n in 0.. {
        if stop.load(Ordering::Relaxed) {
            return;
        }
        let queue_id = (next_random(&mut seed) % QUEUES as u64) as i32;
        let body = format!("c{cycle}-p{id}-n{n}");
        let request = send_request(&send_header("Kill9PG", &topic, queue_id), body.clone());
        let Some(answer) = try_request(&mut conn, request) else {
            return;
        };
        if answer.code != response_code::SUCCESS {
            continue;
        }
        let offset: i64 = answer
            .ext_fields
            .get("queueOffset")
            .and_then(|v| v.parse().ok())
            .expect("a SUCCESS send answer has a queueOffset");
        let previous = acked.lock().unwrap().insert((queue_id, offset), body);
        assert!(
            previous.is_none(),
            "queue {queue_id} offset {offset} acknowledged twice"
        );
    }
}

/// Every stored (queue offset, body) of `queue_id`, by pulling from 0.
fn read_queue(conn: &mut RemotingConn, topic: &str, queue_id: i32) -> Vec<(i64, String)> {
    let mut out = Vec::new();
    loop {
        let next = out.len() as i64;
        let answer = conn.request(pull_request("Kill9Check", topic, queue_id, next, 32, 0));
        if answer.code != response_code::SUCCESS {
            return out;
        }
        for record in records(&answer.body, true) {
            let record = record.expect("a pulled record decodes with its CRC");
            let body = String::from_utf8_lossy(record.body).into_owned();
            out.push((record.queue_offset, body));
        }
    }
}

fn verify(broker: &Broker, topic: &str, acked: &Acked, cycle: usize) -> usize {
    let mut conn = broker.connect();
    let acked = acked.lock().unwrap();
    let mut stored_total = 0;
    for queue_id in 0..QUEUES {
        let stored = read_queue(&mut conn, topic, queue_id);
        for (index, (offset, _)) in stored.iter().enumerate() {
            assert_eq!(
                *offset, index as i64,
                "cycle {cycle}: queue {queue_id} is not dense"
            );
        }
        for ((queue, offset), body) in acked.range((queue_id, 0)..(queue_id + 1, 0)) {
            let found = stored.get(*offset as usize).map(|(_, b)| b.as_str());
            assert_eq!(
                found,
                Some(body.as_str()),
                "cycle {cycle}: acknowledged message lost or moved (queue {queue}, offset {offset})"
            );
        }
        stored_total += stored.len();
    }
    stored_total
}

#[test]
fn acknowledged_messages_survive_kill_9_where_they_were_acknowledged() {
    let namesrv = Namesrv::start();
    let mut broker = Broker::start(
        &namesrv.addr(),
        BrokerOpts {
            shards: Some(2),
            flush_disk_type: Some("SYNC_FLUSH".into()),
            ..Default::default()
        },
    );
    let topic = unique_name("Kill9");
    create_topic(&mut broker.connect(), &topic, QUEUES);
    let acked: Acked = Arc::default();
    let mut seed = std::process::id() as u64 | 1;
    for cycle in 0..cycles() {
        let stop = Arc::new(AtomicBool::new(false));
        let producers: Vec<_> = (0..PRODUCERS)
            .map(|id| {
                let (addr, topic, acked, stop) =
                    (broker.addr(), topic.clone(), acked.clone(), stop.clone());
                std::thread::spawn(move || produce(addr, topic, id, cycle, acked, stop))
            })
            .collect();
        std::thread::sleep(Duration::from_millis(
            100 + next_random(&mut seed) % LOAD_MS_MAX,
        ));
        broker.crash_and_restart();
        stop.store(true, Ordering::Relaxed);
        for producer in producers {
            producer.join().expect("a producer panicked");
        }
        let stored = verify(&broker, &topic, &acked, cycle);
        let acknowledged = acked.lock().unwrap().len();
        eprintln!(
            "kill9 cycle {}: {acknowledged} acknowledged so far, {stored} stored, none lost",
            cycle + 1
        );
    }
}
