//! Requests mqadmin sends that the broker answers for it, over raw
//! Remoting in the Java admin tool's shapes: GET_PRODUCER_CONNECTION_LIST
//! (204, `producerConnection`), GET_ALL_PRODUCER_INFO (328, `producer`),
//! GET_SYSTEM_TOPIC_LIST_FROM_BROKER (305, `exportMetadata`), and a
//! refusal that says what is not supported and why (`cleanExpiredCQ`).
//! tests/interop-java's `v5.mqadmin` suite runs mqadmin itself.

mod harness;

use ferrocket_protocol::codes::{request_code, response_code};
use ferrocket_protocol::RemotingCommand;
use harness::{unique_name, BrokerOpts, RemotingConn};

fn producer_heartbeat(conn: &mut RemotingConn, client_id: &str, group: &str) {
    let body = format!(
        r#"{{"clientID":"{client_id}","producerDataSet":[{{"groupName":"{group}"}}],"consumerDataSet":[]}}"#
    );
    let mut request = RemotingCommand::request(request_code::HEART_BEAT).with_body(body);
    request.version = 453;
    let answer = conn.request(request);
    assert_eq!(answer.code, response_code::SUCCESS, "{answer:?}");
}

fn json(answer: &RemotingCommand) -> serde_json::Value {
    serde_json::from_slice(&answer.body).unwrap_or_else(|e| panic!("{e}: {answer:?}"))
}

#[test]
fn producers_are_listed_from_their_heartbeats() {
    let namesrv = harness::Namesrv::start();
    let broker = harness::Broker::start(&namesrv.addr(), BrokerOpts::default());
    let mut conn = broker.connect();
    let group = unique_name("PG");
    producer_heartbeat(&mut conn, "127.0.0.1@p1", &group);

    let list = conn.request(RemotingCommand::request(204).with_ext("producerGroup", &group));
    assert_eq!(list.code, response_code::SUCCESS, "{list:?}");
    let body = json(&list);
    let connections = body["connectionSet"].as_array().unwrap();
    assert_eq!(connections.len(), 1, "{body}");
    assert_eq!(connections[0]["clientId"], "127.0.0.1@p1");
    assert_eq!(connections[0]["version"], 453);
    assert!(connections[0]["clientAddr"]
        .as_str()
        .unwrap()
        .starts_with("127.0.0.1:"));
    assert!(connections[0]["language"].is_string());

    let unknown = conn.request(RemotingCommand::request(204).with_ext("producerGroup", "NoSuchPG"));
    assert_eq!(unknown.code, response_code::SYSTEM_ERROR);
    assert_eq!(
        unknown.remark.as_deref(),
        Some("the producer group[NoSuchPG] not exist")
    );
    let missing = conn.request(RemotingCommand::request(204));
    assert_ne!(missing.code, response_code::SUCCESS, "no producerGroup");

    // `ferrocket admin producer connection` (mqadmin's producerConnection).
    let ns = namesrv.addr();
    let admin = |group: &str| {
        std::process::Command::new(harness::ferrocket_bin())
            .args(["admin", "-n", &ns, "producer", "connection", "-g", group])
            .output()
            .unwrap()
    };
    let listed = harness::wait_for(harness::ready_timeout(), || {
        Some(admin(&group)).filter(|o| o.status.success())
    })
    .expect("producer connection never succeeded");
    let printed = String::from_utf8_lossy(&listed.stdout).into_owned();
    assert!(printed.starts_with("#"), "{printed}");
    let row: Vec<&str> = printed
        .lines()
        .nth(1)
        .unwrap_or("")
        .split_whitespace()
        .collect();
    assert_eq!(row.first(), Some(&"1"), "{printed}");
    assert_eq!(row.get(1), Some(&"127.0.0.1@p1"), "{printed}");
    assert!(
        row.get(2).is_some_and(|a| a.starts_with("127.0.0.1:")),
        "{printed}"
    );
    assert_eq!(row.last(), Some(&"453"), "{printed}");
    let offline = admin("NoSuchPG");
    let said = String::from_utf8_lossy(&offline.stderr).into_owned();
    assert!(
        !offline.status.success() && said.contains("NoSuchPG"),
        "{said}"
    );

    let all = conn.request(RemotingCommand::request(328));
    assert_eq!(all.code, response_code::SUCCESS, "{all:?}");
    let body = json(&all);
    let producers = body["data"][group.as_str()].as_array().unwrap();
    assert_eq!(producers.len(), 1, "{body}");
    assert_eq!(producers[0]["clientId"], "127.0.0.1@p1");
    assert!(producers[0]["remoteIP"]
        .as_str()
        .unwrap()
        .starts_with("/127.0.0.1:"));
    assert!(producers[0]["lastUpdateTimestamp"].as_i64().unwrap() > 0);
}

