//! Receipt-handle auto-renew in `ferrocket proxy`, through the generated v5
//! client: a push consumer's messages stay invisible past the invisible
//! time while it holds them, its ack with the handle it received lands,
//! the messages it still holds when its Telemetry stream ends come back
//! soon, and renewal stops after `renewMaxTimeMillis`. The Java client's
//! run is tests/interop-java's `grpc.AutoRenewTest`.

mod harness;

use std::time::Duration;

use ferrocket_grpc::convert::duration;
use ferrocket_grpc::pb::{self, Code};
use harness::grpc::{connect, request, resource, start_proxy, Client};
use harness::process::ServerProcess;
use harness::requests::create_topic;
use harness::{unique_name, Broker, BrokerOpts, Namesrv};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;

/// The proxy's auto-renew settings: 10 s invisible, looked at every second.
const RENEW_SETTINGS: [&str; 3] = [
    "defaultInvisibleTimeMills=10000",
    "renewSchedulePeriodMillis=1000",
    "invisibleTimeMillisWhenClear=1000",
];

struct Cluster {
    _namesrv: Namesrv,
    _broker: Broker,
    proxy: ServerProcess,
    topic: String,
    _home: tempfile::TempDir,
}

fn start(extra: &[&str]) -> Cluster {
    let namesrv = Namesrv::start();
    let broker = Broker::start(
        &namesrv.addr(),
        BrokerOpts {
            shards: Some(1),
            ..BrokerOpts::default()
        },
    );
    let topic = unique_name("RenewTopic");
    create_topic(&mut broker.connect(), &topic, 1);
    let home = tempfile::tempdir().unwrap();
    let settings: Vec<&str> = RENEW_SETTINGS.iter().chain(extra).copied().collect();
    let proxy = start_proxy(&namesrv.addr(), home.path(), &settings);
    Cluster {
        _namesrv: namesrv,
        _broker: broker,
        proxy,
        topic,
        _home: home,
    }
}

/// Opens `client_id`'s Telemetry stream as a push consumer of `group`;
/// dropping the sender ends it.
async fn push_consumer_session(
    client: &mut Client,
    client_id: &str,
    group: &str,
) -> mpsc::Sender<pb::TelemetryCommand> {
    let (sender, receiver) = mpsc::channel(4);
    let settings = pb::Settings {
        client_type: Some(pb::ClientType::PushConsumer as i32),
        pub_sub: Some(pb::settings::PubSub::Subscription(pb::Subscription {
            group: resource(group),
            ..Default::default()
        })),
        ..Default::default()
    };
    sender
        .send(pb::TelemetryCommand {
            status: None,
            command: Some(pb::telemetry_command::Command::Settings(settings)),
        })
        .await
        .unwrap();
    let stream = request(client_id, ReceiverStream::new(receiver));
    let mut replies = client.telemetry(stream).await.unwrap().into_inner();
    let first = replies.message().await.unwrap().expect("settings answered");
    assert_eq!(first.status.map(|s| s.code), Some(Code::Ok as i32));
    tokio::spawn(async move { while let Ok(Some(_)) = replies.message().await {} });
    sender
}

async fn send(client: &mut Client, topic: &str, body: &str) {
    let message = pb::Message {
        topic: resource(topic),
        system_properties: Some(pb::SystemProperties {
            message_id: unique_name("id"),
            message_type: pb::MessageType::Normal as i32,
            ..Default::default()
        }),
        body: body.as_bytes().to_vec(),
        ..Default::default()
    };
    let sent = request(
        "renew-producer",
        pb::SendMessageRequest {
            messages: vec![message],
        },
    );
    let sent = client.send_message(sent).await.unwrap().into_inner();
    assert_eq!(sent.status.map(|s| s.code), Some(Code::Ok as i32));
}

/// One receive: a push consumer's (auto_renew, no invisible time) or a
/// simple consumer's (10 s invisible).
async fn receive(
    client: &mut Client,
    client_id: &str,
    group: &str,
    topic: &str,
    auto_renew: bool,
) -> Vec<pb::Message> {
    let receive = pb::ReceiveMessageRequest {
        group: resource(group),
        message_queue: Some(pb::MessageQueue {
            topic: resource(topic),
            id: -1,
            ..Default::default()
        }),
        batch_size: 32,
        invisible_duration: (!auto_renew).then(|| duration(10_000)),
        long_polling_timeout: Some(duration(5_000)),
        auto_renew,
        ..Default::default()
    };
    let mut stream = client
        .receive_message(request(client_id, receive))
        .await
        .unwrap()
        .into_inner();
    let mut messages = Vec::new();
    while let Some(item) = stream.message().await.unwrap() {
        if let Some(pb::receive_message_response::Content::Message(m)) = item.content {
            messages.push(m);
        }
    }
    messages
}

