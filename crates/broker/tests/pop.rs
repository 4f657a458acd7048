//! Pop consumption over raw Remoting in the Java client's request shapes:
//! pop and ack, messages coming back after their invisible time through
//! the pop retry topic, change-invisible-time, the DLQ after retryMaxTimes,
//! many consumers sharing few queues, and the state across a restart.

mod common;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::*;
use ferrocket_protocol::codes::{request_code, response_code};
use ferrocket_protocol::RemotingCommand;
use ferrocket_testkit::pop::{self, PoppedMsg};

const GROUP: &str = "PopG";

fn pop(
    conn: &mut RemotingConn,
    topic: &str,
    max: i32,
    invisible_ms: i64,
    poll_ms: i64,
) -> (i32, Vec<PoppedMsg>) {
    pop::pop(conn, GROUP, topic, max, invisible_ms, poll_ms)
}

fn handle_request(code: i32, msg: &PoppedMsg) -> RemotingCommand {
    pop::handle_request(code, GROUP, msg)
}

fn ack(conn: &mut RemotingConn, msg: &PoppedMsg) {
    pop::ack(conn, GROUP, msg)
}

fn send_all(conn: &mut RemotingConn, topic: &str, queues: i32, count: usize) {
    for n in 0..count {
        conn.send_ok(
            topic,
            n as i32 % queues,
            format!("m{n}").as_bytes(),
            &props(&[]),
        );
    }
}

/// Pops until `want` messages came or `timeout` passed.
fn pop_until(
    conn: &mut RemotingConn,
    topic: &str,
    want: usize,
    invisible_ms: i64,
    timeout: Duration,
) -> Vec<PoppedMsg> {
    let deadline = Instant::now() + timeout;
    let mut got = Vec::new();
    while got.len() < want && Instant::now() < deadline {
        got.extend(pop(conn, topic, 32, invisible_ms, 200).1);
    }
    got
}

#[test]
fn popped_messages_are_invisible_until_acked_or_their_time_runs_out() {
    let dir = tempfile::tempdir().unwrap();
    let broker = Broker::start(config(dir.path(), 2));
    let mut conn = broker.client();
    conn.create_topic("PopT", 4);
    send_all(&mut conn, "PopT", 4, 40);
    let got = pop_until(&mut conn, "PopT", 40, 60_000, Duration::from_secs(10));
    let bodies: std::collections::BTreeSet<_> = got.iter().map(|m| m.body.clone()).collect();
    assert_eq!(bodies.len(), 40, "every message popped once: {}", got.len());
    assert_eq!(got.len(), 40);
    // Nothing more while they are invisible.
    assert_eq!(
        pop(&mut conn, "PopT", 32, 60_000, 0).0,
        response_code::POLLING_TIMEOUT
    );
    for msg in &got[..30] {
        ack(&mut conn, msg);
    }
    // An ack for an offset the queue does not hold is refused.
    let mut wrong = got[0].clone();
    wrong.offset = 1_000;
    assert_eq!(
        conn.request(handle_request(request_code::ACK_MESSAGE, &wrong))
            .code,
        response_code::NO_MESSAGE
    );
    // Past maxMsgNums 32.
    assert_eq!(
        pop(&mut conn, "PopT", 33, 1_000, 0).0,
        response_code::INVALID_PARAMETER
    );

    // Ten un-acked: popped again with a short invisible time, they come
    // back once it ran out, from the pop retry topic, reconsumed once.
    drop(got);
    let mut conn2 = broker.client();
    send_all(&mut conn2, "PopT", 4, 4);
    let short = pop_until(&mut conn2, "PopT", 4, 1_000, Duration::from_secs(5));
    assert_eq!(short.len(), 4);
    let back = pop_until(&mut conn2, "PopT", 4, 60_000, Duration::from_secs(10));
    let again: Vec<_> = back
        .iter()
        .filter(|m| m.topic == "%RETRY%PopG_PopT")
        .collect();
    assert_eq!(again.len(), 4, "{back:?}");
    assert!(again.iter().all(|m| m.reconsume_times == 1));
    let mut expected: Vec<_> = short.iter().map(|m| m.body.clone()).collect();
    let mut seen: Vec<_> = again.iter().map(|m| m.body.clone()).collect();
    expected.sort();
    seen.sort();
    assert_eq!(seen, expected);
    for msg in &back {
        ack(&mut conn2, msg);
    }
    broker.stop();
}

