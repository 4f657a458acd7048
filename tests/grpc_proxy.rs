//! `ferrocket proxy` answered through the generated v5 client (tonic), for
//! what the Python client's happy path does not reach: the proxy's limits
//! and error codes, the offset calls, and forwarding to the dead-letter
//! queue. The official clients' runs are in tests/interop-v5.

mod harness;

use ferrocket_grpc::pb::{self, Code};
use ferrocket_protocol::codes::{request_code, response_code};
use ferrocket_protocol::RemotingCommand;
use harness::grpc::{connect, request, resource, start_proxy, Client};
use harness::process::free_port;
use harness::remoting::{route_request, FakeBroker};
use harness::requests::create_topic;
use harness::{unique_name, Broker, BrokerOpts, Namesrv};

const QUEUES: i32 = 2;

/// Every call here comes from one client.
const CLIENT_ID: &str = "grpc-proxy-test";

fn code(status: &Option<pb::Status>) -> i32 {
    status.as_ref().map_or(-1, |s| s.code)
}

fn message(topic: &str, id: &str, body: Vec<u8>) -> pb::Message {
    pb::Message {
        topic: resource(topic),
        system_properties: Some(pb::SystemProperties {
            message_id: id.to_string(),
            message_type: pb::MessageType::Normal as i32,
            ..Default::default()
        }),
        body,
        ..Default::default()
    }
}

async fn send(client: &mut Client, message: pb::Message) -> pb::SendMessageResponse {
    let request = request(
        CLIENT_ID,
        pb::SendMessageRequest {
            messages: vec![message],
        },
    );
    client.send_message(request).await.unwrap().into_inner()
}

async fn receive(
    client: &mut Client,
    group: &str,
    topic: &str,
    invisible_ms: i64,
) -> Vec<pb::ReceiveMessageResponse> {
    let request = request(
        CLIENT_ID,
        pb::ReceiveMessageRequest {
            group: resource(group),
            message_queue: Some(pb::MessageQueue {
                topic: resource(topic),
                id: -1,
                ..Default::default()
            }),
            batch_size: 32,
            invisible_duration: Some(ferrocket_grpc::convert::duration(invisible_ms)),
            long_polling_timeout: Some(ferrocket_grpc::convert::duration(5_000)),
            ..Default::default()
        },
    );
    let mut stream = client.receive_message(request).await.unwrap().into_inner();
    let mut items = Vec::new();
    while let Some(item) = stream.message().await.unwrap() {
        items.push(item);
    }
    items
}

fn popped(items: &[pb::ReceiveMessageResponse]) -> Vec<pb::Message> {
    items
        .iter()
        .filter_map(|item| match &item.content {
            Some(pb::receive_message_response::Content::Message(m)) => Some(m.clone()),
            _ => None,
        })
        .collect()
}

fn first_status(items: &[pb::ReceiveMessageResponse]) -> i32 {
    match items.first().and_then(|i| i.content.as_ref()) {
        Some(pb::receive_message_response::Content::Status(s)) => s.code,
        _ => -1,
    }
}

fn queue(topic: &str, broker: &str, id: i32) -> Option<pb::MessageQueue> {
    Some(pb::MessageQueue {
        topic: resource(topic),
        id,
        broker: Some(pb::Broker {
            name: broker.to_string(),
            ..Default::default()
        }),
        ..Default::default()
    })
}

/// The Remoting max offset of queue 0 of `topic` on the broker.
fn max_offset(broker: &Broker, topic: &str) -> i64 {
    let answer = broker.connect().request(
        RemotingCommand::request(request_code::GET_MAX_OFFSET)
            .with_ext("topic", topic)
            .with_ext("queueId", 0),
    );
    assert_eq!(answer.code, response_code::SUCCESS, "{answer:?}");
    answer.ext_fields.get("offset").unwrap().parse().unwrap()
}

