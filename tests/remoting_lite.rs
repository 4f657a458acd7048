//! Lite topics over Remoting (RocketMQ 5.5), as Apache RocketMQ's proxy in
//! cluster mode drives them: LITE_SUBSCRIPTION_CTL keeps a client's lite
//! topics in the broker, POP_LITE_MESSAGE pops only those (in order, each
//! message with Java's INNER_MULTI_DISPATCH / INNER_MULTI_QUEUE_OFFSET),
//! ACK_MESSAGE with `liteTopic` acks what the Java client's handle names,
//! the quota answers LITE_SUBSCRIPTION_QUOTA_EXCEEDED, and the lite admin
//! requests answer from the subscriptions. The Java run (Apache's proxy in
//! front of Ferrocket) is tests/interop-java's `mixed.ApacheProxyTest`.

mod harness;

use ferrocket_protocol::codes::{request_code, response_code};
use ferrocket_protocol::header::{AckMessageRequestHeader, PopLiteMessageResponseHeader};
use ferrocket_protocol::properties::{INNER_MULTI_DISPATCH, INNER_MULTI_QUEUE_OFFSET, LITE_TOPIC};
use ferrocket_protocol::record::records;
use ferrocket_protocol::RemotingCommand;
use harness::requests::{create_topic_request, send_header, send_request};
use harness::{unique_name, Broker, BrokerOpts, Namesrv, RemotingConn};
use serde_json::{json, Value};

const CLIENT: &str = "proxy-client-1";
const INVISIBLE_MS: i64 = 60_000;

fn send_lite(conn: &mut RemotingConn, topic: &str, queue_id: i32, lite: &str, body: &str) {
    let header = ferrocket_protocol::header::SendMessageRequestHeader {
        properties: Some(format!("{LITE_TOPIC}\u{1}{lite}\u{2}")),
        ..send_header("lite-producer", topic, queue_id)
    };
    let answer = conn.request(send_request(&header, body.as_bytes().to_vec()));
    assert_eq!(answer.code, response_code::SUCCESS, "{answer:?}");
}

fn ctl(
    conn: &mut RemotingConn,
    action: &str,
    group: &str,
    topic: &str,
    lites: &[&str],
) -> RemotingCommand {
    ctl_from(conn, action, group, topic, lites, Value::Null)
}

/// LITE_SUBSCRIPTION_CTL with an `offsetOption` (null: none).
fn ctl_from(
    conn: &mut RemotingConn,
    action: &str,
    group: &str,
    topic: &str,
    lites: &[&str],
    offset_option: Value,
) -> RemotingCommand {
    let body = json!({"subscriptionSet": [{
        "action": action, "clientId": CLIENT, "group": group, "topic": topic,
        "liteTopicSet": lites, "version": 0, "offsetOption": offset_option,
    }]});
    let request = RemotingCommand::request(request_code::LITE_SUBSCRIPTION_CTL)
        .with_body(serde_json::to_vec(&body).unwrap());
    conn.request(request)
}

fn pop(conn: &mut RemotingConn, group: &str, topic: &str, poll_ms: i64) -> RemotingCommand {
    let mut request = RemotingCommand::request(request_code::POP_LITE_MESSAGE);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    for (key, value) in [
        ("clientId", CLIENT.to_string()),
        ("consumerGroup", group.to_string()),
        ("topic", topic.to_string()),
        ("maxMsgNum", "32".to_string()),
        ("invisibleTime", INVISIBLE_MS.to_string()),
        ("pollTime", poll_ms.to_string()),
        ("bornTime", now.to_string()),
    ] {
        request.ext_fields.insert(key, value);
    }
    conn.request(request)
}

/// A popped message as Java's client sees it: (body, lite topic, light
/// queue, position, the stored queue id and offset).
struct Popped {
    body: String,
    lite: String,
    lmq: String,
    position: i64,
    queue_id: i32,
    queue_offset: i64,
}

fn popped(answer: &RemotingCommand) -> Vec<Popped> {
    records(&answer.body, false)
        .map(|record| {
            let view = record.unwrap();
            let props = view.properties();
            Popped {
                body: String::from_utf8(view.body.to_vec()).unwrap(),
                lite: props.get(LITE_TOPIC).unwrap().to_string(),
                lmq: props.get(INNER_MULTI_DISPATCH).unwrap().to_string(),
                position: props
                    .get(INNER_MULTI_QUEUE_OFFSET)
                    .unwrap()
                    .parse()
                    .unwrap(),
                queue_id: view.queue_id,
                queue_offset: view.queue_offset,
            }
        })
        .collect()
}

