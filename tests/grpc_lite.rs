//! Lite topics (RocketMQ 5.5) through `ferrocket proxy`, with the generated
//! v5 client: a lite push consumer's settings carry the quota, its receives
//! deliver only the lite topics it subscribed (a lite topic subscribed
//! later delivers what it holds), its acks name the lite topic, and the
//! limits answer Java's codes. The Java client's run (both endpoints) is
//! tests/interop-java's `grpc.LiteTopicTest`.

mod harness;

use std::collections::{BTreeMap, BTreeSet};

use ferrocket_grpc::convert::duration;
use ferrocket_grpc::pb::{self, Code};
use ferrocket_grpc::pb::{LiteSubscriptionAction as Action, MessageType};
use ferrocket_protocol::codes::response_code;
use harness::grpc::{connect, request, resource, start_proxy, Client};
use harness::process::ServerProcess;
use harness::requests::create_topic_request;
use harness::{unique_name, Broker, BrokerOpts, Namesrv};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;

const CONSUMER: &str = "lite-consumer";
const OK: i32 = Code::Ok as i32;

struct Cluster {
    _namesrv: Namesrv,
    _broker: Broker,
    proxy: ServerProcess,
    topic: String,
    _home: tempfile::TempDir,
}

fn start(topic_prefix: &str) -> Cluster {
    let namesrv = Namesrv::start();
    let broker = Broker::start(
        &namesrv.addr(),
        BrokerOpts {
            shards: Some(1),
            ..BrokerOpts::default()
        },
    );
    let topic = unique_name(topic_prefix);
    let create = create_topic_request(&topic, 2).with_ext("attributes", "+message.type=LITE");
    let created = broker.connect().request(create);
    assert_eq!(created.code, response_code::SUCCESS, "{created:?}");
    let home = tempfile::tempdir().unwrap();
    let proxy = start_proxy(&namesrv.addr(), home.path(), &[]);
    Cluster {
        _namesrv: namesrv,
        _broker: broker,
        proxy,
        topic,
        _home: home,
    }
}

/// Opens the consumer's Telemetry stream as a lite push consumer; answers
/// the settings the endpoint sent back and the stream's sender.
async fn lite_session(
    client: &mut Client,
    group: &str,
) -> (pb::Subscription, mpsc::Sender<pb::TelemetryCommand>) {
    let (sender, receiver) = mpsc::channel(4);
    let settings = pb::Settings {
        client_type: Some(pb::ClientType::LitePushConsumer as i32),
        pub_sub: Some(pb::settings::PubSub::Subscription(pb::Subscription {
            group: resource(group),
            ..Default::default()
        })),
        ..Default::default()
    };
    let command = pb::TelemetryCommand {
        status: None,
        command: Some(pb::telemetry_command::Command::Settings(settings)),
    };
    sender.send(command).await.unwrap();
    let stream = request(CONSUMER, ReceiverStream::new(receiver));
    let mut replies = client.telemetry(stream).await.unwrap().into_inner();
    let first = replies.message().await.unwrap().expect("settings answered");
    let Some(pb::telemetry_command::Command::Settings(merged)) = first.command else {
        panic!("no settings: {first:?}");
    };
    let Some(pb::settings::PubSub::Subscription(subscription)) = merged.pub_sub else {
        panic!("no subscription settings");
    };
    tokio::spawn(async move { while let Ok(Some(_)) = replies.message().await {} });
    (subscription, sender)
}

async fn sync(client: &mut Client, group: &str, topic: &str, action: Action, lite: &[&str]) -> i32 {
    sync_from(client, group, topic, action, lite, None).await
}

/// SyncLiteSubscription with an `offset_option`.
async fn sync_from(
    client: &mut Client,
    group: &str,
    topic: &str,
    action: Action,
    lite: &[&str],
    offset_option: Option<pb::OffsetOption>,
) -> i32 {
    let sync = pb::SyncLiteSubscriptionRequest {
        action: action as i32,
        topic: resource(topic),
        group: resource(group),
        lite_topic_set: lite.iter().map(|s| s.to_string()).collect(),
        offset_option,
        ..Default::default()
    };
    let answer = client.sync_lite_subscription(request(CONSUMER, sync)).await;
    answer.unwrap().into_inner().status.map_or(-1, |s| s.code)
}

async fn send(client: &mut Client, topic: &str, lite: &str, body: &str) -> i32 {
    let message = pb::Message {
        topic: resource(topic),
        system_properties: Some(pb::SystemProperties {
            message_id: unique_name("id"),
            message_type: MessageType::Lite as i32,
            lite_topic: Some(lite.to_string()),
            ..Default::default()
        }),
        body: body.as_bytes().to_vec(),
        ..Default::default()
    };
    let sent = pb::SendMessageRequest {
        messages: vec![message],
    };
    let sent = client.send_message(request("lite-producer", sent)).await;
    sent.unwrap().into_inner().status.map_or(-1, |s| s.code)
}

