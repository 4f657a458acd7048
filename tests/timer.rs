//! Timer (arbitrary-delay) messages against a real broker: delivered no
//! earlier than due and no later than due + 1 s; a restart while timers
//! are pending loses none and repeats none; a delay beyond
//! `timerMaxDelaySec` is refused with MESSAGE_ILLEGAL; a recalled one is
//! never delivered, across a crash.

mod harness;

use std::collections::BTreeMap;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use ferrocket_client::{
    ClientError, Producer, ProducerConfig, PullConsumer, PullConsumerConfig, PullStatus,
    SendOptions,
};
use ferrocket_protocol::codes::response_code;
use harness::{Broker, BrokerOpts, Namesrv};

/// A delivered copy must be stored within this long after its due time.
const LATE_BOUND_MS: i64 = 1_000;

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn timer_options(key: &str, property: &str, value: String) -> SendOptions {
    SendOptions {
        keys: vec![key.to_string()],
        properties: vec![(property.to_string(), value)],
        ..SendOptions::default()
    }
}

/// A message as the consumer saw it.
#[derive(Debug, Clone)]
struct Arrival {
    at_ms: i64,
    store_ms: i64,
    timer_out_ms: Option<i64>,
}

/// Pulls every queue of `topic` from offset 0 until `expected` distinct
/// keys arrived and `settle` has passed since the last one (to catch
/// duplicates), or `deadline` passes. Returns arrivals by key.
async fn collect(
    namesrv: &str,
    topic: &str,
    expected: usize,
    settle: Duration,
    deadline: Duration,
) -> BTreeMap<String, Vec<Arrival>> {
    let consumer =
        PullConsumer::new(PullConsumerConfig::new(format!("G_{topic}"), namesrv)).unwrap();
    consumer.subscribe(topic, "*");
    let start = Instant::now();
    let mut queues = Vec::new();
    while queues.is_empty() && start.elapsed() < deadline {
        match consumer.read_queues(topic).await {
            Ok(found) => queues = found,
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
    let mut offsets = vec![0i64; queues.len()];
    let mut seen: BTreeMap<String, Vec<Arrival>> = BTreeMap::new();
    let mut last_new = Instant::now();
    while start.elapsed() < deadline {
        if seen.len() >= expected && last_new.elapsed() >= settle {
            break;
        }
        for (index, queue) in queues.iter().enumerate() {
            let result = consumer
                .pull(
                    queue,
                    offsets[index],
                    32,
                    "*",
                    Some(Duration::from_millis(50)),
                )
                .await
                .unwrap();
            if result.status == PullStatus::Found {
                let at_ms = now_ms();
                for message in result.messages {
                    let key = message.keys.first().cloned().unwrap_or_default();
                    seen.entry(key).or_default().push(Arrival {
                        at_ms,
                        store_ms: message.store_timestamp_ms,
                        timer_out_ms: message
                            .properties
                            .get("TIMER_OUT_MS")
                            .and_then(|v| v.parse().ok()),
                    });
                    last_new = Instant::now();
                }
            }
            offsets[index] = result.next_begin_offset;
        }
    }
    consumer.shutdown();
    seen
}

#[test]
fn timer_messages_arrive_within_a_second_of_due() {
    let namesrv = Namesrv::start();
    let broker = Broker::start(
        &namesrv.addr(),
        BrokerOpts {
            shards: Some(2),
            ..BrokerOpts::default()
        },
    );
    let topic = "TimerDelays";
    runtime().block_on(async {
        let producer =
            Producer::new(ProducerConfig::new("timer_producer", namesrv.addr())).unwrap();
        // Create the topic (and its route) with a plain message first.
        producer
            .send(topic, "warm-up", &timer_options("warm", "X", "1".into()))
            .await
            .unwrap();
        let mut sent: BTreeMap<String, (i64, i64)> = BTreeMap::new();
        for delay_s in 1..=5i64 {
            for (kind, value) in [
                ("TIMER_DELAY_SEC", delay_s.to_string()),
                ("TIMER_DELAY_MS", (delay_s * 1000).to_string()),
                ("TIMER_DELIVER_MS", (now_ms() + delay_s * 1000).to_string()),
            ] {
                let key = format!("{kind}-{delay_s}");
                let before = now_ms();
                let due_hint = if kind == "TIMER_DELIVER_MS" {
                    value.parse::<i64>().unwrap()
                } else {
                    before + delay_s * 1000
                };
                let options = timer_options(&key, kind, value);
                producer.send(topic, key.clone(), &options).await.unwrap();
                sent.insert(key, (due_hint, now_ms() + delay_s * 1000));
            }
        }
        let arrivals = collect(
            &namesrv.addr(),
            topic,
            sent.len() + 1,
            Duration::from_millis(1_500),
            Duration::from_secs(30),
        )
        .await;
        producer.shutdown();
        let mut lateness_ms = Vec::new();
        for (key, (earliest_due, latest_due)) in &sent {
            let got = arrivals
                .get(key)
                .unwrap_or_else(|| panic!("{key} never arrived: {arrivals:?}"));
            assert_eq!(got.len(), 1, "{key} arrived {} times", got.len());
            let arrival = &got[0];
            let due = arrival.timer_out_ms.expect("TIMER_OUT_MS kept on delivery");
            lateness_ms.push((arrival.store_ms - due, arrival.at_ms - due));
            assert!(
                arrival.at_ms >= *earliest_due && arrival.store_ms >= due,
                "{key} arrived early: at {} store {} due {due} (sent due >= {earliest_due})",
                arrival.at_ms,
                arrival.store_ms
            );
            assert!(
                arrival.at_ms <= due + LATE_BOUND_MS && due <= *latest_due,
                "{key} arrived late: at {} due {due}",
                arrival.at_ms
            );
        }
        // (stored - due, consumed - due) in ms; shown with --nocapture.
        eprintln!("timer lateness (stored, consumed) ms: {lateness_ms:?}");
    });
    drop(broker);
}

#[test]
fn a_restart_neither_loses_nor_repeats_timers() {
    restart_case("TimerRestart", false);
}

#[test]
fn a_crash_neither_loses_nor_repeats_timers() {
    restart_case("TimerCrash", true);
}

/// Timers due before and after a restart (graceful, or SIGKILL when
/// `crash`): every one arrives exactly once, the late ones not early.
fn restart_case(topic: &str, crash: bool) {
    let namesrv = Namesrv::start();
    let mut broker = Broker::start(&namesrv.addr(), BrokerOpts::default());
    // A runtime of its own, dropped before the restart: a connection left
    // open would hold the broker's port after a SIGKILL.
    let sent_at = runtime().block_on(async {
        let producer = Producer::new(ProducerConfig::new("timer_restart", namesrv.addr())).unwrap();
        for i in 0..5 {
            let options = timer_options(&format!("early-{i}"), "TIMER_DELAY_MS", "300".into());
            producer.send(topic, "early", &options).await.unwrap();
        }
        for i in 0..5 {
            let options = timer_options(&format!("late-{i}"), "TIMER_DELAY_SEC", "5".into());
            producer.send(topic, "late", &options).await.unwrap();
        }
        producer.shutdown();
        now_ms()
    });
    // The early ones are delivered before the restart, the late ones after.
    std::thread::sleep(Duration::from_millis(1_500));
    if crash {
        broker.process.kill();
        // The killed broker's io_uring rings are torn down by the kernel
        // after it exits; its listening sockets go with them.
        std::thread::sleep(Duration::from_millis(2_000));
        broker.start_again();
    } else {
        broker.restart();
    }
    let arrivals = runtime().block_on(collect(
        &namesrv.addr(),
        topic,
        10,
        Duration::from_millis(2_000),
        Duration::from_secs(40),
    ));
    assert_eq!(arrivals.len(), 10, "timers lost: {arrivals:?}");
    for (key, got) in &arrivals {
        assert_eq!(got.len(), 1, "{key} delivered {} times", got.len());
        if key.starts_with("late") {
            assert!(
                got[0].store_ms >= sent_at + 5_000 - 1_000,
                "{key} early: {got:?}"
            );
        }
    }
}

/// A recalled timer message (RECALL_MESSAGE, RocketMQ 5.3) is never
/// delivered, even when the broker is killed between the recall and the
/// due time; its sibling due at the same time is.
#[test]
fn a_recall_survives_a_crash() {
    let namesrv = Namesrv::start();
    let mut broker = Broker::start(
        &namesrv.addr(),
        BrokerOpts {
            extra_args: vec!["--set".into(), "recallMessageEnable=true".into()],
            ..BrokerOpts::default()
        },
    );
    let topic = "TimerRecall";
    runtime().block_on(async {
        let producer = Producer::new(ProducerConfig::new("timer_recall", namesrv.addr())).unwrap();
        let plain = timer_options("plain", "X", "1".into());
        let sent = producer.send(topic, "plain", &plain).await.unwrap();
        assert_eq!(sent.recall_handle, None, "a plain message has no handle");
        let due = (now_ms() + 5_000).to_string();
        let mut handles = Vec::new();
        for key in ["recalled", "kept"] {
            let options = timer_options(key, "TIMER_DELIVER_MS", due.clone());
            let sent = producer.send(topic, key, &options).await.unwrap();
            let handle = sent
                .recall_handle
                .expect("a timer send answers a recall handle");
            handles.push((handle, sent.unique_key));
        }
        let id = producer.recall(topic, &handles[0].0).await.unwrap();
        assert_eq!(
            id, handles[0].1,
            "the recall answers the message's unique key"
        );
        match producer
            .recall("TimerRecallNoSuchTopic", &handles[1].0)
            .await
        {
            Err(ClientError::Response { code, .. }) => {
                assert_eq!(code, response_code::TOPIC_NOT_EXIST)
            }
            other => panic!("expected TOPIC_NOT_EXIST, got {other:?}"),
        }
        producer.shutdown();
    });
    // Let the timer take the marker in, then kill the broker.
    std::thread::sleep(Duration::from_millis(500));
    broker.process.kill();
    std::thread::sleep(Duration::from_millis(2_000));
    broker.start_again();
    let arrivals = runtime().block_on(collect(
        &namesrv.addr(),
        topic,
        2,
        Duration::from_millis(2_500),
        Duration::from_secs(30),
    ));
    let keys: Vec<(&str, usize)> = arrivals
        .iter()
        .map(|(key, got)| (key.as_str(), got.len()))
        .collect();
    assert_eq!(keys, vec![("kept", 1), ("plain", 1)], "{arrivals:?}");
}

#[test]
fn a_delay_beyond_the_maximum_is_refused() {
    let namesrv = Namesrv::start();
    let _broker = Broker::start(
        &namesrv.addr(),
        BrokerOpts {
            extra_args: vec!["--set".into(), "timerMaxDelaySec=10".into()],
            ..BrokerOpts::default()
        },
    );
    runtime().block_on(async {
        let mut config = ProducerConfig::new("timer_max", namesrv.addr());
        config.retry_times = 0;
        let producer = Producer::new(config).unwrap();
        let ok = timer_options("ok", "TIMER_DELAY_SEC", "10".into());
        producer.send("TimerMax", "fits", &ok).await.unwrap();
        let too_far = timer_options("far", "TIMER_DELAY_SEC", "11".into());
        match producer.send("TimerMax", "too far", &too_far).await {
            Err(ClientError::Response { code, remark }) => {
                assert_eq!(code, response_code::MESSAGE_ILLEGAL);
                assert!(remark.contains("max delay 10000ms"), "{remark}");
            }
            other => panic!("expected MESSAGE_ILLEGAL, got {other:?}"),
        }
        producer.shutdown();
    });
}
