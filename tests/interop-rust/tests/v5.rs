//! The RocketMQ 5 Rust client (the crate `rocketmq` 5.0.0, gRPC, a client
//! nobody here wrote) against the broker's own port with
//! `enableProxy=true`: a Producer sends, a SimpleConsumer receives and
//! acks every message.

use std::time::{Duration, Instant};

use ferrocket_client::{Admin, CreateTopicOptions};
use ferrocket_interop_rust::Cluster;
use rocketmq::conf::{ClientOption, ProducerOption, SimpleConsumerOption};
use rocketmq::model::common::{FilterExpression, FilterType};
use rocketmq::model::message::MessageBuilder;
use rocketmq::{Producer, SimpleConsumer};

const TOPIC: &str = "V5RustTopic";
const GROUP: &str = "v5_rust_group";
const MESSAGES: usize = 20;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_v5_rust_client_sends_and_a_simple_consumer_receives_and_acks() {
    let cluster = Cluster::start(&["enableProxy=true"]);
    let admin = Admin::new(&cluster.namesrv.addr()).unwrap();
    admin
        .create_topic(&cluster.broker.addr(), TOPIC, &CreateTopicOptions::default())
        .await
        .unwrap();
    let mut client = ClientOption::default();
    client.set_access_url(cluster.broker.addr().as_str());
    client.set_enable_tls(false);

    let mut consumer_option = SimpleConsumerOption::default();
    consumer_option.set_topics(vec![TOPIC]);
    consumer_option.set_consumer_group(GROUP);
    let mut consumer = SimpleConsumer::new(consumer_option, client.clone()).unwrap();
    consumer.start().await.unwrap();
    let filter = FilterExpression::new(FilterType::Tag, "*");
    // A new group starts at the queues' ends once it has popped.
    let _ = consumer.receive(TOPIC.to_string(), &filter).await;

    let mut producer_option = ProducerOption::default();
    producer_option.set_topics(vec![TOPIC]);
    let mut producer = Producer::new(producer_option, client).unwrap();
    producer.start().await.unwrap();
    for n in 0..MESSAGES {
        let message = MessageBuilder::builder()
            .set_topic(TOPIC)
            .set_tag("rust-v5")
            .set_keys(vec![format!("key-{n}")])
            .set_body(format!("v5-{n}").into_bytes())
            .build()
            .unwrap();
        producer.send(message).await.unwrap();
    }

    let mut got = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    while got.len() < MESSAGES && Instant::now() < deadline {
        let Ok(messages) = consumer.receive(TOPIC.to_string(), &filter).await else {
            continue;
        };
        for message in messages {
            assert_eq!(message.tag(), Some("rust-v5"));
            got.push(String::from_utf8_lossy(message.body()).into_owned());
            consumer.ack(&message).await.unwrap();
        }
    }
    got.sort();
    let mut expected: Vec<String> = (0..MESSAGES).map(|n| format!("v5-{n}")).collect();
    expected.sort();
    assert_eq!(got, expected);
    let _ = producer.shutdown().await;
    let _ = consumer.shutdown().await;
}