#[test]
fn system_topics_and_considered_refusals() {
    let namesrv = harness::Namesrv::start();
    let broker = harness::Broker::start(&namesrv.addr(), BrokerOpts::default());
    let mut conn = broker.connect();

    let system = conn.request(RemotingCommand::request(305));
    assert_eq!(system.code, response_code::SUCCESS, "{system:?}");
    let body = json(&system);
    let topics: Vec<&str> = body["topicList"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t.as_str())
        .collect();
    assert!(topics.contains(&"TBW102"), "{topics:?}");
    assert!(topics.contains(&"SCHEDULE_TOPIC_XXXX"), "{topics:?}");

    let clean = conn.request(RemotingCommand::request(306));
    assert_eq!(clean.code, response_code::REQUEST_CODE_NOT_SUPPORTED);
    let remark = clean.remark.unwrap_or_default();
    assert!(remark.contains("CLEAN_EXPIRED_CONSUMEQUEUE"), "{remark}");
    assert!(remark.contains("not supported by Ferrocket"), "{remark}");
}

#[test]
fn topics_and_groups_by_the_batch() {
    let namesrv = harness::Namesrv::start();
    let broker = harness::Broker::start(&namesrv.addr(), BrokerOpts::default());
    let mut conn = broker.connect();
    let (first, second) = (unique_name("ListT"), unique_name("ListT"));
    let topics = format!(
        r#"{{"topicConfigList":[{{"topicName":"{first}","readQueueNums":2,"writeQueueNums":2,"perm":6}},{{"topicName":"{second}","readQueueNums":1,"writeQueueNums":1,"perm":6}}]}}"#
    );
    let made = conn.request(RemotingCommand::request(18).with_body(topics));
    assert_eq!(made.code, response_code::SUCCESS, "{made:?}");
    for topic in [&first, &second] {
        let config = conn.request(
            RemotingCommand::request(request_code::GET_TOPIC_CONFIG).with_ext("topic", topic),
        );
        assert_eq!(config.code, response_code::SUCCESS, "{topic}: {config:?}");
    }
    let bad = format!(
        r#"{{"topicConfigList":[{{"topicName":"{}","writeQueueNums":1}},{{"topicName":"SCHEDULE_TOPIC_XXXX"}}]}}"#,
        unique_name("NotMadeT")
    );
    let refused = conn.request(RemotingCommand::request(18).with_body(bad));
    assert_ne!(
        refused.code,
        response_code::SUCCESS,
        "a system topic in the batch"
    );

    let group = unique_name("ListG");
    let groups = format!(r#"{{"groupConfigList":[{{"groupName":"{group}","retryMaxTimes":5}}]}}"#);
    let made = conn.request(RemotingCommand::request(225).with_body(groups));
    assert_eq!(made.code, response_code::SUCCESS, "{made:?}");
    let all = conn.request(RemotingCommand::request(
        request_code::GET_ALL_SUBSCRIPTIONGROUP_CONFIG,
    ));
    let table = json(&all);
    assert_eq!(
        table["subscriptionGroupTable"][group.as_str()]["retryMaxTimes"],
        5
    );
    let bad = conn.request(
        RemotingCommand::request(225)
            .with_body(r#"{"groupConfigList":[{"groupName":"bad group!"}]}"#),
    );
    assert_eq!(bad.code, response_code::INVALID_PARAMETER, "{bad:?}");
}

#[test]
fn runtime_info_has_the_morning_totals() {
    let namesrv = harness::Namesrv::start();
    let broker = harness::Broker::start(&namesrv.addr(), BrokerOpts::default());
    let mut conn = broker.connect();
    let info = conn.request(RemotingCommand::request(
        request_code::GET_BROKER_RUNTIME_INFO,
    ));
    let table = &json(&info)["table"];
    for key in [
        "msgPutTotalTodayMorning",
        "msgPutTotalYesterdayMorning",
        "msgGetTotalTodayMorning",
        "msgGetTotalYesterdayMorning",
    ] {
        let value = table[key]
            .as_str()
            .unwrap_or_else(|| panic!("{key}: {table}"));
        assert!(value.parse::<u64>().is_ok(), "{key}={value}");
    }
}

/// The timer's place in Java's TimerCheckpoint: seven big-endian longs.
fn checkpoint_longs(conn: &mut RemotingConn) -> Vec<i64> {
    let answer = conn.request(RemotingCommand::request(60));
    assert_eq!(answer.code, response_code::SUCCESS, "{answer:?}");
    assert_eq!(answer.body.len(), 56, "{answer:?}");
    answer
        .body
        .chunks(8)
        .map(|c| i64::from_be_bytes(c.try_into().unwrap()))
        .collect()
}

/// QUERY_CONSUME_QUEUE (321, mqadmin's queryCq) with Java's body and
/// remarks; GET_TIMER_CHECK_POINT (60) as a Java slave reads it; and
/// GET_TIMER_METRICS (61) refused with the reason.
#[test]
fn consume_queue_entries_and_the_timer_checkpoint() {
    use harness::requests::{create_topic, send_header, send_request};

    let namesrv = harness::Namesrv::start();
    let broker = harness::Broker::start(&namesrv.addr(), BrokerOpts::default());
    let mut conn = broker.connect();
    let topic = unique_name("CqT");
    create_topic(&mut conn, &topic, 2);
    let mut header = send_header("PG", &topic, 0);
    header.properties = Some("TAGS\u{1}TagA\u{2}".into());
    for i in 0..3 {
        let sent = conn.request(send_request(&header, format!("cq-{i}")));
        assert_eq!(sent.code, response_code::SUCCESS, "{sent:?}");
    }
    let query = |index: i64, group: Option<&str>| {
        let mut request = RemotingCommand::request(321)
            .with_ext("topic", &topic)
            .with_ext("queueId", 0)
            .with_ext("index", index)
            .with_ext("count", 5);
        if let Some(group) = group {
            request = request.with_ext("consumerGroup", group);
        }
        request
    };
    let answer = conn.request(query(1, Some("NobodyCG")));
    assert_eq!(answer.code, response_code::SUCCESS, "{answer:?}");
    let body = json(&answer);
    assert_eq!(body["minQueueIndex"], 0, "{body}");
    assert_eq!(body["maxQueueIndex"], 3, "{body}");
    assert_eq!(
        body["filterData"],
        format!("NobodyCG@{topic} is not online!")
    );
    let entries = body["queueData"].as_array().unwrap();
    assert_eq!(entries.len(), 2, "from index 1 to the end: {body}");
    let offsets: Vec<i64> = entries
        .iter()
        .map(|e| e["physicOffset"].as_i64().unwrap())
        .collect();
    assert!(offsets[0] < offsets[1], "{body}");
    assert!(entries[0]["physicSize"].as_i64().unwrap() > 0, "{body}");
    assert!(
        entries[0]["tagsCode"].is_i64() && entries[0]["eval"] == false,
        "{body}"
    );

    let past = conn.request(query(7, None));
    assert_eq!(past.code, response_code::SUCCESS);
    assert!(past.body.is_empty());
    assert_eq!(
        past.remark.as_deref(),
        Some(format!("Index 7 of 0@{topic} is not exist!").as_str())
    );
    let absent = conn.request(
        RemotingCommand::request(321)
            .with_ext("topic", "NoSuchCqT")
            .with_ext("queueId", 0)
            .with_ext("index", 0)
            .with_ext("count", 1),
    );
    assert_eq!(absent.code, response_code::SYSTEM_ERROR);
    assert_eq!(absent.remark.as_deref(), Some("0@NoSuchCqT is not exist!"));

    // The checkpoint's lastTimerQueueOffset (and masterTimerQueueOffset)
    // move past a timer message once the timer takes it in.
    let before = checkpoint_longs(&mut conn);
    assert_eq!(before[2], before[3], "{before:?}");
    let mut timed = send_header("PG", &topic, 0);
    timed.properties = Some("TIMER_DELAY_SEC\u{1}3600\u{2}".into());
    let sent = conn.request(send_request(&timed, "later"));
    assert_eq!(sent.code, response_code::SUCCESS, "{sent:?}");
    let after = harness::wait_for(harness::ready_timeout(), || {
        Some(checkpoint_longs(&mut conn)).filter(|l| l[2] == before[2] + 1)
    });
    let after = after.expect("the timer checkpoint never moved");
    assert!(after[0] >= before[0], "lastReadTimeMs never goes back");

    let metrics = conn.request(RemotingCommand::request(61));
    assert_eq!(metrics.code, response_code::REQUEST_CODE_NOT_SUPPORTED);
    let remark = metrics.remark.unwrap_or_default();
    assert!(
        remark.contains("GET_TIMER_METRICS") && remark.contains("per topic"),
        "{remark}"
    );
}
