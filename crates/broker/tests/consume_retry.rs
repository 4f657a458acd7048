//! Subscription groups and retries: group settings are created, changed,
//! persisted and enforced; CONSUMER_SEND_MSG_BACK puts a message on the
//! group's retry topic through the delay levels with its identity kept and
//! its reconsume count raised, and on the DLQ once retryMaxTimes is
//! reached. Two shards, so requests cross shards.

mod common;
mod consume_support;

use std::time::Duration;

use common::*;
use consume_support::*;
use ferrocket_broker::BrokerConfig;
use ferrocket_protocol::codes::{request_code, response_code};

const WAIT: Duration = Duration::from_secs(15);

fn broker_config(dir: &std::path::Path) -> BrokerConfig {
    BrokerConfig {
        // Retries (levels 3 + n) come back at once.
        message_delay_level: "0s 0s 0s 0s 0s 0s".into(),
        ..config(dir, 2)
    }
}

fn send_back(
    client: &mut RemotingConn,
    group: &str,
    offset: i64,
    level: i32,
    version: i32,
    max: Option<i32>,
) -> i32 {
    let mut ext = vec![
        ("group", group.to_string()),
        ("offset", offset.to_string()),
        ("delayLevel", level.to_string()),
        ("originTopic", "ignored".to_string()),
        ("unitMode", "false".to_string()),
    ];
    if let Some(max) = max {
        ext.push(("maxReconsumeTimes", max.to_string()));
    }
    let pairs: Vec<(&str, &str)> = ext.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let mut req = request(request_code::CONSUMER_SEND_MSG_BACK, &pairs, b"");
    req.version = version;
    let response = client.request(req);
    assert_eq!(
        response.code,
        response_code::SUCCESS,
        "{:?}",
        response.remark
    );
    response.code
}

#[test]
fn groups_are_created_changed_persisted_and_enforced() {
    let dir = tempfile::tempdir().unwrap();
    let config = broker_config(dir.path());
    let broker = Broker::start(config.clone());
    let mut client = broker.client();
    client.create_topic("GroupTopic", 2);
    client.send_ok("GroupTopic", 0, b"m", &props(&[("TAGS", "a")]));

    // A pull by an unknown group creates it with Java's defaults.
    assert_eq!(
        pull_all(&mut client, "AutoG", "GroupTopic", 0, "*", "TAG").len(),
        1
    );
    let groups = all_groups(&mut client);
    let auto = &groups["subscriptionGroupTable"]["AutoG"];
    assert_eq!(auto["retryMaxTimes"], 16);
    assert_eq!(auto["consumeEnable"], true);
    assert!(groups["subscriptionGroupTable"]["TOOLS_CONSUMER"].is_object());

    // consumeEnable=false refuses pulls with NO_PERMISSION.
    update_group(
        &mut client,
        r#"{"groupName":"Off","consumeEnable":false,"retryMaxTimes":3}"#,
    );
    let response = client.pull(&sub_pull_header("Off", "GroupTopic", 0, 0, "*", "TAG"));
    assert_eq!(
        response.code,
        response_code::NO_PERMISSION,
        "{:?}",
        response.remark
    );
    let bad = client.request(request(
        request_code::UPDATE_AND_CREATE_SUBSCRIPTIONGROUP,
        &[],
        br#"{"groupName":"bad name"}"#,
    ));
    assert_eq!(bad.code, response_code::INVALID_PARAMETER);

    // Delete with cleanOffset drops the group and its offsets.
    client.offset_call(
        request_code::UPDATE_CONSUMER_OFFSET,
        &[
            ("consumerGroup", "AutoG"),
            ("topic", "GroupTopic"),
            ("queueId", "0"),
            ("commitOffset", "1"),
        ],
    );
    ok(client.request(request(
        request_code::DELETE_SUBSCRIPTIONGROUP,
        &[("groupName", "AutoG"), ("cleanOffset", "true")],
        b"",
    )));
    assert!(all_groups(&mut client)["subscriptionGroupTable"]["AutoG"].is_null());
    let offsets = ok(client.request(request(request_code::GET_ALL_CONSUMER_OFFSET, &[], b"")));
    let offsets: serde_json::Value = serde_json::from_slice(&offsets.body).unwrap();
    assert!(
        offsets["offsetTable"]["GroupTopic@AutoG"].is_null(),
        "{offsets}"
    );

    // Settings survive a restart.
    drop(client);
    broker.stop();
    let broker = Broker::start(config.clone());
    let mut client = broker.client();
    let groups = all_groups(&mut client);
    assert_eq!(
        groups["subscriptionGroupTable"]["Off"]["consumeEnable"],
        false
    );
    assert_eq!(groups["subscriptionGroupTable"]["Off"]["retryMaxTimes"], 3);
    drop(client);
    broker.stop();

    // Without auto-creation an unknown group is refused.
    let strict = BrokerConfig {
        auto_create_subscription_group: false,
        ..config
    };
    let broker = Broker::start(strict);
    let mut client = broker.client();
    let response = client.pull(&sub_pull_header("Unknown", "GroupTopic", 0, 0, "*", "TAG"));
    assert_eq!(response.code, response_code::SUBSCRIPTION_GROUP_NOT_EXIST);
    assert_eq!(
        pull_all(&mut client, "TOOLS_CONSUMER", "GroupTopic", 0, "*", "TAG").len(),
        1,
        "known groups still pull"
    );
}