/// One receive as the lite push consumer (5 s long poll).
async fn receive(client: &mut Client, group: &str, topic: &str) -> Vec<pb::Message> {
    let receive = pb::ReceiveMessageRequest {
        group: resource(group),
        message_queue: Some(pb::MessageQueue {
            topic: resource(topic),
            id: 0,
            ..Default::default()
        }),
        batch_size: 32,
        long_polling_timeout: Some(duration(5_000)),
        auto_renew: true,
        ..Default::default()
    };
    let mut stream = client
        .receive_message(request(CONSUMER, receive))
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

fn lite_topic(message: &pb::Message) -> String {
    let sys = message.system_properties.as_ref().unwrap();
    assert_eq!(sys.message_type, MessageType::Lite as i32);
    sys.lite_topic.clone().unwrap_or_default()
}

/// Acks each message naming its lite topic, as the Java client does.
async fn ack(client: &mut Client, group: &str, messages: &[pb::Message]) {
    for message in messages {
        let sys = message.system_properties.as_ref().unwrap();
        let entry = pb::AckMessageEntry {
            message_id: sys.message_id.clone(),
            receipt_handle: sys.receipt_handle.clone().unwrap(),
            lite_topic: sys.lite_topic.clone(),
        };
        let ack = pb::AckMessageRequest {
            group: resource(group),
            topic: message.topic.clone(),
            entries: vec![entry],
        };
        let ack = client.ack_message(request(CONSUMER, ack)).await.unwrap();
        assert_eq!(
            ack.into_inner().status.map(|s| s.code),
            Some(Code::Ok as i32)
        );
    }
}

/// Receives and acks until `count` messages came (or six receives);
/// answers their bodies, and the queue each came from.
async fn take_from(
    client: &mut Client,
    group: &str,
    topic: &str,
    count: usize,
) -> BTreeMap<String, i32> {
    let mut bodies = BTreeMap::new();
    for _ in 0..6 {
        let got = receive(client, group, topic).await;
        for message in &got {
            let body = String::from_utf8_lossy(&message.body).into_owned();
            assert!(body.starts_with(&lite_topic(message)), "{body}");
            let queue = message.system_properties.as_ref().unwrap().queue_id;
            bodies.insert(body, queue);
        }
        ack(client, group, &got).await;
        if bodies.len() >= count {
            break;
        }
    }
    bodies
}

/// [`take_from`]'s bodies.
async fn take(client: &mut Client, group: &str, topic: &str, count: usize) -> BTreeSet<String> {
    let taken = take_from(client, group, topic, count).await;
    taken.into_keys().collect()
}

fn set(items: &[&str]) -> BTreeSet<String> {
    items.iter().map(|s| s.to_string()).collect()
}

#[test]
fn a_lite_consumer_gets_only_its_lite_topics() {
    let cluster = start("LiteParent");
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let mut client = connect(cluster.proxy.addr()).await;
        let (topic, group) = (cluster.topic.clone(), unique_name("LiteGroup"));
        let (settings, _session) = lite_session(&mut client, &group).await;
        assert_eq!(settings.lite_subscription_quota, Some(2000));
        assert_eq!(settings.max_lite_topic_size, Some(64));

        let added = sync(&mut client, &group, &topic, Action::PartialAdd, &["a", "b"]).await;
        assert_eq!(added, Code::Ok as i32);
        for (lite, body) in [
            ("a", "a-0"),
            ("b", "b-0"),
            ("c", "c-0"),
            ("b", "b-1"),
            ("b", "b-2"),
        ] {
            assert_eq!(send(&mut client, &topic, lite, body).await, OK);
        }
        let first = take_from(&mut client, &group, &topic, 4).await;
        let bodies: BTreeSet<String> = first.keys().cloned().collect();
        assert_eq!(bodies, set(&["a-0", "b-0", "b-1", "b-2"]));
        let b_queues: BTreeSet<i32> = first
            .iter()
            .filter(|(body, _)| body.starts_with('b'))
            .map(|(_, queue)| *queue)
            .collect();
        assert_eq!(
            b_queues.len(),
            1,
            "a lite topic keeps to one queue: {first:?}"
        );

        let removed = sync(&mut client, &group, &topic, Action::PartialRemove, &["a"]).await;
        assert_eq!(removed, Code::Ok as i32);
        let added = sync(&mut client, &group, &topic, Action::PartialAdd, &["c"]).await;
        assert_eq!(added, Code::Ok as i32);
        assert_eq!(send(&mut client, &topic, "a", "a-1").await, OK);
        // c's message was sent before c was subscribed, and still comes.
        let second = take(&mut client, &group, &topic, 1).await;
        assert_eq!(second, set(&["c-0"]));
        let rest = receive(&mut client, &group, &topic).await;
        assert!(rest.is_empty(), "acked, or not subscribed: {rest:?}");
    });
}