/// ACK_MESSAGE as Apache's proxy sends it for a lite message: the handle
/// the Java client built (queue 0, the position as offset), `liteTopic`.
fn ack(conn: &mut RemotingConn, group: &str, topic: &str, pop_time: i64, message: &Popped) -> i32 {
    let extra = format!(
        "0 {pop_time} {INVISIBLE_MS} 999 0 broker-a 0 {}",
        message.position
    );
    let header = AckMessageRequestHeader {
        consumer_group: group.to_string(),
        topic: topic.to_string(),
        queue_id: 0,
        extra_info: extra,
        offset: message.position,
        lite_topic: Some(message.lite.clone()),
    };
    let mut request = RemotingCommand::request(request_code::ACK_MESSAGE);
    request.ext_fields = header.to_ext();
    conn.request(request).code
}

fn admin(conn: &mut RemotingConn, code: i32, fields: &[(&str, &str)]) -> Value {
    let mut request = RemotingCommand::request(code);
    for (key, value) in fields {
        request.ext_fields.insert(*key, value);
    }
    let answer = conn.request(request);
    assert_eq!(answer.code, response_code::SUCCESS, "{answer:?}");
    serde_json::from_slice(&answer.body).unwrap()
}

#[test]
fn lite_subscriptions_pops_acks_and_admin_over_remoting() {
    let namesrv = Namesrv::start();
    let broker = Broker::start(&namesrv.addr(), BrokerOpts::default());
    let mut conn = broker.connect();
    let topic = unique_name("RemotingLite");
    let group = unique_name("RemotingLiteGroup");
    let create = create_topic_request(&topic, 2).with_ext("attributes", "+message.type=LITE");
    assert_eq!(conn.request(create).code, response_code::SUCCESS);
    send_lite(&mut conn, &topic, 0, "a", "a-0");
    send_lite(&mut conn, &topic, 1, "a", "a-1");
    send_lite(&mut conn, &topic, 0, "b", "b-0");

    // No subscription yet: nothing.
    assert_eq!(
        pop(&mut conn, &group, &topic, 0).code,
        response_code::POLLING_TIMEOUT
    );
    assert_eq!(
        ctl(&mut conn, "PARTIAL_ADD", &group, &topic, &["a"]).code,
        response_code::SUCCESS
    );
    let answer = pop(&mut conn, &group, &topic, 0);
    assert_eq!(answer.code, response_code::SUCCESS, "{answer:?}");
    let header = PopLiteMessageResponseHeader::from_ext(&answer.ext_fields).unwrap();
    assert_eq!(header.revive_qid, 999, "ordered, as Java's lite pops");
    assert_eq!(header.order_count_info.as_deref(), Some("0;0"));
    let mut first = popped(&answer);
    first.sort_by(|x, y| x.body.cmp(&y.body));
    assert_eq!(
        first.iter().map(|m| m.body.as_str()).collect::<Vec<_>>(),
        ["a-0", "a-1"]
    );
    for message in &first {
        assert_eq!(message.lmq, format!("%LMQ%${topic}$a"));
        let packed = (i64::from(message.queue_id) << 47) | message.queue_offset;
        assert_eq!(message.position, packed, "queue and offset in one number");
    }
    // In flight (ordered): nothing more of a until acked.
    assert_eq!(
        pop(&mut conn, &group, &topic, 0).code,
        response_code::POLLING_TIMEOUT
    );
    for message in &first {
        assert_eq!(
            ack(&mut conn, &group, &topic, header.pop_time, message),
            response_code::SUCCESS
        );
    }

    assert_eq!(
        ctl(&mut conn, "PARTIAL_ADD", &group, &topic, &["b"]).code,
        response_code::SUCCESS
    );
    send_lite(&mut conn, &topic, 1, "a", "a-2");
    let second = pop(&mut conn, &group, &topic, 0);
    let second_time = PopLiteMessageResponseHeader::from_ext(&second.ext_fields)
        .unwrap()
        .pop_time;
    let second = popped(&second);
    let mut bodies: Vec<&str> = second.iter().map(|m| m.body.as_str()).collect();
    bodies.sort();
    assert_eq!(bodies, ["a-2", "b-0"], "acked messages do not come again");
    // Ordered: b-0 holds its queue for lite topic b until acked.
    for message in &second {
        assert_eq!(
            ack(&mut conn, &group, &topic, second_time, message),
            response_code::SUCCESS
        );
    }

    // A long poll ends with the message sent while it waits.
    let mut sender = broker.connect();
    let waiting = std::thread::spawn({
        let (group, topic, broker_conn) = (group.clone(), topic.clone(), broker.connect());
        move || {
            let mut conn = broker_conn;
            pop(&mut conn, &group, &topic, 10_000)
        }
    });
    std::thread::sleep(std::time::Duration::from_millis(300));
    send_lite(&mut sender, &topic, 0, "b", "b-1");
    let late = waiting.join().unwrap();
    assert_eq!(late.code, response_code::SUCCESS, "{late:?}");
    assert_eq!(popped(&late)[0].body, "b-1");

    let many: Vec<String> = (0..2001).map(|i| format!("t{i}")).collect();
    let many: Vec<&str> = many.iter().map(String::as_str).collect();
    let refused = ctl(&mut conn, "COMPLETE_ADD", &group, &topic, &many);
    assert_eq!(
        refused.code,
        response_code::LITE_SUBSCRIPTION_QUOTA_EXCEEDED,
        "{refused:?}"
    );

    let info = admin(&mut conn, request_code::GET_BROKER_LITE_INFO, &[]);
    assert_eq!(info["liteSubscriptionCount"], 2, "{info}");
    assert_eq!(info["groupMeta"][&topic], json!([group]), "{info}");
    let client = admin(
        &mut conn,
        request_code::GET_LITE_CLIENT_INFO,
        &[("clientId", CLIENT)],
    );
    assert_eq!(client["liteTopicSet"], json!(["a", "b"]), "{client}");
    assert_eq!(client["group"], json!(group));
    let lite = admin(
        &mut conn,
        request_code::GET_LITE_TOPIC_INFO,
        &[("parentTopic", &topic), ("liteTopic", "b")],
    );
    assert_eq!(
        lite["subscriber"],
        json!([{"clientId": CLIENT, "group": group}]),
        "{lite}"
    );

    // GET_LITE_GROUP_INFO reads the group's lite.bind.topic, as Java's broker.
    let mut bind = RemotingCommand::request(request_code::UPDATE_AND_CREATE_SUBSCRIPTIONGROUP);
    bind.body =
        serde_json::to_vec(&json!({"groupName": group, "attributes": {"lite.bind.topic": topic}}))
            .unwrap()
            .into();
    assert_eq!(conn.request(bind).code, response_code::SUCCESS);
    let info = admin(
        &mut conn,
        request_code::GET_LITE_GROUP_INFO,
        &[("group", &group)],
    );
    assert_eq!(info["parentTopic"], json!(topic), "{info}");

    assert_eq!(
        ctl(&mut conn, "COMPLETE_REMOVE", &group, &topic, &[]).code,
        response_code::SUCCESS
    );
    let info = admin(&mut conn, request_code::GET_BROKER_LITE_INFO, &[]);
    assert_eq!(info["liteSubscriptionCount"], 0, "{info}");
}