#[test]
fn change_invisible_time_keeps_a_slow_message_away() {
    let dir = tempfile::tempdir().unwrap();
    let broker = Broker::start(config(dir.path(), 1));
    let mut conn = broker.client();
    conn.create_topic("SlowT", 1);
    send_all(&mut conn, "SlowT", 1, 1);
    let got = pop_until(&mut conn, "SlowT", 1, 1_500, Duration::from_secs(5));
    assert_eq!(got.len(), 1);
    let started = Instant::now();
    let mut handle = got[0].clone();
    // Renew three times, 1.5 s each time, every 0.7 s.
    for _ in 0..3 {
        std::thread::sleep(Duration::from_millis(700));
        let answer = conn.request(
            handle_request(request_code::CHANGE_MESSAGE_INVISIBLETIME, &handle)
                .with_ext("invisibleTime", 1_500),
        );
        assert_eq!(answer.code, response_code::SUCCESS, "{answer:?}");
        // The Java client's new handle: ckQueueOffset is the message offset.
        let pop_time = answer.ext_fields.get("popTime").unwrap().to_string();
        handle.extra_info = format!(
            "{o} {pop_time} 1500 0 0 broker-a {q} {o}",
            o = handle.offset,
            q = handle.queue_id
        );
    }
    while started.elapsed() < Duration::from_millis(2_600) {
        assert!(
            pop(&mut conn, "SlowT", 32, 60_000, 100).1.is_empty(),
            "renewed, yet it came back"
        );
    }
    let back = pop_until(&mut conn, "SlowT", 1, 60_000, Duration::from_secs(10));
    assert_eq!(back.len(), 1, "back after the last renewal ran out");
    assert_eq!(back[0].body, got[0].body);
    broker.stop();
}

/// `%RETRY%{group}_{topic}` over 127 bytes could never be written: such a
/// pop is refused with a remark that says why, and hands nothing out; an
/// ordered pop (no retry topic) of the same pair is served.
#[test]
fn a_pop_whose_retry_topic_would_be_too_long_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let broker = Broker::start(config(dir.path(), 1));
    let mut conn = broker.client();
    let topic = format!("LongPopTopic{}", "t".repeat(50));
    conn.create_topic(&topic, 1);
    send_all(&mut conn, &topic, 1, 1);
    let group = format!("LongPopGroup{}", "g".repeat(60));
    let answer = conn.request(pop::pop_request(&group, &topic, 1, 60_000, 0));
    assert_eq!(answer.code, response_code::INVALID_PARAMETER, "{answer:?}");
    let remark = answer.remark.unwrap_or_default();
    assert!(
        remark.contains("retry topic %RETRY%LongPopGroup"),
        "{remark}"
    );
    let ordered = pop::pop_request(&group, &topic, 1, 60_000, 0).with_ext("order", "true");
    let (code, got) = pop::pop_answer(&conn.request(ordered));
    assert_eq!((code, got.len()), (response_code::SUCCESS, 1));
    broker.stop();
}