#[test]
fn failed_messages_retry_then_land_in_the_dlq() {
    let dir = tempfile::tempdir().unwrap();
    let broker = Broker::start(broker_config(dir.path()));
    let mut client = broker.client();
    client.create_topic("RetryTopic", 1);
    update_group(&mut client, r#"{"groupName":"G","retryMaxTimes":2}"#);
    client.send_ok(
        "RetryTopic",
        0,
        b"payload",
        &props(&[("TAGS", "t1"), ("UNIQ_KEY", "UNIQ-1"), ("KEYS", "k1")]),
    );
    // The dispatch may reach the queue's owner shard just after the answer.
    let original = wait_for_messages(&mut client, "G", "RetryTopic", 0, 1, WAIT).remove(0);

    // First failure: back on %RETRY%G with reconsume count 1.
    send_back(&mut client, "G", original.physical_offset, 0, 63, None);
    let retries = wait_for_messages(&mut client, "G", "%RETRY%G", 0, 1, WAIT);
    assert_eq!(retries.len(), 1, "the retry message arrived");
    let first = &retries[0];
    assert_eq!(first.topic, "%RETRY%G");
    assert_eq!(first.reconsume_times, 1);
    assert_eq!(first.body, b"payload");
    assert_eq!(first.prop("RETRY_TOPIC"), Some("RetryTopic"));
    assert_eq!(first.prop("UNIQ_KEY"), Some("UNIQ-1"));
    assert_eq!(first.prop("TAGS"), Some("t1"));
    assert_eq!(
        first.prop("ORIGIN_MESSAGE_ID"),
        Some(original.offset_msg_id.as_str())
    );
    assert_eq!(
        first.prop("REAL_TOPIC"),
        Some("%RETRY%G"),
        "went through the schedule"
    );
    assert_eq!(first.prop("DELAY"), None);

    // Second failure (count 1 < 2): retried again, count 2.
    send_back(&mut client, "G", first.physical_offset, 0, 63, Some(0));
    let retries = wait_for_messages(&mut client, "G", "%RETRY%G", 0, 2, WAIT);
    let second = &retries[1];
    assert_eq!(
        second.reconsume_times, 2,
        "maxReconsumeTimes ignored below version 122"
    );
    assert_eq!(second.prop("RETRY_TOPIC"), Some("RetryTopic"));
    assert_eq!(
        second.prop("ORIGIN_MESSAGE_ID"),
        Some(original.offset_msg_id.as_str())
    );

    // Third failure (count 2 >= retryMaxTimes 2): the DLQ, at once.
    send_back(&mut client, "G", second.physical_offset, 0, 63, None);
    // The send-back answer comes before the DLQ queue has the entry.
    let dead = wait_for_messages(&mut client, "G", "%DLQ%G", 0, 1, WAIT);
    assert_eq!(dead.len(), 1);
    assert_eq!(dead[0].reconsume_times, 3);
    assert_eq!(dead[0].prop("UNIQ_KEY"), Some("UNIQ-1"));
    assert_eq!(dead[0].prop("RETRY_TOPIC"), Some("RetryTopic"));
    assert_eq!(dead[0].prop("DELAY"), None);
    let dlq_topic = ok(client.request(request(
        request_code::GET_TOPIC_CONFIG,
        &[("topic", "%DLQ%G")],
        b"",
    )));
    let dlq_topic: serde_json::Value = serde_json::from_slice(&dlq_topic.body).unwrap();
    assert_eq!(dlq_topic["writeQueueNums"], 1);
    assert_eq!(
        wait_for_messages(
            &mut client,
            "G",
            "%RETRY%G",
            0,
            3,
            Duration::from_millis(300)
        )
        .len(),
        2
    );

    // A negative level goes straight to the DLQ; from version 122 the
    // header's maxReconsumeTimes counts.
    send_back(&mut client, "G", original.physical_offset, -1, 63, None);
    send_back(&mut client, "G", original.physical_offset, 0, 453, Some(0));
    // The send-back answer comes before the DLQ queue has the entry.
    let dead = wait_for_messages(&mut client, "G", "%DLQ%G", 0, 1, WAIT);
    assert_eq!(dead.len(), 3);
    assert!(dead[1..].iter().all(|m| m.reconsume_times == 1));

    // A bad offset is an error, not a crash.
    let mut bad = request(
        request_code::CONSUMER_SEND_MSG_BACK,
        &[("group", "G"), ("offset", "999999999"), ("delayLevel", "0")],
        b"",
    );
    bad.version = 63;
    assert_eq!(client.request(bad).code, response_code::SYSTEM_ERROR);
}
