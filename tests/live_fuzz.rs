//! Live-broker fuzzer: several connections throw random bytes and mutated
//! requests (sends, batches, pulls, heartbeats, offsets, locks, topic and
//! group admin, queries) at a running broker while a normal client keeps
//! sending and pulling. The broker must stay up and the normal client must
//! see no error. `FUZZ_FRAMES` sets the number of fuzz frames (default
//! 20,000, what CI runs); `scripts/chaos/fuzz.sh N` runs N.

mod harness;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use ferrocket_protocol::batch::{encode_batch, BatchItem};
use ferrocket_protocol::codes::{request_code, response_code};
use ferrocket_protocol::{RemotingCommand, SerializeType};
use harness::requests::{create_topic, pull_request, send_header, send_request};
use harness::{unique_name, Broker, BrokerOpts, Namesrv, RemotingConn};

const WORKERS: usize = 3;
/// Frames written before the worker drains what came back.
const FRAMES_PER_ROUND: usize = 32;

fn frames_wanted() -> u64 {
    std::env::var("FUZZ_FRAMES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000)
}

fn next_random(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

/// Well-formed requests the mutator starts from.
fn seeds(topic: &str) -> Vec<Vec<u8>> {
    let pull = RemotingCommand::request(request_code::PULL_MESSAGE)
        .with_ext("consumerGroup", "FuzzGroup")
        .with_ext("topic", topic)
        .with_ext("queueId", 0)
        .with_ext("queueOffset", 0)
        .with_ext("maxMsgNums", 32)
        .with_ext("sysFlag", 6)
        .with_ext("commitOffset", 0)
        .with_ext("suspendTimeoutMillis", 50)
        .with_ext("subscription", "x || y")
        .with_ext("subVersion", 0)
        .with_ext("expressionType", "TAG");
    let batch_body = encode_batch(&[BatchItem {
        flag: 0,
        body: "b".into(),
        properties: b"TAGS\x01x\x02"[..].into(),
    }])
    .unwrap_or_default();
    let mut batch = send_request(
        &ferrocket_protocol::header::SendMessageRequestHeader {
            batch: true,
            ..send_header("FuzzPG", topic, 1)
        },
        batch_body,
    );
    batch.code = request_code::SEND_BATCH_MESSAGE;
    let heartbeat = RemotingCommand::request(request_code::HEART_BEAT).with_body(
        r#"{"clientID":"fuzz@1","producerDataSet":[{"groupName":"FuzzPG"}],"consumerDataSet":[{"groupName":"FuzzGroup","consumeType":"CONSUME_PASSIVELY","messageModel":"CLUSTERING","consumeFromWhere":"CONSUME_FROM_LAST_OFFSET","unitMode":false,"subscriptionDataSet":[{"topic":"FuzzTopic","subString":"*","expressionType":"TAG","tagsSet":[],"codeSet":[],"subVersion":1,"classFilterMode":false}]}]}"#,
    );
    let lock = RemotingCommand::request(request_code::LOCK_BATCH_MQ).with_body(format!(
        r#"{{"consumerGroup":"FuzzGroup","clientId":"fuzz@1","mqSet":[{{"topic":"{topic}","brokerName":"broker-a","queueId":0}}]}}"#
    ));
    let offset = RemotingCommand::request(request_code::UPDATE_CONSUMER_OFFSET)
        .with_ext("consumerGroup", "FuzzGroup")
        .with_ext("topic", topic)
        .with_ext("queueId", 0)
        .with_ext("commitOffset", 1);
    let query = RemotingCommand::request(request_code::QUERY_MESSAGE)
        .with_ext("topic", topic)
        .with_ext("key", "k")
        .with_ext("maxNum", 32)
        .with_ext("beginTimestamp", 0)
        .with_ext("endTimestamp", i64::MAX);
    let group = RemotingCommand::request(request_code::UPDATE_AND_CREATE_SUBSCRIPTIONGROUP)
        .with_body(r#"{"groupName":"FuzzMade","retryMaxTimes":3}"#);
    let mut create = RemotingCommand::request(request_code::UPDATE_AND_CREATE_TOPIC)
        .with_ext("topic", "FuzzMade")
        .with_ext("readQueueNums", 2)
        .with_ext("writeQueueNums", 2)
        .with_ext("perm", 6);
    create.serialize_type = SerializeType::RocketMq;
    let mut binary_send = send_request(&send_header("FuzzPG", topic, 2), "binary");
    binary_send.serialize_type = SerializeType::RocketMq;
    [
        send_request(&send_header("FuzzPG", topic, 0), "fuzz"),
        binary_send,
        batch,
        pull,
        heartbeat,
        lock,
        offset,
        query,
        group,
        create,
        RemotingCommand::request(request_code::GET_BROKER_RUNTIME_INFO),
        RemotingCommand::request(request_code::VIEW_MESSAGE_BY_ID).with_ext("offset", 0),
    ]
    .into_iter()
    .map(|c| c.to_bytes().to_vec())
    .collect()
}

/// One fuzz frame: a seed with a few byte edits (the length words kept
/// right most of the time, so the broker reads past the framing), or noise.
fn fuzz_frame(seeds: &[Vec<u8>], seed: &mut u64) -> Vec<u8> {
    let roll = next_random(seed);
    if roll.is_multiple_of(16) {
        let len = (next_random(seed) % 64) as usize;
        return (0..len).map(|_| next_random(seed) as u8).collect();
    }
    let mut frame = seeds[(next_random(seed) % seeds.len() as u64) as usize].clone();
    for _ in 0..(1 + next_random(seed) % 4) {
        let at = 8 + (next_random(seed) as usize) % (frame.len().saturating_sub(8).max(1));
        if at < frame.len() {
            frame[at] = next_random(seed) as u8;
        }
    }
    if roll.is_multiple_of(7) && frame.len() > 12 {
        let cut = 8 + (next_random(seed) as usize) % (frame.len() - 8);
        frame.truncate(cut);
    }
    if !roll.is_multiple_of(5) {
        let total = (frame.len() - 4) as u32;
        frame[..4].copy_from_slice(&total.to_be_bytes());
    }
    frame
}

/// Throws frames until `sent` reaches the goal; reconnects when the broker
/// closes the connection (as it should on bad framing).
fn fuzz_worker(addr: String, topic: String, id: u64, sent: Arc<AtomicU64>, goal: u64) {
    let seeds = seeds(&topic);
    let mut seed = (id + 1).wrapping_mul(0x2545_F491_4F6C_DD1D) | 1;
    let mut buf = vec![0u8; 64 * 1024];
    while sent.load(Ordering::Relaxed) < goal {
        let Ok(mut stream) = TcpStream::connect(&addr) else {
            panic!("the broker stopped accepting connections");
        };
        let _ = stream.set_read_timeout(Some(Duration::from_millis(20)));
        'connection: while sent.load(Ordering::Relaxed) < goal {
            for _ in 0..FRAMES_PER_ROUND {
                if stream.write_all(&fuzz_frame(&seeds, &mut seed)).is_err() {
                    break 'connection;
                }
                sent.fetch_add(1, Ordering::Relaxed);
            }
            loop {
                match stream.read(&mut buf) {
                    Ok(0) => break 'connection,
                    Ok(_) => continue,
                    Err(_) => break,
                }
            }
        }
    }
}

/// The normal client: send then pull, over and over; every answer must be
/// SUCCESS and every sent body must come back in order.
fn bystander(addr: String, topic: String, stop: Arc<AtomicBool>) -> u64 {
    let mut conn = RemotingConn::connect(&addr).unwrap();
    let mut next_offset = 0i64;
    let mut rounds = 0;
    while !stop.load(Ordering::Relaxed) {
        let body = format!("bystander-{rounds}");
        let sent = conn.request(send_request(&send_header("ByPG", &topic, 0), body.clone()));
        assert_eq!(
            sent.code,
            response_code::SUCCESS,
            "bystander send: {sent:?}"
        );
        let pulled = conn.request(pull_request("ByGroup", &topic, 0, next_offset, 1, 5_000));
        assert_eq!(
            pulled.code,
            response_code::SUCCESS,
            "bystander pull: {pulled:?}"
        );
        let record = ferrocket_protocol::record::decode_record(&pulled.body, true).unwrap();
        assert_eq!(record.body, body.as_bytes());
        next_offset += 1;
        rounds += 1;
    }
    rounds
}

#[test]
fn a_live_broker_survives_fuzzed_frames_and_a_normal_client_sees_no_error() {
    let namesrv = Namesrv::start();
    let broker = Broker::start(
        &namesrv.addr(),
        BrokerOpts {
            shards: Some(2),
            auto_create_topic: Some(false),
            extra_args: ["topicCountMax=1000", "subscriptionGroupCountMax=1000"]
                .iter()
                .flat_map(|kv| ["--set".to_string(), kv.to_string()])
                .collect(),
            ..Default::default()
        },
    );
    let fuzz_topic = unique_name("FuzzTopic");
    let own_topic = unique_name("Bystander");
    let mut admin = broker.connect();
    create_topic(&mut admin, &fuzz_topic, 4);
    create_topic(&mut admin, &own_topic, 1);

    let goal = frames_wanted();
    let sent = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let normal = {
        let (addr, topic, stop) = (broker.addr(), own_topic.clone(), stop.clone());
        std::thread::spawn(move || bystander(addr, topic, stop))
    };
    let workers: Vec<_> = (0..WORKERS as u64)
        .map(|id| {
            let (addr, topic, sent) = (broker.addr(), fuzz_topic.clone(), sent.clone());
            std::thread::spawn(move || fuzz_worker(addr, topic, id, sent, goal))
        })
        .collect();
    for worker in workers {
        worker.join().expect("a fuzz worker failed");
    }
    stop.store(true, Ordering::Relaxed);
    let rounds = normal.join().expect("the normal client saw an error");
    let frames = sent.load(Ordering::Relaxed);
    eprintln!("live fuzz: {frames} frames thrown, {rounds} bystander send+pull rounds, no error");
    // Still up: a fresh connection gets an answer.
    let info = broker.connect().request(RemotingCommand::request(
        request_code::GET_BROKER_RUNTIME_INFO,
    ));
    assert_eq!(info.code, response_code::SUCCESS);
}