#[test]
fn past_retry_max_times_a_message_goes_to_the_dlq() {
    let dir = tempfile::tempdir().unwrap();
    let broker = Broker::start(config(dir.path(), 1));
    let mut conn = broker.client();
    conn.create_topic("DlqT", 1);
    let body = format!(r#"{{"groupName":"{GROUP}","retryMaxTimes":1}}"#);
    let update = RemotingCommand::request(request_code::UPDATE_AND_CREATE_SUBSCRIPTIONGROUP)
        .with_body(body.into_bytes());
    assert_eq!(conn.request(update).code, response_code::SUCCESS);
    send_all(&mut conn, "DlqT", 1, 1);
    assert_eq!(
        pop_until(&mut conn, "DlqT", 1, 1_000, Duration::from_secs(5)).len(),
        1
    );
    let again = pop_until(&mut conn, "DlqT", 1, 1_000, Duration::from_secs(10));
    assert_eq!(again.len(), 1);
    assert_eq!(again[0].reconsume_times, 1);
    // Never acked again: it lands in %DLQ%PopG, not back in the pop.
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut in_dlq = Vec::new();
    while in_dlq.is_empty() && Instant::now() < deadline {
        assert!(pop(&mut conn, "DlqT", 32, 60_000, 200).1.is_empty());
        let dlq =
            RemotingCommand::request(request_code::GET_TOPIC_CONFIG).with_ext("topic", "%DLQ%PopG");
        if conn.request(dlq).code == response_code::SUCCESS {
            in_dlq = conn.pull_all("DlqReader", "%DLQ%PopG", 0, "*");
        }
    }
    assert_eq!(in_dlq.len(), 1);
    assert_eq!(in_dlq[0].body, b"m0");
    broker.stop();
}

#[test]
fn twenty_consumers_on_eight_queues_each_message_acked_once() {
    let dir = tempfile::tempdir().unwrap();
    let broker = Broker::start(config(dir.path(), 2));
    let mut conn = broker.client();
    conn.create_topic("ManyT", 8);
    send_all(&mut conn, "ManyT", 8, 400);
    let acked: Arc<Mutex<Vec<String>>> = Arc::default();
    let workers: Arc<Mutex<BTreeMap<usize, usize>>> = Arc::default();
    let threads: Vec<_> = (0..20)
        .map(|worker| {
            let (addr, acked, workers) = (broker.addr, Arc::clone(&acked), Arc::clone(&workers));
            std::thread::spawn(move || {
                let mut conn = connect(addr);
                let deadline = Instant::now() + Duration::from_secs(20);
                while acked.lock().unwrap().len() < 400 && Instant::now() < deadline {
                    // Small batches, so every consumer gets work.
                    for msg in pop(&mut conn, "ManyT", 4, 30_000, 100).1 {
                        ack(&mut conn, &msg);
                        acked.lock().unwrap().push(msg.body);
                        *workers.lock().unwrap().entry(worker).or_default() += 1;
                        std::thread::sleep(Duration::from_millis(2));
                    }
                }
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }
    let mut acked = acked.lock().unwrap().clone();
    acked.sort();
    let before = acked.len();
    acked.dedup();
    assert_eq!(before, 400, "each message acked exactly once");
    assert_eq!(acked.len(), 400);
    assert_eq!(
        workers.lock().unwrap().len(),
        20,
        "every consumer got work: {:?}",
        workers.lock().unwrap()
    );
    broker.stop();
}

#[test]
fn a_restart_keeps_popped_messages_invisible_and_brings_back_each_unacked_one_once() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), 2);
    let broker = Broker::start(cfg.clone());
    let mut conn = broker.client();
    conn.create_topic("KeepT", 2);
    send_all(&mut conn, "KeepT", 2, 10);
    let got = pop_until(&mut conn, "KeepT", 10, 3_000, Duration::from_secs(5));
    assert_eq!(got.len(), 10);
    for msg in &got[..6] {
        ack(&mut conn, msg);
    }
    let popped_at = Instant::now();
    broker.stop();
    let broker = Broker::start(cfg);
    let mut conn = broker.client();
    // Still invisible right after the restart.
    if popped_at.elapsed() < Duration::from_millis(2_000) {
        assert!(
            pop(&mut conn, "KeepT", 32, 60_000, 0).1.is_empty(),
            "popped messages reappeared at once"
        );
    }
    let back = pop_until(&mut conn, "KeepT", 4, 60_000, Duration::from_secs(10));
    let mut bodies: Vec<_> = back.iter().map(|m| m.body.clone()).collect();
    let mut expected: Vec<_> = got[6..].iter().map(|m| m.body.clone()).collect();
    bodies.sort();
    expected.sort();
    assert_eq!(bodies, expected, "each un-acked message once, no acked one");
    std::thread::sleep(Duration::from_millis(1_500));
    assert!(pop(&mut conn, "KeepT", 32, 60_000, 500).1.is_empty());
    broker.stop();
}

#[test]
fn batch_ack_peek_and_notification_answer_as_javas() {
    let dir = tempfile::tempdir().unwrap();
    let broker = Broker::start(config(dir.path(), 2));
    let mut conn = broker.client();
    conn.create_topic("BatchT", 1);
    let notify = |conn: &mut RemotingConn, poll_ms: i64| {
        let request = RemotingCommand::request(request_code::NOTIFICATION)
            .with_ext("consumerGroup", GROUP)
            .with_ext("topic", "BatchT")
            .with_ext("queueId", -1)
            .with_ext("pollTime", poll_ms)
            .with_ext("bornTime", 0);
        let answer = conn.request(request);
        assert_eq!(answer.code, response_code::SUCCESS);
        answer.ext_fields.get("hasMsg") == Some("true")
    };
    assert!(!notify(&mut conn, 200), "nothing to pop yet");
    send_all(&mut conn, "BatchT", 1, 3);
    assert!(notify(&mut conn, 0));
    let peek = RemotingCommand::request(request_code::PEEK_MESSAGE)
        .with_ext("consumerGroup", GROUP)
        .with_ext("topic", "BatchT")
        .with_ext("queueId", 0)
        .with_ext("maxMsgNums", 32);
    let peeked = conn.request(peek.clone());
    assert_eq!(peeked.code, response_code::SUCCESS);
    assert_eq!(decode_pulled(&peeked).len(), 3, "a peek changes nothing");
    let got = pop_until(&mut conn, "BatchT", 3, 1_000, Duration::from_secs(5));
    assert_eq!(got.len(), 3);
    assert_eq!(conn.request(peek).code, response_code::PULL_NOT_FOUND);
    // Bits 0 and 2 of the checkpoint from offset 0: BitSet{0,2} = [0b101].
    let start = got.iter().map(|m| m.offset).min().unwrap();
    let pop_time: i64 = got[0]
        .extra_info
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let body = format!(
        r#"{{"brokerName":"broker-a","acks":[{{"c":"{GROUP}","t":"BatchT","r":"0","so":{start},"q":0,"rq":0,"pt":{pop_time},"it":1000,"b":"BQ=="}}]}}"#
    );
    let batch =
        RemotingCommand::request(request_code::BATCH_ACK_MESSAGE).with_body(body.into_bytes());
    assert_eq!(conn.request(batch).code, response_code::SUCCESS);
    let empty = RemotingCommand::request(request_code::BATCH_ACK_MESSAGE);
    assert_eq!(conn.request(empty).code, response_code::NO_MESSAGE);
    let back = pop_until(&mut conn, "BatchT", 1, 60_000, Duration::from_secs(10));
    assert_eq!(
        back.len(),
        1,
        "only the message the batch did not ack: {back:?}"
    );
    let unacked = got.iter().find(|m| m.offset == start + 1).unwrap();
    assert_eq!(back[0].body, unacked.body);
    broker.stop();
}

#[test]
fn ordered_pop_holds_the_queue_and_redelivers_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let broker = Broker::start(config(dir.path(), 2));
    let mut conn = broker.client();
    conn.create_topic("OrderT", 1);
    send_all(&mut conn, "OrderT", 1, 6);
    let order_pop = |conn: &mut RemotingConn, max: i32, invisible: i64| {
        let request =
            pop::pop_request(GROUP, "OrderT", max, invisible, 0).with_ext("order", "true");
        let answer = conn.request(request);
        if answer.code == response_code::SUCCESS {
            assert_eq!(
                answer.ext_fields.get("reviveQid"),
                Some("999"),
                "an ordered pop's handle"
            );
            assert!(answer.ext_fields.get("orderCountInfo").is_some());
        }
        pop::pop_answer(&answer).1
    };
    let first = order_pop(&mut conn, 3, 1_500);
    let bodies = |msgs: &[PoppedMsg]| msgs.iter().map(|m| m.body.clone()).collect::<Vec<_>>();
    assert_eq!(bodies(&first), ["m0", "m1", "m2"]);
    // Held: nothing while m0..m2 are out.
    assert!(order_pop(&mut conn, 3, 1_500).is_empty());
    ack(&mut conn, &first[0]);
    ack(&mut conn, &first[1]);
    assert!(
        order_pop(&mut conn, 3, 1_500).is_empty(),
        "m2 still holds the queue"
    );
    // m2's time runs out: it comes back first, in order.
    std::thread::sleep(Duration::from_millis(1_700));
    let second = order_pop(&mut conn, 3, 60_000);
    assert_eq!(bodies(&second), ["m2", "m3", "m4"]);
    for msg in &second {
        ack(&mut conn, msg);
    }
    let third = order_pop(&mut conn, 3, 60_000);
    assert_eq!(bodies(&third), ["m5"]);
    ack(&mut conn, &third[0]);
    assert!(order_pop(&mut conn, 3, 60_000).is_empty());
    broker.stop();
}

