//! Long polling, consumer offsets, restart, heartbeats and subscriptions,
//! registration with a name server.

mod common;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::*;
use ferrocket_protocol::body::{decode_json, ConsumerIdList, RegisterBrokerBody};
use ferrocket_protocol::codes::{request_code, response_code};
use ferrocket_protocol::header::{pull_sys_flag, PullMessageResponseHeader};
use ferrocket_protocol::{FrameDecoder, RemotingCommand};
use ferrocket_runtime::shard::owner_shard;

#[test]
fn long_poll_is_woken_by_a_send_on_another_connection() {
    let dir = tempfile::tempdir().unwrap();
    let broker = Broker::start(config(dir.path(), 2));
    broker.client().create_topic("Wake", 4);
    for queue_id in 0..4 {
        let addr = broker.addr;
        let waiter = std::thread::spawn(move || {
            let mut client = connect(addr);
            let mut header = pull_header("G", "Wake", queue_id, 0, "*", pull_sys_flag::SUSPEND);
            header.suspend_timeout_millis = Some(20_000);
            let started = Instant::now();
            let response = client.pull(&header);
            (response, started.elapsed())
        });
        std::thread::sleep(Duration::from_millis(300));
        let mut producer = broker.client();
        producer.send_ok("Wake", queue_id, b"wake up", &props(&[("TAGS", "t")]));
        let (response, waited) = waiter.join().unwrap();
        assert_eq!(
            response.code,
            response_code::SUCCESS,
            "{:?}",
            response.remark
        );
        let pulled = decode_pulled(&response);
        assert_eq!(pulled.len(), 1);
        assert_eq!(pulled[0].body, b"wake up");
        assert!(
            waited < Duration::from_secs(15),
            "woken by the send, not the timeout ({waited:?})"
        );
    }
    // A held pull with nothing arriving times out with PULL_NOT_FOUND.
    let mut client = broker.client();
    let mut header = pull_header("G", "Wake", 0, 1, "*", pull_sys_flag::SUSPEND);
    header.suspend_timeout_millis = Some(200);
    let response = client.pull(&header);
    assert_eq!(response.code, response_code::PULL_NOT_FOUND);
    let header = PullMessageResponseHeader::from_ext(&response.ext_fields).unwrap();
    assert_eq!((header.next_begin_offset, header.max_offset), (1, 1));
    broker.stop();
}

#[test]
fn restart_keeps_messages_and_committed_offsets() {
    let dir = tempfile::tempdir().unwrap();
    let first = config(dir.path(), 2);
    let port = first.listen_port;
    let broker = Broker::start(first);
    let mut client = broker.client();
    client.create_topic("Durable", 4);
    for i in 0..40 {
        client.send_ok(
            "Durable",
            i % 4,
            format!("m{i}").as_bytes(),
            &props(&[("TAGS", "x")]),
        );
    }
    for queue_id in 0..4 {
        let queue = queue_id.to_string();
        let offset = (queue_id + 3).to_string();
        let response = client.offset_call(
            request_code::UPDATE_CONSUMER_OFFSET,
            &[
                ("consumerGroup", "CG"),
                ("topic", "Durable"),
                ("queueId", &queue),
                ("commitOffset", &offset),
            ],
        );
        assert_eq!(
            response.code,
            response_code::SUCCESS,
            "{:?}",
            response.remark
        );
    }
    // A commit carried by a pull (commit-offset flag) counts too.
    let mut header = pull_header("CG2", "Durable", 1, 0, "*", pull_sys_flag::COMMIT_OFFSET);
    header.commit_offset = 7;
    assert_eq!(client.pull(&header).code, response_code::SUCCESS);
    drop(client);
    broker.stop();

    let mut again = config(dir.path(), 1);
    again.listen_port = port;
    let broker = Broker::start(again);
    let mut client = broker.client();
    for queue_id in 0..4 {
        let queue = queue_id.to_string();
        let committed = client.offset_call(
            request_code::QUERY_CONSUMER_OFFSET,
            &[
                ("consumerGroup", "CG"),
                ("topic", "Durable"),
                ("queueId", &queue),
            ],
        );
        assert_eq!(
            offset_of(&committed),
            i64::from(queue_id + 3),
            "queue {queue_id}"
        );
        let pulled = client.pull_all("G", "Durable", queue_id, "*");
        let bodies: Vec<String> = pulled
            .iter()
            .map(|m| String::from_utf8(m.body.clone()).unwrap())
            .collect();
        let expected: Vec<String> = (0..40)
            .filter(|i| i % 4 == queue_id)
            .map(|i| format!("m{i}"))
            .collect();
        assert_eq!(bodies, expected);
    }
    let committed = client.offset_call(
        request_code::QUERY_CONSUMER_OFFSET,
        &[
            ("consumerGroup", "CG2"),
            ("topic", "Durable"),
            ("queueId", "1"),
        ],
    );
    assert_eq!(offset_of(&committed), 7);
    // New sends continue after the recovered ones.
    let (_, offset, _) = client.send_ok("Durable", 0, b"after", &props(&[]));
    assert_eq!(offset, 10);
    broker.stop();
}

