//! SQL92 subscriptions end to end, with the Rust client: the Apache C++
//! client of the interop suite (rocketmq-client-cpp 1.0.1) cannot subscribe
//! by SQL92. A broker started with `enablePropertyFilter=true` delivers
//! exactly the messages whose properties match; a bad expression is refused
//! with SUBSCRIPTION_PARSE_FAILED; a broker without the setting refuses
//! SQL92 pulls. Also checks consume stats and group administration through
//! the client's admin calls.

mod harness;

use std::time::{Duration, Instant};

use ferrocket_client::expression_pull::EXPRESSION_TYPE_SQL92;
use ferrocket_client::{
    Admin, ClientError, CreateTopicOptions, Producer, ProducerConfig, PullConsumer,
    PullConsumerConfig, PullStatus, SendOptions, SubscriptionGroup,
};
use ferrocket_protocol::codes::response_code;
use harness::{unique_name, Broker, BrokerOpts, Namesrv};

const QUEUES: i32 = 2;
const WAIT: Duration = Duration::from_secs(30);

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// Every body of `topic` matching `expression` (SQL92), sorted.
async fn pull_sql(
    consumer: &PullConsumer,
    topic: &str,
    expression: &str,
) -> Result<Vec<String>, ClientError> {
    let mut bodies = Vec::new();
    for queue in consumer.read_queues(topic).await? {
        let mut offset = 0;
        loop {
            let result = consumer
                .pull_with_expression(&queue, offset, 32, expression, EXPRESSION_TYPE_SQL92, None)
                .await?;
            bodies.extend(
                result
                    .messages
                    .iter()
                    .map(|m| String::from_utf8_lossy(&m.body).into_owned()),
            );
            if result.status == PullStatus::NoNewMsg || result.next_begin_offset == offset {
                break;
            }
            offset = result.next_begin_offset;
        }
    }
    bodies.sort();
    Ok(bodies)
}

async fn create_topic(admin: &Admin, broker: &str, topic: &str) {
    let options = CreateTopicOptions {
        read_queue_nums: QUEUES,
        write_queue_nums: QUEUES,
        ..CreateTopicOptions::default()
    };
    admin.create_topic(broker, topic, &options).await.unwrap();
    let start = Instant::now();
    while admin.topic_route(topic).await.is_err() {
        assert!(start.elapsed() < WAIT, "no route for {topic}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[test]
fn sql92_subscriptions_deliver_exactly_the_matching_messages() {
    let namesrv = Namesrv::start();
    let broker = Broker::start(
        &namesrv.addr(),
        BrokerOpts {
            shards: Some(2),
            auto_create_topic: Some(false),
            extra_args: vec!["--set".into(), "enablePropertyFilter=true".into()],
            ..Default::default()
        },
    );
    runtime().block_on(async {
        let admin = Admin::new(&namesrv.addr()).unwrap();
        let topic = unique_name("SqlTopic");
        create_topic(&admin, &broker.addr(), &topic).await;
        let producer = Producer::new(ProducerConfig::new("SqlPG", namesrv.addr())).unwrap();
        for i in 0..20 {
            let region = ["eu", "us", "asia"][i % 3];
            let options = SendOptions::default()
                .with_tags(if i % 2 == 0 { "even" } else { "odd" })
                .with_property("n", i.to_string())
                .with_property("region", region);
            producer
                .send(&topic, format!("m{i:02}"), &options)
                .await
                .unwrap();
        }
        let consumer = PullConsumer::new(PullConsumerConfig::new("SqlCG", namesrv.addr())).unwrap();
        let expected = |keep: &dyn Fn(usize) -> bool| -> Vec<String> {
            (0..20)
                .filter(|i| keep(*i))
                .map(|i| format!("m{i:02}"))
                .collect()
        };
        let got = pull_sql(&consumer, &topic, "n >= 10 AND region = 'eu'")
            .await
            .unwrap();
        assert_eq!(got, expected(&|i| i >= 10 && i % 3 == 0));
        let got = pull_sql(
            &consumer,
            &topic,
            "region IN ('us', 'asia') AND TAGS = 'even'",
        )
        .await
        .unwrap();
        assert_eq!(got, expected(&|i| i % 3 != 0 && i % 2 == 0));
        let got = pull_sql(
            &consumer,
            &topic,
            "n BETWEEN 3 AND 5 OR nothing IS NOT NULL",
        )
        .await
        .unwrap();
        assert_eq!(got, expected(&|i| (3..=5).contains(&i)));
        let got = pull_sql(&consumer, &topic, "NOT (n < 18)").await.unwrap();
        assert_eq!(got, expected(&|i| i >= 18));
        let bad = pull_sql(&consumer, &topic, "n >>= 1").await.unwrap_err();
        assert_eq!(
            bad.response_code(),
            Some(response_code::SUBSCRIPTION_PARSE_FAILED),
            "{bad}"
        );

        // Group administration and consume stats through the client.
        let mut group = SubscriptionGroup::new("SqlCG");
        group.retry_max_times = 4;
        admin
            .update_subscription_group(&broker.addr(), &group)
            .await
            .unwrap();
        let table = admin.subscription_groups(&broker.addr()).await.unwrap();
        assert_eq!(table.subscription_group_table["SqlCG"].retry_max_times, 4);
        let queue = &consumer.read_queues(&topic).await.unwrap()[0];
        admin
            .commit_offset(&broker.addr(), "SqlCG", &topic, queue.queue_id, 3)
            .await
            .unwrap();
        let stats = admin
            .consume_stats(&broker.addr(), "SqlCG", Some(&topic))
            .await
            .unwrap();
        assert_eq!(stats.offsets.len(), QUEUES as usize);
        assert_eq!(stats.offsets[queue].consumer_offset, 3);
        assert_eq!(stats.total_lag(), 20 - 3);
        admin
            .delete_subscription_group(&broker.addr(), "SqlCG", true)
            .await
            .unwrap();
        let stats = admin
            .consume_stats(&broker.addr(), "SqlCG", Some(&topic))
            .await
            .unwrap();
        assert_eq!(stats.total_lag(), 20, "offsets cleaned");
    });
}

#[test]
fn sql92_is_refused_without_enable_property_filter() {
    let namesrv = Namesrv::start();
    let broker = Broker::start(&namesrv.addr(), BrokerOpts::default());
    runtime().block_on(async {
        let admin = Admin::new(&namesrv.addr()).unwrap();
        let topic = unique_name("NoSqlTopic");
        create_topic(&admin, &broker.addr(), &topic).await;
        let consumer =
            PullConsumer::new(PullConsumerConfig::new("NoSqlCG", namesrv.addr())).unwrap();
        let refused = pull_sql(&consumer, &topic, "a > 1").await.unwrap_err();
        assert_eq!(
            refused.response_code(),
            Some(response_code::SYSTEM_ERROR),
            "{refused}"
        );
        assert!(
            refused.to_string().contains("does not support"),
            "{refused}"
        );
    });
}