#[test]
fn polling_info_counts_waiting_pops_and_consume_stats_show_in_flight_messages() {
    let dir = tempfile::tempdir().unwrap();
    let broker = Broker::start(config(dir.path(), 2));
    let mut conn = broker.client();
    conn.create_topic("InfoT", 1);
    let addr = broker.addr;
    let waiter = std::thread::spawn(move || pop(&mut connect(addr), "InfoT", 32, 60_000, 1_500).0);
    let polling = |conn: &mut RemotingConn| {
        let request = RemotingCommand::request(request_code::POLLING_INFO)
            .with_ext("consumerGroup", GROUP)
            .with_ext("topic", "InfoT")
            .with_ext("queueId", -1);
        let answer = conn.request(request);
        assert_eq!(answer.code, response_code::SUCCESS, "{answer:?}");
        answer
            .ext_fields
            .get("pollingNum")
            .unwrap()
            .parse::<i32>()
            .unwrap()
    };
    let deadline = Instant::now() + Duration::from_secs(1);
    let mut seen = 0;
    while seen == 0 && Instant::now() < deadline {
        seen = polling(&mut conn);
    }
    assert_eq!(seen, 1, "one pop waits");
    assert_eq!(waiter.join().unwrap(), response_code::POLLING_TIMEOUT);
    assert_eq!(polling(&mut conn), 0);

    send_all(&mut conn, "InfoT", 1, 5);
    let got = pop_until(&mut conn, "InfoT", 5, 60_000, Duration::from_secs(5));
    ack(&mut conn, &got[0]);
    ack(&mut conn, &got[1]);
    let stats = conn.request(
        RemotingCommand::request(request_code::GET_CONSUME_STATS)
            .with_ext("consumerGroup", GROUP)
            .with_ext("topic", "InfoT"),
    );
    let body = String::from_utf8_lossy(&stats.body).into_owned();
    assert!(
        body.contains(r#""consumerOffset":2"#) && body.contains(r#""pullOffset":5"#),
        "{body}"
    );
    broker.stop();
}

#[test]
fn a_waiting_pop_of_one_queue_or_any_answers_when_a_message_arrives() {
    let dir = tempfile::tempdir().unwrap();
    let broker = Broker::start(config(dir.path(), 2));
    let mut conn = broker.client();
    conn.create_topic("HoldT", 4);
    // One queue, then any queue (held on both shards' queues at once).
    for (queue_id, body) in [(1, "arrived"), (-1, "arrived on 2")] {
        let addr = broker.addr;
        let waiter = std::thread::spawn(move || {
            let request =
                pop::pop_request(GROUP, "HoldT", 32, 60_000, 10_000).with_ext("queueId", queue_id);
            let started = Instant::now();
            let answer = connect(addr).request(request);
            (pop::pop_answer(&answer), started.elapsed())
        });
        std::thread::sleep(Duration::from_millis(300));
        let to = if queue_id < 0 { 2 } else { queue_id };
        conn.send_ok("HoldT", to, body.as_bytes(), &props(&[]));
        let ((code, got), waited) = waiter.join().unwrap();
        assert_eq!(code, response_code::SUCCESS);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].body, body);
        assert!(
            waited < Duration::from_secs(10),
            "answered on arrival, not at the poll deadline"
        );
    }
    broker.stop();
}