/// `offsetOption` POLICY MAX: the lite topic starts after what is already
/// there (every queue, an empty one too); POLICY MIN: at the oldest.
#[test]
fn a_lite_subscription_starts_where_its_offset_option_says() {
    let namesrv = Namesrv::start();
    let broker = Broker::start(&namesrv.addr(), BrokerOpts::default());
    let mut conn = broker.connect();
    let topic = unique_name("RemotingLiteFrom");
    let create = create_topic_request(&topic, 3).with_ext("attributes", "+message.type=LITE");
    assert_eq!(conn.request(create).code, response_code::SUCCESS);
    send_lite(&mut conn, &topic, 0, "a", "old-0");
    send_lite(&mut conn, &topic, 1, "a", "old-1");

    let newest = unique_name("RemotingLiteNewest");
    let max = json!({"type": "POLICY", "value": 2});
    let answer = ctl_from(&mut conn, "PARTIAL_ADD", &newest, &topic, &["a"], max);
    assert_eq!(answer.code, response_code::SUCCESS, "{answer:?}");
    assert_eq!(
        pop(&mut conn, &newest, &topic, 0).code,
        response_code::POLLING_TIMEOUT
    );
    send_lite(&mut conn, &topic, 1, "a", "new-1");
    send_lite(&mut conn, &topic, 2, "a", "new-2");
    let bodies: Vec<String> = popped(&pop(&mut conn, &newest, &topic, 0))
        .into_iter()
        .map(|m| m.body)
        .collect();
    assert_eq!(bodies, ["new-1", "new-2"]);

    let oldest = unique_name("RemotingLiteOldest");
    let min = json!({"type": "POLICY", "value": 1});
    let answer = ctl_from(&mut conn, "PARTIAL_ADD", &oldest, &topic, &["a"], min);
    assert_eq!(answer.code, response_code::SUCCESS, "{answer:?}");
    assert_eq!(popped(&pop(&mut conn, &oldest, &topic, 0)).len(), 4);

    // As Java's 5.5.0 broker: no ACK_LITE_MESSAGE processor.
    let ack_lite = RemotingCommand::request(request_code::ACK_LITE_MESSAGE);
    assert_eq!(
        conn.request(ack_lite).code,
        response_code::REQUEST_CODE_NOT_SUPPORTED
    );
}
