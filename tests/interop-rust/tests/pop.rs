//! Pop consumption through `rocketmq-client-rust` 1.0.0 (a Java-compatible
//! client nobody here wrote): a `DefaultMQPushConsumer` with
//! `client_rebalance(false)` asks the broker for its queues
//! (QUERY_ASSIGNMENT), is told POP (the group was switched with
//! SET_MESSAGE_REQUEST_MODE, as `ferrocket admin group set-mode` does),
//! pops, and acks with BATCH_ACK_MESSAGE. A message whose first
//! consumption fails comes back (CHANGE_MESSAGE_INVISIBLETIME, then the
//! pop retry topic); every other message is consumed exactly once.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ferrocket_client::{Admin, CreateTopicOptions, Producer, ProducerConfig, SendOptions};
use ferrocket_interop_rust::Cluster;
use rocketmq_client_rust::{
    ClientResult, ClientRuntime, ConsumeConcurrentlyContext, ConsumeConcurrentlyStatus,
    DefaultMQPushConsumer, MQPushConsumer, MessageListenerConcurrently,
};
use rocketmq_model::common::message::message_ext::MessageExt;
use rocketmq_model::common::message::MessageTrait;

const TOPIC: &str = "PopTopic";
const GROUP: &str = "pop_consumer_group";
const MESSAGES: usize = 40;

fn client_runtime() -> Arc<ClientRuntime> {
    ferrocket_interop_rust::client_runtime("pop-test")
}

/// Counts deliveries per body; fails "fail-once" the first time.
#[derive(Clone, Default)]
struct Listener {
    seen: Arc<Mutex<BTreeMap<String, usize>>>,
}

impl MessageListenerConcurrently for Listener {
    fn consume_message(
        &self,
        msgs: &[&MessageExt],
        _context: &ConsumeConcurrentlyContext,
    ) -> ClientResult<ConsumeConcurrentlyStatus> {
        let mut seen = self.seen.lock().unwrap();
        let mut status = ConsumeConcurrentlyStatus::ConsumeSuccess;
        for msg in msgs {
            let body = msg
                .get_body()
                .map(|b| String::from_utf8_lossy(b).into_owned())
                .unwrap_or_default();
            let count = seen.entry(body.clone()).or_default();
            *count += 1;
            if body == "fail-once" && *count == 1 {
                status = ConsumeConcurrentlyStatus::ReconsumeLater;
            }
        }
        Ok(status)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_push_consumer_told_to_pop_consumes_every_message_once() {
    let cluster = Cluster::start(&[]);
    let admin = Admin::new(&cluster.namesrv.addr()).unwrap();
    let options = CreateTopicOptions {
        read_queue_nums: 4,
        write_queue_nums: 4,
        ..CreateTopicOptions::default()
    };
    admin
        .create_topic(&cluster.broker.addr(), TOPIC, &options)
        .await
        .unwrap();
    admin
        .set_message_request_mode(&cluster.broker.addr(), TOPIC, GROUP, "POP", 0)
        .await
        .unwrap();
    let producer =
        Producer::new(ProducerConfig::new("pop_producer", cluster.namesrv.addr())).unwrap();
    let mut expected = vec!["fail-once".to_string()];
    expected.extend((0..MESSAGES).map(|n| format!("pop-{n}")));
    for body in &expected {
        producer
            .send(TOPIC, body.clone(), &SendOptions::default())
            .await
            .unwrap();
    }

    let listener = Listener::default();
    let mut consumer = DefaultMQPushConsumer::builder(client_runtime())
        .consumer_group(GROUP.to_string())
        .name_server_addr(cluster.namesrv.addr())
        .client_rebalance(false)
        .build();
    consumer.subscribe(TOPIC, "*").await.unwrap();
    consumer.register_message_listener_concurrently(listener.clone());
    consumer.start().await.unwrap();

    // The failed one comes back after the client's first retry delay (10 s).
    let deadline = Instant::now() + Duration::from_secs(60);
    let done = |seen: &BTreeMap<String, usize>| {
        expected.iter().all(|b| seen.contains_key(b)) && seen.get("fail-once") == Some(&2)
    };
    while !done(&listener.seen.lock().unwrap()) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // Nothing acked comes back.
    tokio::time::sleep(Duration::from_secs(3)).await;
    consumer.shutdown().await;
    let seen = listener.seen.lock().unwrap().clone();
    assert!(done(&seen), "not everything was consumed: {seen:?}");
    for body in &expected[1..] {
        assert_eq!(seen[body], 1, "{body} consumed {} times", seen[body]);
    }
    assert_eq!(seen["fail-once"], 2, "the failed message came back once");
}