#[test]
fn offsets_for_new_groups_and_queue_bounds() {
    let dir = tempfile::tempdir().unwrap();
    let broker = Broker::start(config(dir.path(), 2));
    let mut client = broker.client();
    client.create_topic("Fresh", 2);
    let query = |client: &mut RemotingConn, queue: &str| {
        client.offset_call(
            request_code::QUERY_CONSUMER_OFFSET,
            &[
                ("consumerGroup", "New"),
                ("topic", "Fresh"),
                ("queueId", queue),
            ],
        )
    };
    // Empty queue: nothing committed, nothing stored.
    assert_eq!(query(&mut client, "0").code, response_code::QUERY_NOT_FOUND);
    client.send_ok("Fresh", 0, b"first", &props(&[]));
    // A new group on a queue whose first message is in memory starts at 0.
    assert_eq!(offset_of(&query(&mut client, "0")), 0);
    let min = client.offset_call(
        request_code::GET_MIN_OFFSET,
        &[("topic", "Fresh"), ("queueId", "0")],
    );
    assert_eq!(offset_of(&min), 0);
    let max = client.offset_call(
        request_code::GET_MAX_OFFSET,
        &[("topic", "Fresh"), ("queueId", "0")],
    );
    assert_eq!(offset_of(&max), 1);
    let unknown = client.offset_call(
        request_code::GET_MAX_OFFSET,
        &[("topic", "Nope"), ("queueId", "0")],
    );
    assert_eq!(offset_of(&unknown), 0);
    // Pulling past the end moves the offset back.
    let response = client.pull(&pull_header("G", "Fresh", 0, 5, "*", 0));
    assert_eq!(response.code, response_code::PULL_OFFSET_MOVED);
    let header = PullMessageResponseHeader::from_ext(&response.ext_fields).unwrap();
    assert_eq!(header.next_begin_offset, 1);
    broker.stop();
}

fn heartbeat(
    client: &mut RemotingConn,
    client_id: &str,
    group: &str,
    topic: &str,
    sub: &str,
) -> RemotingCommand {
    let body = format!(
        r#"{{"clientID":"{client_id}","consumerDataSet":[{{"consumeFromWhere":0,"consumeType":1,
        "groupName":"{group}","messageModel":1,"subscriptionDataSet":[{{"subString":"{sub}",
        "subVersion":"1","topic":"{topic}"}}]}}]}}"#
    );
    client.request(RemotingCommand::request(request_code::HEART_BEAT).with_body(body.into_bytes()))
}

