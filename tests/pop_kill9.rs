//! Pop state survives SIGKILL: after a kill -9 with messages popped and not
//! acked, each of them comes back once after its invisible time, and no
//! acked one comes back.

mod harness;

use std::time::{Duration, Instant};

use ferrocket_testkit::pop::{ack, pop, PoppedMsg};
use harness::requests::{create_topic, send_header, send_request};
use harness::{unique_name, Broker, BrokerOpts, Namesrv};

const GROUP: &str = "PopKillG";

#[test]
fn after_kill_9_each_unacked_popped_message_comes_back_once() {
    let namesrv = Namesrv::start();
    let mut broker = Broker::start(&namesrv.addr(), BrokerOpts::default());
    let topic = unique_name("PopKill");
    let mut conn = broker.connect();
    create_topic(&mut conn, &topic, 4);
    for n in 0..20 {
        let header = send_header("PopKillPG", &topic, n % 4);
        let answer = conn.request(send_request(&header, format!("k{n}")));
        assert_eq!(answer.code, 0, "{answer:?}");
    }
    let mut got: Vec<PoppedMsg> = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(10);
    while got.len() < 20 && Instant::now() < deadline {
        got.extend(pop(&mut conn, GROUP, &topic, 32, 4_000, 200).1);
    }
    assert_eq!(got.len(), 20);
    for msg in &got[..8] {
        ack(&mut conn, GROUP, msg);
    }
    broker.crash_and_restart();
    let mut conn = broker.connect();
    let mut back = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(20);
    while back.len() < 12 && Instant::now() < deadline {
        for msg in pop(&mut conn, GROUP, &topic, 32, 60_000, 200).1 {
            ack(&mut conn, GROUP, &msg);
            back.push(msg.body);
        }
    }
    let mut expected: Vec<String> = got[8..].iter().map(|m| m.body.clone()).collect();
    back.sort();
    expected.sort();
    assert_eq!(back, expected, "each un-acked message once, no acked one");
    let settle = Instant::now() + Duration::from_millis(1_500);
    while Instant::now() < settle {
        assert!(
            pop(&mut conn, GROUP, &topic, 32, 60_000, 200).1.is_empty(),
            "a message came back twice"
        );
    }
}