fn body(message: &pb::Message) -> String {
    String::from_utf8_lossy(&message.body).into_owned()
}

fn handle(message: &pb::Message) -> String {
    let sys = message.system_properties.as_ref().unwrap();
    sys.receipt_handle.clone().unwrap()
}

fn attempt(message: &pb::Message) -> i32 {
    let sys = message.system_properties.as_ref().unwrap();
    sys.delivery_attempt.unwrap_or(0)
}

async fn ack(client: &mut Client, client_id: &str, group: &str, message: &pb::Message) -> i32 {
    let entry = pb::AckMessageEntry {
        message_id: message
            .system_properties
            .as_ref()
            .unwrap()
            .message_id
            .clone(),
        receipt_handle: handle(message),
        lite_topic: None,
    };
    let ack = pb::AckMessageRequest {
        group: resource(group),
        topic: message.topic.clone(),
        entries: vec![entry],
    };
    let ack = client.ack_message(request(client_id, ack)).await.unwrap();
    ack.into_inner().status.map_or(-1, |s| s.code)
}

/// Receives until `count` messages came or `tries` receives were made.
async fn receive_n(
    client: &mut Client,
    client_id: &str,
    group: &str,
    topic: &str,
    auto_renew: bool,
    count: usize,
) -> Vec<pb::Message> {
    let mut got = Vec::new();
    for _ in 0..6 {
        got.extend(receive(client, client_id, group, topic, auto_renew).await);
        if got.len() >= count {
            break;
        }
    }
    got
}

#[test]
fn held_messages_are_renewed_until_acked_and_released_when_the_client_goes() {
    let cluster = start(&[]);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let mut client = connect(cluster.proxy.addr()).await;
        let (topic, group) = (cluster.topic.clone(), unique_name("RenewGroup"));
        let session = push_consumer_session(&mut client, "push-a", &group).await;
        send(&mut client, &topic, "one").await;
        send(&mut client, &topic, "two").await;
        let mut held = receive_n(&mut client, "push-a", &group, &topic, true, 2).await;
        assert_eq!(held.len(), 2, "both messages received");
        held.sort_by_key(body);
        // Popped for defaultInvisibleTimeMills (the handle's third field),
        // not the proxy's 60 s default.
        assert_eq!(handle(&held[0]).split(' ').nth(2), Some("10000"));

        // Past the 10 s invisible time nobody else gets them.
        tokio::time::sleep(Duration::from_secs(14)).await;
        let other = receive(&mut client, "simple-b", &group, &topic, false).await;
        assert!(
            other.is_empty(),
            "renewed messages stay invisible: {other:?}"
        );

        // The ack with the handle received (the broker's is newer) lands.
        let acked = ack(&mut client, "push-a", &group, &held[0]).await;
        assert_eq!(acked, Code::Ok as i32);

        // The client goes: what it still holds comes back soon, the acked
        // message never.
        drop(session);
        let back = receive_n(&mut client, "simple-b", &group, &topic, false, 1).await;
        let bodies: Vec<String> = back.iter().map(body).collect();
        assert_eq!(bodies, ["two"], "only the unacked message is released");
        assert_eq!(attempt(&back[0]), 2);
        assert_eq!(
            ack(&mut client, "simple-b", &group, &back[0]).await,
            Code::Ok as i32
        );
        let after = receive(&mut client, "simple-b", &group, &topic, false).await;
        assert!(
            after.is_empty(),
            "nothing comes back after the acks: {after:?}"
        );
    });
}

#[test]
fn renewal_stops_after_the_max_renew_time() {
    let cluster = start(&["renewMaxTimeMillis=2000", "renewAheadTimeMillis=5000"]);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let mut client = connect(cluster.proxy.addr()).await;
        let (topic, group) = (cluster.topic.clone(), unique_name("RenewMaxGroup"));
        let _session = push_consumer_session(&mut client, "push-a", &group).await;
        send(&mut client, &topic, "held").await;
        let held = receive_n(&mut client, "push-a", &group, &topic, true, 1).await;
        assert_eq!(held.len(), 1);
        // Renewed, it would stay invisible a minute; past the maximum it
        // gets the first retry wait (10 s) and comes back to anyone.
        let back = receive_n(&mut client, "simple-b", &group, &topic, false, 1).await;
        assert_eq!(back.iter().map(body).collect::<Vec<_>>(), ["held"]);
        assert_eq!(attempt(&back[0]), 2);
    });
}