#[test]
fn heartbeat_registers_subscriptions_used_by_pulls() {
    let dir = tempfile::tempdir().unwrap();
    let broker = Broker::start(config(dir.path(), 2));
    let mut client = broker.client();
    client.create_topic("Subs", 4);
    for i in 0..6 {
        let tag = if i % 3 == 0 { "a" } else { "b" };
        client.send_ok(
            "Subs",
            0,
            format!("{i}").as_bytes(),
            &props(&[("TAGS", tag)]),
        );
    }
    // Without the subscription flag and without a heartbeat: refused.
    let mut plain = pull_header("SG", "Subs", 0, 0, "*", 0);
    plain.sys_flag = 0;
    plain.subscription = None;
    assert_eq!(
        client.pull(&plain).code,
        response_code::SUBSCRIPTION_NOT_EXIST
    );

    // Heartbeats from two connections (likely on different shards).
    let mut other = broker.client();
    assert_eq!(
        heartbeat(&mut client, "c1", "SG", "Subs", "a").code,
        response_code::SUCCESS
    );
    assert_eq!(
        heartbeat(&mut other, "c2", "SG", "Subs", "a").code,
        response_code::SUCCESS
    );
    let response = client.pull(&plain);
    assert_eq!(
        response.code,
        response_code::SUCCESS,
        "{:?}",
        response.remark
    );
    let bodies: Vec<Vec<u8>> = decode_pulled(&response)
        .into_iter()
        .map(|m| m.body)
        .collect();
    assert_eq!(bodies, vec![b"0".to_vec(), b"3".to_vec()]);

    // The first member hears that the group changed when the second joined.
    let deadline = Instant::now() + Duration::from_secs(10);
    while !client.notices().iter().any(|n| {
        n.code == request_code::NOTIFY_CONSUMER_IDS_CHANGED
            && n.ext_fields.get("consumerGroup") == Some("SG")
    }) {
        assert!(Instant::now() < deadline, "no NOTIFY_CONSUMER_IDS_CHANGED");
        std::thread::sleep(Duration::from_millis(20));
        client.offset_call(
            request_code::GET_MAX_OFFSET,
            &[("topic", "Subs"), ("queueId", "0")],
        );
    }
    let list = client.offset_call(
        request_code::GET_CONSUMER_LIST_BY_GROUP,
        &[("consumerGroup", "SG")],
    );
    assert_eq!(list.code, response_code::SUCCESS);
    let ids: ConsumerIdList = decode_json(&list.body).unwrap();
    assert_eq!(
        ids.consumer_id_list,
        vec!["c1".to_string(), "c2".to_string()]
    );

    // The retry topic of a clustering group exists after its heartbeat.
    let config = client.offset_call(request_code::GET_TOPIC_CONFIG, &[("topic", "%RETRY%SG")]);
    assert_eq!(config.code, response_code::SUCCESS, "{:?}", config.remark);

    // A closed connection leaves the group; so does an unregistered client.
    drop(other);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let list = client.offset_call(
            request_code::GET_CONSUMER_LIST_BY_GROUP,
            &[("consumerGroup", "SG")],
        );
        let ids: ConsumerIdList = decode_json(&list.body).unwrap();
        if ids.consumer_id_list == vec!["c1".to_string()] {
            break;
        }
        assert!(Instant::now() < deadline, "closed connection still listed");
        std::thread::sleep(Duration::from_millis(20));
    }
    let gone = client.offset_call(
        request_code::UNREGISTER_CLIENT,
        &[("clientID", "c1"), ("consumerGroup", "SG")],
    );
    assert_eq!(gone.code, response_code::SUCCESS);
    let list = client.offset_call(
        request_code::GET_CONSUMER_LIST_BY_GROUP,
        &[("consumerGroup", "SG")],
    );
    assert_eq!(list.code, response_code::SYSTEM_ERROR);
    broker.stop();
}

/// A fake name server: answers every request with SUCCESS and reports each
/// request with the index of the connection it came on.
fn fake_namesrv() -> (u16, mpsc::Receiver<(usize, RemotingCommand)>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for (conn_index, stream) in listener.incoming().enumerate() {
            let Ok(mut stream) = stream else { return };
            let tx = tx.clone();
            std::thread::spawn(move || {
                let decoder = FrameDecoder::default();
                let mut buf = bytes::BytesMut::new();
                let mut chunk = [0u8; 65536];
                loop {
                    while let Ok(Some(frame)) = decoder.next_frame(&mut buf) {
                        let answer =
                            RemotingCommand::response_to(&frame, response_code::SUCCESS, None);
                        let _ = stream.write_all(&answer.to_bytes());
                        if tx.send((conn_index, frame)).is_err() {
                            return;
                        }
                    }
                    match stream.read(&mut chunk) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                }
            });
        }
    });
    (port, rx)
}

/// The body of a REGISTER_BROKER: the broker sends RocketMQ's compressed
/// form, flagged in the header.
fn register_body(request: &RemotingCommand) -> RegisterBrokerBody {
    assert_eq!(request.ext_fields.get("compressed"), Some("true"));
    ferrocket_protocol::body::decode_compressed(&request.body).unwrap()
}