#[test]
fn lite_limits_answer_javas_codes() {
    let cluster = start("LiteParent");
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let mut client = connect(cluster.proxy.addr()).await;
        let (topic, group) = (cluster.topic.clone(), unique_name("LiteLimits"));
        let (_, _session) = lite_session(&mut client, &group).await;
        let names: Vec<String> = (0..2001).map(|i| format!("l{i}")).collect();
        let all: Vec<&str> = names.iter().map(String::as_str).collect();
        let over = sync(&mut client, &group, &topic, Action::CompleteAdd, &all).await;
        assert_eq!(over, Code::LiteSubscriptionQuotaExceeded as i32);
        let within = sync(&mut client, &group, &topic, Action::CompleteAdd, &all[1..]).await;
        assert_eq!(within, Code::Ok as i32);
        let bad = sync(&mut client, &group, &topic, Action::PartialAdd, &["a b"]).await;
        assert_eq!(bad, Code::IllegalLiteTopic as i32);
        let long = "x".repeat(65);
        assert_eq!(
            send(&mut client, &topic, &long, "long").await,
            Code::IllegalLiteTopic as i32
        );
        assert_eq!(
            send(&mut client, &topic, "a|b", "bar").await,
            Code::IllegalLiteTopic as i32
        );
    });
}

/// Nacks `message` (ChangeInvisibleDuration naming its lite topic) so it
/// comes back in a second.
async fn nack(client: &mut Client, group: &str, message: &pb::Message) {
    let sys = message.system_properties.as_ref().unwrap();
    let change = pb::ChangeInvisibleDurationRequest {
        group: resource(group),
        topic: message.topic.clone(),
        receipt_handle: sys.receipt_handle.clone().unwrap(),
        invisible_duration: Some(duration(1_000)),
        message_id: sys.message_id.clone(),
        lite_topic: sys.lite_topic.clone(),
        ..Default::default()
    };
    let changed = client.change_invisible_duration(request(CONSUMER, change));
    let changed = changed.await.unwrap().into_inner();
    assert_eq!(changed.status.map(|s| s.code), Some(OK));
}

#[test]
fn a_nacked_lite_message_comes_back_under_long_names() {
    // Long names: the lite group is a hashed one, so that its pop retry
    // topic still fits a topic name.
    let cluster = start(&"LiteParentLong".repeat(3));
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let mut client = connect(cluster.proxy.addr()).await;
        let topic = cluster.topic.clone();
        let group = unique_name(&"LiteGroupWithALongName".repeat(4));
        let lite = "s".repeat(64);
        let (_, _session) = lite_session(&mut client, &group).await;
        let added = sync(&mut client, &group, &topic, Action::PartialAdd, &[&lite]).await;
        assert_eq!(added, OK);
        assert_eq!(
            send(&mut client, &topic, &lite, &format!("{lite}-0")).await,
            OK
        );
        let mut first = Vec::new();
        for _ in 0..3 {
            first = receive(&mut client, &group, &topic).await;
            if !first.is_empty() {
                break;
            }
        }
        assert_eq!(first.len(), 1, "received once");
        nack(&mut client, &group, &first[0]).await;
        let again = take(&mut client, &group, &topic, 1).await;
        assert_eq!(again, set(&[&format!("{lite}-0")]), "redelivered and acked");
    });
}

/// `offset_option` POLICY MAX: the lite topic starts after what the parent
/// already holds of it.
#[test]
fn a_lite_topic_subscribed_from_the_newest_skips_what_it_held() {
    let cluster = start("LiteNewest");
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let mut client = connect(cluster.proxy.addr()).await;
        let (topic, group) = (cluster.topic.clone(), unique_name("LiteNewestGroup"));
        let (_settings, _session) = lite_session(&mut client, &group).await;
        assert_eq!(send(&mut client, &topic, "a", "a-old").await, OK);
        let newest = pb::OffsetOption {
            offset_type: Some(pb::offset_option::OffsetType::Policy(
                pb::offset_option::Policy::Max as i32,
            )),
        };
        let added = sync_from(
            &mut client,
            &group,
            &topic,
            Action::PartialAdd,
            &["a"],
            Some(newest),
        )
        .await;
        assert_eq!(added, OK);
        assert_eq!(send(&mut client, &topic, "a", "a-new").await, OK);
        assert_eq!(take(&mut client, &group, &topic, 1).await, set(&["a-new"]));
    });
}