#[test]
fn proxy_limits_offsets_and_dead_letters() {
    let namesrv = Namesrv::start();
    let broker_name = unique_name("grpc-broker");
    let broker = Broker::start(
        &namesrv.addr(),
        BrokerOpts {
            shards: Some(1),
            broker_name: Some(broker_name.clone()),
            ..BrokerOpts::default()
        },
    );
    let home = tempfile::tempdir().unwrap();
    let proxy = start_proxy(&namesrv.addr(), home.path(), &[]);
    let topic = unique_name("GrpcTopic");
    create_topic(&mut broker.connect(), &topic, QUEUES);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let mut client = connect(proxy.addr()).await;

        // No client id: refused before anything is done.
        let bare = tonic::Request::new(pb::HeartbeatRequest::default());
        let refused = client.heartbeat(bare).await.unwrap_err();
        assert_eq!(refused.code(), tonic::Code::InvalidArgument);

        // Routes: unknown topics, and every queue addressed to the proxy.
        let unknown = request(
            CLIENT_ID,
            pb::QueryRouteRequest {
                topic: resource("NoSuchTopicAnywhere"),
                endpoints: None,
            },
        );
        let unknown = client.query_route(unknown).await.unwrap().into_inner();
        assert_eq!(code(&unknown.status), Code::TopicNotFound as i32);
        // The proxy says so in its log, where a user looks.
        let said = "a v5 client asked for the route of topic `NoSuchTopicAnywhere`";
        let logged = harness::wait_for(std::time::Duration::from_secs(5), || {
            proxy.output().contains(said).then_some(())
        });
        assert!(logged.is_some(), "not logged:\n{}", proxy.output());
        let route = request(
            CLIENT_ID,
            pb::QueryRouteRequest {
                topic: resource(&topic),
                endpoints: None,
            },
        );
        let route = client.query_route(route).await.unwrap().into_inner();
        assert_eq!(code(&route.status), Code::Ok as i32);
        assert_eq!(route.message_queues.len(), QUEUES as usize);
        assert!(route
            .message_queues
            .iter()
            .all(|q| q.permission == pb::Permission::ReadWrite as i32));

        // Send limits, each with its code; nothing reaches the broker.
        let large = send(
            &mut client,
            message(&topic, "id-large", vec![0; (4 << 20) + 1]),
        )
        .await;
        assert_eq!(code(&large.status), Code::MessageBodyTooLarge as i32);
        let mut reserved = message(&topic, "id-reserved", b"x".to_vec());
        reserved
            .user_properties
            .insert("UNIQ_KEY".into(), "forged".into());
        let reserved = send(&mut client, reserved).await;
        assert_eq!(
            code(&reserved.status),
            Code::IllegalMessagePropertyKey as i32
        );
        let nameless = send(&mut client, message(&topic, "", b"x".to_vec())).await;
        assert_eq!(code(&nameless.status), Code::IllegalMessageId as i32);

        // Receive limits and a bad handle.
        let group = unique_name("GrpcGroup");
        let short = receive(&mut client, &group, &topic, 1_000).await;
        assert_eq!(first_status(&short), Code::IllegalInvisibleTime as i32);
        let ack = request(
            CLIENT_ID,
            pb::AckMessageRequest {
                group: resource(&group),
                topic: resource(&topic),
                entries: vec![pb::AckMessageEntry {
                    message_id: "x".into(),
                    receipt_handle: "not a handle".into(),
                    lite_topic: None,
                }],
            },
        );
        let ack = client.ack_message(ack).await.unwrap().into_inner();
        assert_eq!(code(&ack.status), Code::InvalidReceiptHandle as i32);

        // Offsets: the queue's ends and a group's stored offset.
        for i in 0..6 {
            let sent = send(
                &mut client,
                message(&topic, &format!("id-{i}"), b"m".to_vec()),
            )
            .await;
            assert_eq!(code(&sent.status), Code::Ok as i32, "{sent:?}");
        }
        let end = request(
            CLIENT_ID,
            pb::QueryOffsetRequest {
                message_queue: queue(&topic, &broker_name, 0),
                query_offset_policy: pb::QueryOffsetPolicy::End as i32,
                timestamp: None,
            },
        );
        let end = client.query_offset(end).await.unwrap().into_inner();
        assert_eq!(code(&end.status), Code::Ok as i32);
        assert_eq!(end.offset, 3, "six messages round-robin over two queues");
        let missing = request(
            CLIENT_ID,
            pb::GetOffsetRequest {
                group: resource(&group),
                message_queue: queue(&topic, &broker_name, 0),
            },
        );
        let missing = client.get_offset(missing).await.unwrap().into_inner();
        assert_eq!(code(&missing.status), Code::OffsetNotFound as i32);
        let update = request(
            CLIENT_ID,
            pb::UpdateOffsetRequest {
                group: resource(&group),
                message_queue: queue(&topic, &broker_name, 0),
                offset: 2,
            },
        );
        let update = client.update_offset(update).await.unwrap().into_inner();
        assert_eq!(code(&update.status), Code::Ok as i32);
        let stored = request(
            CLIENT_ID,
            pb::GetOffsetRequest {
                group: resource(&group),
                message_queue: queue(&topic, &broker_name, 0),
            },
        );
        let stored = client.get_offset(stored).await.unwrap().into_inner();
        assert_eq!((code(&stored.status), stored.offset), (Code::Ok as i32, 2));

        // PullMessage: the three messages of queue 0, then where to go on.
        let pull = request(
            CLIENT_ID,
            pb::PullMessageRequest {
                group: resource(&group),
                message_queue: queue(&topic, &broker_name, 0),
                offset: 0,
                batch_size: 32,
                filter_expression: None,
                long_polling_timeout: None,
            },
        );
        let mut stream = client.pull_message(pull).await.unwrap().into_inner();
        let (mut pulled, mut next) = (0, None);
        while let Some(item) = stream.message().await.unwrap() {
            match item.content {
                Some(pb::pull_message_response::Content::Message(_)) => pulled += 1,
                Some(pb::pull_message_response::Content::NextOffset(n)) => next = Some(n),
                _ => {}
            }
        }
        assert_eq!((pulled, next), (3, Some(3)));

        // A received message forwarded to the dead-letter queue lands in
        // %DLQ%group and is not delivered again.
        let dlq_group = unique_name("DlqGroup");
        let mut got = Vec::new();
        for _ in 0..5 {
            got.extend(popped(
                &receive(&mut client, &dlq_group, &topic, 10_000).await,
            ));
            if got.len() >= 6 {
                break;
            }
        }
        assert_eq!(got.len(), 6, "every message received once");
        let victim = &got[0];
        let sys = victim.system_properties.as_ref().unwrap();
        let forward = request(
            CLIENT_ID,
            pb::ForwardMessageToDeadLetterQueueRequest {
                group: resource(&dlq_group),
                topic: resource(&topic),
                receipt_handle: sys.receipt_handle.clone().unwrap(),
                message_id: sys.message_id.clone(),
                delivery_attempt: 1,
                max_delivery_attempts: 16,
                lite_topic: None,
            },
        );
        let forward = client
            .forward_message_to_dead_letter_queue(forward)
            .await
            .unwrap()
            .into_inner();
        assert_eq!(code(&forward.status), Code::Ok as i32, "{forward:?}");
        assert_eq!(max_offset(&broker, &format!("%DLQ%{dlq_group}")), 1);
    });
    drop(proxy);
}