#[test]
fn registers_with_name_servers_and_unregisters_at_shutdown() {
    let (port_a, seen_a) = fake_namesrv();
    let (port_b, seen_b) = fake_namesrv();
    let dir = tempfile::tempdir().unwrap();
    let mut config = config(dir.path(), 2);
    config.namesrv_addr = format!("127.0.0.1:{port_a};127.0.0.1:{port_b}");
    config.broker_name = "broker-test".into();
    let broker = Broker::start(config);
    for seen in [&seen_a, &seen_b] {
        let (_, first) = seen.recv_timeout(Duration::from_secs(10)).unwrap();
        assert_eq!(first.code, request_code::REGISTER_BROKER);
        assert_eq!(first.ext_fields.get("brokerName"), Some("broker-test"));
        let body = register_body(&first);
        assert!(body
            .topic_config_serialize_wrapper
            .topic_config_table
            .contains_key("TBW102"));
    }
    // A topic change triggers a new registration carrying the topic.
    broker.client().create_topic("Announced", 2);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let (conn_index, next) = seen_a.recv_timeout(Duration::from_secs(10)).unwrap();
        // Name servers drop a broker when its connection closes: one
        // connection is kept for every call.
        assert_eq!(conn_index, 0, "a second connection was opened");
        if next.code == request_code::REGISTER_BROKER {
            let body = register_body(&next);
            if body
                .topic_config_serialize_wrapper
                .topic_config_table
                .contains_key("Announced")
            {
                break;
            }
        }
        assert!(Instant::now() < deadline);
    }
    broker.stop();
    let codes: Vec<i32> = seen_b.try_iter().map(|(_, c)| c.code).collect();
    assert_eq!(
        codes.last(),
        Some(&request_code::UNREGISTER_BROKER),
        "{codes:?}"
    );
}

#[test]
fn queues_of_one_topic_spread_over_two_shards() {
    let owners: std::collections::BTreeSet<usize> =
        (0..8).map(|q| owner_shard("TopicTest", q, 2)).collect();
    assert_eq!(owners.len(), 2);
}

#[test]
fn topic_admin_and_runtime_info() {
    let dir = tempfile::tempdir().unwrap();
    let broker = Broker::start(config(dir.path(), 2));
    let mut client = broker.client();
    client.create_topic("Admin", 3);
    client.send_ok("Admin", 2, b"x", &props(&[]));
    let committed = client.offset_call(
        request_code::UPDATE_CONSUMER_OFFSET,
        &[
            ("consumerGroup", "AG"),
            ("topic", "Admin"),
            ("queueId", "2"),
            ("commitOffset", "1"),
        ],
    );
    assert_eq!(committed.code, response_code::SUCCESS);

    let all = client.request(RemotingCommand::request(request_code::GET_ALL_TOPIC_CONFIG));
    assert_eq!(all.code, response_code::SUCCESS);
    let table: ferrocket_protocol::body::TopicConfigSerializeWrapper =
        decode_json(&all.body).unwrap();
    assert_eq!(table.topic_config_table["Admin"].write_queue_nums, 3);
    assert!(table.topic_config_table.contains_key("TBW102"));

    let info = client.request(RemotingCommand::request(
        request_code::GET_BROKER_RUNTIME_INFO,
    ));
    assert_eq!(info.code, response_code::SUCCESS);
    let kv: ferrocket_protocol::body::KvTable = decode_json(&info.body).unwrap();
    assert_eq!(kv.table["msgPutTotalTodayNow"], "1");

    let system = client.offset_call(request_code::DELETE_TOPIC_IN_BROKER, &[("topic", "TBW102")]);
    assert_eq!(system.code, response_code::SYSTEM_ERROR);
    let deleted = client.offset_call(request_code::DELETE_TOPIC_IN_BROKER, &[("topic", "Admin")]);
    assert_eq!(deleted.code, response_code::SUCCESS);
    let gone = client.offset_call(request_code::GET_TOPIC_CONFIG, &[("topic", "Admin")]);
    assert_eq!(gone.code, response_code::TOPIC_NOT_EXIST);
    // Its offsets went with it.
    client.create_topic("Admin", 3);
    let offset = client.offset_call(
        request_code::QUERY_CONSUMER_OFFSET,
        &[
            ("consumerGroup", "AG"),
            ("topic", "Admin"),
            ("queueId", "2"),
            ("setZeroIfNotFound", "false"),
        ],
    );
    assert_eq!(offset.code, response_code::QUERY_NOT_FOUND);
    broker.stop();
}
