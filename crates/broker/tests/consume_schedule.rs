//! Delay levels: a message sent with DELAY waits in SCHEDULE_TOPIC_XXXX and
//! reaches its topic only once its level's delay passed, with its identity
//! kept; progress is reported by GET_ALL_DELAY_OFFSET, persisted in
//! delayOffset.json, and survives a restart (pending messages still come,
//! delivered ones do not come twice).

mod common;
mod consume_support;

use std::time::{Duration, Instant};

use common::*;
use consume_support::*;
use ferrocket_broker::BrokerConfig;
use ferrocket_protocol::codes::request_code;

const TOPIC: &str = "DelayTopic";
const WAIT: Duration = Duration::from_secs(15);

fn delay_offsets(client: &mut RemotingConn) -> serde_json::Value {
    let response = ok(client.request(request(request_code::GET_ALL_DELAY_OFFSET, &[], b"")));
    serde_json::from_slice(&response.body).unwrap()
}

#[test]
fn delayed_messages_wait_for_their_level_and_survive_restart() {
    let dir = tempfile::tempdir().unwrap();
    let config = BrokerConfig {
        message_delay_level: "1s 2s".into(),
        ..config(dir.path(), 2)
    };
    let broker = Broker::start(config.clone());
    let mut client = broker.client();
    client.create_topic(TOPIC, 1);

    let sent_at = Instant::now();
    let (queue_id, _, _) = client.send_ok(
        TOPIC,
        0,
        b"later",
        &props(&[("DELAY", "2"), ("UNIQ_KEY", "DELAYED-1"), ("TAGS", "d")]),
    );
    assert_eq!(queue_id, 0, "the answer names the queue asked for");
    assert!(
        pull_all(&mut client, "G", TOPIC, 0, "*", "TAG").is_empty(),
        "not delivered before its time"
    );
    let got = wait_for_messages(&mut client, "G", TOPIC, 0, 1, WAIT);
    let waited = sent_at.elapsed();
    assert_eq!(got.len(), 1, "delivered after its delay");
    assert!(
        waited >= Duration::from_millis(1500),
        "delivered after {waited:?}"
    );
    let message = &got[0];
    assert_eq!(message.body, b"later");
    assert_eq!(message.prop("UNIQ_KEY"), Some("DELAYED-1"));
    assert_eq!(message.prop("TAGS"), Some("d"));
    assert_eq!(message.prop("DELAY"), None);
    assert_eq!(message.prop("REAL_TOPIC"), Some(TOPIC));
    let offsets = delay_offsets(&mut client);
    assert_eq!(offsets["offsetTable"]["2"], 1, "{offsets}");

    // A level above the highest is capped at the highest.
    client.send_ok(TOPIC, 0, b"capped", &props(&[("DELAY", "7")]));
    assert_eq!(
        wait_for_messages(&mut client, "G", TOPIC, 0, 2, WAIT).len(),
        2
    );

    // One more pending across a restart.
    client.send_ok(TOPIC, 0, b"across", &props(&[("DELAY", "2")]));
    drop(client);
    broker.stop();
    let file = std::fs::read_to_string(dir.path().join("config").join("delayOffset.json")).unwrap();
    let file: serde_json::Value = serde_json::from_str(&file).unwrap();
    assert_eq!(file["offsetTable"]["2"], 2, "{file}");

    let broker = Broker::start(config);
    let mut client = broker.client();
    let got = wait_for_messages(&mut client, "G", TOPIC, 0, 3, WAIT);
    let bodies: Vec<&[u8]> = got.iter().map(|m| m.body.as_slice()).collect();
    assert_eq!(bodies, vec![&b"later"[..], b"capped", b"across"]);
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(
        pull_all(&mut client, "G", TOPIC, 0, "*", "TAG").len(),
        3,
        "nothing twice"
    );
    assert_eq!(delay_offsets(&mut client)["offsetTable"]["2"], 3);
}