/// Priority messages (RocketMQ 5.4): a message with `_SYS_MSG_PRIORITY_`
/// is stored in queue min(priority, queues - 1), whichever queue it asked
/// for; a pop of any queue of a `message.type=PRIORITY` topic reads the
/// highest queue first, one message at a time as in a batch.
#[test]
fn a_priority_topic_pops_the_highest_priority_first() {
    let dir = tempfile::tempdir().unwrap();
    let broker = Broker::start(config(dir.path(), 2));
    let mut conn = broker.client();
    let create = |attributes: &str| {
        let mut request = RemotingCommand::request(request_code::UPDATE_AND_CREATE_TOPIC);
        request.ext_fields = fields(&[
            ("topic", "PrioT"),
            ("readQueueNums", "4"),
            ("writeQueueNums", "4"),
            ("perm", "6"),
            ("attributes", attributes),
        ]);
        request
    };
    let refused = conn.request(create("+message.type=URGENT"));
    assert_eq!(refused.code, response_code::SYSTEM_ERROR);
    let created = conn.request(create("+message.type=PRIORITY"));
    assert_eq!(created.code, response_code::SUCCESS, "{:?}", created.remark);
    let priorities = [1, 0, 3, 2, 0, 9, 1, 2, 3];
    let send_all = |conn: &mut RemotingConn| {
        for (n, p) in priorities.iter().enumerate() {
            let priority = p.to_string();
            let sent = conn.send_ok(
                "PrioT",
                0,
                format!("p{p}-{n}").as_bytes(),
                &props(&[("_SYS_MSG_PRIORITY_", &priority)]),
            );
            assert_eq!(sent.0, (*p).min(3), "stored in its priority's queue");
        }
    };
    send_all(&mut conn);
    let queue_order = |got: &[PoppedMsg]| got.iter().map(|m| m.queue_id).collect::<Vec<_>>();
    let mut one_by_one = Vec::new();
    while one_by_one.len() < priorities.len() {
        let (code, got) = pop(&mut conn, "PrioT", 1, 60_000, 1_000);
        assert_eq!(code, response_code::SUCCESS, "{one_by_one:?}");
        one_by_one.extend(got);
    }
    assert_eq!(queue_order(&one_by_one), [3, 3, 3, 2, 2, 1, 1, 0, 0]);
    send_all(&mut conn);
    let (_, batch) = pop(&mut conn, "PrioT", 32, 60_000, 1_000);
    assert_eq!(queue_order(&batch), [3, 3, 3, 2, 2, 1, 1, 0, 0]);

    // A FIFO message keeps its queue and loses the priority.
    let fifo = props(&[("_SYS_MSG_PRIORITY_", "3"), ("__SHARDINGKEY", "g")]);
    assert_eq!(conn.send_ok("PrioT", 1, b"fifo", &fifo).0, 1);
    broker.stop();
}