/// A send while the topic's broker set has no master (a name server between
/// a master's death and its successor's registration) is refused with
/// FORBIDDEN, and that masterless route is not kept: the first send after a
/// master registers goes through, though the route TTL (30 s) has not run.
#[test]
fn proxy_rereads_a_route_that_had_no_master() {
    let namesrv = Namesrv::start();
    let broker_name = unique_name("grpc-failover");
    let topic = unique_name("GrpcFailover");
    let slave = FakeBroker {
        cluster: "DefaultCluster".to_string(),
        name: broker_name.clone(),
        addr: format!("127.0.0.1:{}", free_port()),
        id: 1,
        topics: vec![(topic.clone(), QUEUES)],
    };
    // The route of a dead master's set: queues (from the master's
    // registration) and a slave, no master.
    let dead_master = FakeBroker {
        addr: format!("127.0.0.1:{}", free_port()),
        id: 0,
        ..slave.clone()
    };
    // Kept open: the name server drops a broker whose connection closes.
    let mut slave_conn = namesrv.connect();
    for (conn, request) in [
        (&mut slave_conn, slave.register_request()),
        (&mut namesrv.connect(), dead_master.register_request()),
        (&mut namesrv.connect(), dead_master.unregister_request()),
    ] {
        let answer = conn.request(request);
        assert_eq!(answer.code, response_code::SUCCESS, "{answer:?}");
    }
    let home = tempfile::tempdir().unwrap();
    let proxy = start_proxy(&namesrv.addr(), home.path(), &[]);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let mut client = connect(proxy.addr()).await;
        let refused = send(&mut client, message(&topic, "id-no-master", b"x".to_vec())).await;
        assert_eq!(code(&refused.status), Code::Forbidden as i32, "{refused:?}");

        let master = Broker::start(
            &namesrv.addr(),
            BrokerOpts {
                shards: Some(1),
                broker_name: Some(broker_name.clone()),
                ..BrokerOpts::default()
            },
        );
        create_topic(&mut master.connect(), &topic, QUEUES);
        let named = harness::wait_for(harness::ready_timeout(), || {
            let route = namesrv.connect().request(route_request(&topic));
            String::from_utf8_lossy(&route.body)
                .contains(&master.addr())
                .then_some(())
        });
        assert!(named.is_some(), "the route never named the master");
        let sent = send(&mut client, message(&topic, "id-master", b"x".to_vec())).await;
        assert_eq!(code(&sent.status), Code::Ok as i32, "{sent:?}");
    });
    drop(slave_conn);
}
