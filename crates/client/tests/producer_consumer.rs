//! Producer and pull consumer against the in-memory fake broker.

use std::net::{IpAddr, Ipv4Addr};

use bytes::Bytes;
use ferrocket_client::{
    BatchMessage, ClientError, MessageQueue, Producer, ProducerConfig, PullConsumer,
    PullConsumerConfig, PullStatus, QueueSelector, SendOptions, SendStatus, SendVersion,
};
use ferrocket_protocol::body::ConsumeType;
use ferrocket_protocol::codes::{request_code, response_code};
use ferrocket_protocol::message_id::decode_unique_key;
use ferrocket_testkit::broker;

fn producer_config(namesrv: &str) -> ProducerConfig {
    ProducerConfig {
        client_ip: Some(IpAddr::V4(Ipv4Addr::LOCALHOST)),
        ..ProducerConfig::new("PG", namesrv)
    }
}

fn consumer(namesrv: &str) -> PullConsumer {
    PullConsumer::new(PullConsumerConfig {
        client_ip: Some(IpAddr::V4(Ipv4Addr::LOCALHOST)),
        ..PullConsumerConfig::new("CG", namesrv)
    })
    .unwrap()
}

#[tokio::test]
async fn sent_messages_come_back_from_pulls() {
    let cluster = broker::start(&[("T", 2)]).await;
    let producer = Producer::new(producer_config(&cluster.namesrv.addr)).unwrap();
    let options = SendOptions::default()
        .with_tags("TagA")
        .with_keys(["k1", "k2"]);
    let mut results = Vec::new();
    for i in 0..4 {
        results.push(
            producer
                .send("T", format!("body-{i}"), &options)
                .await
                .unwrap(),
        );
    }
    // Round-robin over the two write queues.
    let queue_ids: Vec<i32> = results.iter().map(|r| r.queue_id).collect();
    assert_eq!(queue_ids[0], queue_ids[2]);
    assert_ne!(queue_ids[0], queue_ids[1]);
    assert!(results.iter().all(|r| r.status == SendStatus::SendOk));
    assert!(results
        .iter()
        .all(|r| r.broker_name == "broker-a" && r.topic == "T"));
    // Unique keys are in the Java format and distinct.
    let parts = decode_unique_key(&results[0].unique_key).unwrap();
    assert_eq!(parts.ip, IpAddr::V4(Ipv4Addr::LOCALHOST));
    assert_ne!(results[0].unique_key, results[1].unique_key);

    // SEND_MESSAGE_V2 with short header names by default.
    {
        let state = cluster.state.lock().unwrap();
        let send = &state.requests[0];
        assert_eq!(send.code, request_code::SEND_MESSAGE_V2);
        assert_eq!(send.ext_fields.get("a"), Some("PG"));
        assert_eq!(send.ext_fields.get("b"), Some("T"));
        assert_eq!(send.ext_fields.get("c"), Some("TBW102"));
        assert!(send.ext_fields.get("producerGroup").is_none());
        assert_eq!(send.version, 453);
    }

    let consumer = consumer(&cluster.namesrv.addr);
    let queue = results[0].queue();
    let pulled = consumer.pull(&queue, 0, 32, "*", None).await.unwrap();
    assert_eq!(pulled.status, PullStatus::Found);
    assert_eq!(pulled.next_begin_offset, 2);
    assert_eq!(pulled.max_offset, 2);
    assert_eq!(pulled.messages.len(), 2);
    let first = &pulled.messages[0];
    assert_eq!(&first.body[..], b"body-0");
    assert_eq!(first.msg_id, results[0].msg_id);
    assert_eq!(
        first.unique_key.as_deref(),
        Some(results[0].unique_key.as_str())
    );
    assert_eq!(first.tags.as_deref(), Some("TagA"));
    assert_eq!(first.keys, vec!["k1".to_string(), "k2".to_string()]);
    assert_eq!(first.properties.get("WAIT"), Some("true"));
    assert_eq!(first.queue_offset, results[0].queue_offset);
    assert_eq!(pulled.messages[1].msg_id, results[2].msg_id);

    // Nothing further, an illegal offset, and local tag filtering.
    let end = consumer.pull(&queue, 2, 32, "*", None).await.unwrap();
    assert_eq!(end.status, PullStatus::NoNewMsg);
    assert!(end.messages.is_empty());
    let moved = consumer.pull(&queue, 99, 32, "*", None).await.unwrap();
    assert_eq!(moved.status, PullStatus::OffsetIllegal);
    assert_eq!(moved.next_begin_offset, 2);
    let filtered = consumer
        .pull(&queue, 0, 32, "TagB || TagC", None)
        .await
        .unwrap();
    assert_eq!(filtered.status, PullStatus::Found);
    assert!(filtered.messages.is_empty());
    assert!(consumer.pull(&queue, 0, 0, "*", None).await.is_err());
}

#[tokio::test]
async fn v1_send_and_explicit_queue_selection() {
    let cluster = broker::start(&[("T", 4)]).await;
    let config = ProducerConfig {
        send_version: SendVersion::V1,
        ..producer_config(&cluster.namesrv.addr)
    };
    let producer = Producer::new(config).unwrap();
    let result = producer
        .send("T", "x", &SendOptions::default().with_queue_id(3))
        .await
        .unwrap();
    assert_eq!(result.queue_id, 3);
    let by_index = SendOptions::default().with_selector(QueueSelector::Index(6));
    assert_eq!(
        producer.send("T", "y", &by_index).await.unwrap().queue_id,
        2
    );
    let exact = QueueSelector::Queue(MessageQueue::new("T", "broker-a", 1));
    let result = producer
        .send("T", "z", &SendOptions::default().with_selector(exact))
        .await
        .unwrap();
    assert_eq!(result.queue_id, 1);
    let missing = producer
        .send("T", "x", &SendOptions::default().with_queue_id(9))
        .await
        .unwrap_err();
    assert!(
        matches!(missing, ClientError::InvalidArgument(_)),
        "{missing}"
    );
    let state = cluster.state.lock().unwrap();
    assert_eq!(state.requests[0].code, request_code::SEND_MESSAGE);
    assert_eq!(
        state.requests[0].ext_fields.get("producerGroup"),
        Some("PG")
    );
    assert_eq!(state.requests[0].ext_fields.get("queueId"), Some("3"));
}

#[tokio::test]
async fn topics_without_route_use_the_template_route() {
    let cluster = broker::start(&[]).await;
    let producer = Producer::new(producer_config(&cluster.namesrv.addr)).unwrap();
    let queues = producer.write_queues("Fresh").await.unwrap();
    assert_eq!(
        queues.len(),
        4,
        "TBW102's 8 queues limited to defaultTopicQueueNums"
    );
    assert!(queues.iter().all(|q| q.topic == "Fresh"));
    let result = producer
        .send("Fresh", "x", &SendOptions::default())
        .await
        .unwrap();
    assert_eq!(result.topic, "Fresh");
    let state = cluster.state.lock().unwrap();
    let send = state.requests.last().unwrap();
    assert_eq!(send.ext_fields.get("b"), Some("Fresh"));
    assert_eq!(send.ext_fields.get("c"), Some("TBW102"));
    assert_eq!(send.ext_fields.get("d"), Some("4"));
}

#[tokio::test]
async fn send_errors_are_typed_and_retried_only_when_retryable() {
    let cluster = broker::start(&[("T", 2)]).await;
    let producer = Producer::new(producer_config(&cluster.namesrv.addr)).unwrap();
    cluster.state.lock().unwrap().fail_sends_with = Some(response_code::MESSAGE_ILLEGAL);
    let error = producer
        .send("T", "x", &SendOptions::default())
        .await
        .unwrap_err();
    assert_eq!(error.response_code(), Some(response_code::MESSAGE_ILLEGAL));
    assert!(error.to_string().contains("refused by test"), "{error}");
    assert_eq!(cluster.state.lock().unwrap().requests.len(), 1);
    cluster.state.lock().unwrap().fail_sends_with = Some(response_code::SYSTEM_ERROR);
    let error = producer
        .send("T", "x", &SendOptions::default())
        .await
        .unwrap_err();
    assert_eq!(error.response_code(), Some(response_code::SYSTEM_ERROR));
    assert_eq!(
        cluster.state.lock().unwrap().requests.len(),
        1 + 3,
        "1 try + 2 retries"
    );
    // Caller mistakes never reach the broker.
    assert!(producer
        .send("T", Bytes::new(), &SendOptions::default())
        .await
        .is_err());
    assert!(producer
        .send("bad topic", "x", &SendOptions::default())
        .await
        .is_err());
    assert_eq!(cluster.state.lock().unwrap().requests.len(), 4);
}

#[tokio::test]
async fn batches_and_oneway_sends_are_stored() {
    let cluster = broker::start(&[("T", 1)]).await;
    let producer = Producer::new(producer_config(&cluster.namesrv.addr)).unwrap();
    producer
        .send_oneway("T", "oneway", &SendOptions::default())
        .await
        .unwrap();
    let batch: Vec<BatchMessage> = (0..3)
        .map(|i| BatchMessage {
            tags: Some(format!("t{i}")),
            ..BatchMessage::new(format!("batch-{i}"))
        })
        .collect();
    let result = producer
        .send_batch("T", &batch, &QueueSelector::RoundRobin)
        .await
        .unwrap();
    // The oneway send went first on the same connection.
    assert_eq!(result.queue_offset, 1);
    assert_eq!(result.msg_id.split(',').count(), 3);
    let unique_keys: Vec<&str> = result.unique_key.split(',').collect();
    assert_eq!(unique_keys.len(), 3);
    {
        let state = cluster.state.lock().unwrap();
        assert!(state.requests[0].is_oneway());
        let batch_request = &state.requests[1];
        assert_eq!(batch_request.code, request_code::SEND_BATCH_MESSAGE);
        assert_eq!(batch_request.ext_fields.get("m"), Some("true"));
    }
    let consumer = consumer(&cluster.namesrv.addr);
    let queue = MessageQueue::new("T", "broker-a", 0);
    let pulled = consumer.pull(&queue, 0, 10, "*", None).await.unwrap();
    let bodies: Vec<&[u8]> = pulled.messages.iter().map(|m| &m.body[..]).collect();
    assert_eq!(
        bodies,
        vec![&b"oneway"[..], b"batch-0", b"batch-1", b"batch-2"]
    );
    assert_eq!(pulled.messages[2].tags.as_deref(), Some("t1"));
    assert_eq!(
        pulled.messages[3].unique_key.as_deref(),
        Some(unique_keys[2])
    );
    assert!(producer
        .send_batch("T", &[], &QueueSelector::RoundRobin)
        .await
        .is_err());
}

#[tokio::test]
async fn offsets_and_heartbeats() {
    let cluster = broker::start(&[("T", 2)]).await;
    let producer = Producer::new(producer_config(&cluster.namesrv.addr)).unwrap();
    let options = SendOptions::default().with_queue_id(1);
    for _ in 0..3 {
        producer.send("T", "x", &options).await.unwrap();
    }
    let consumer = consumer(&cluster.namesrv.addr);
    let queues = consumer.read_queues("T").await.unwrap();
    assert_eq!(queues.len(), 2);
    let queue = &queues[1];
    assert_eq!(consumer.query_consumer_offset(queue).await.unwrap(), None);
    consumer.update_consumer_offset(queue, 2).await.unwrap();
    assert_eq!(
        consumer.query_consumer_offset(queue).await.unwrap(),
        Some(2)
    );
    consumer
        .update_consumer_offset_oneway(queue, 3)
        .await
        .unwrap();
    assert_eq!(
        consumer.query_consumer_offset(queue).await.unwrap(),
        Some(3)
    );
    assert_eq!(consumer.max_offset(queue).await.unwrap(), 3);
    assert_eq!(consumer.min_offset(queue).await.unwrap(), 0);

    consumer.subscribe("T", "TagA || TagB");
    let reached = consumer.heartbeat().await.unwrap();
    assert_eq!(reached, vec![cluster.broker.addr.clone()]);
    let state = cluster.state.lock().unwrap();
    let heartbeat = state.heartbeats.last().unwrap();
    assert_eq!(heartbeat.client_id, consumer.client_id());
    let data = &heartbeat.consumer_data_set[0];
    assert_eq!(data.group_name, "CG");
    assert_eq!(data.consume_type, ConsumeType::Pull);
    let subscription = &data.subscription_data_set[0];
    assert_eq!(subscription.topic, "T");
    assert_eq!(subscription.sub_string, "TagA || TagB");
    assert_eq!(
        subscription.tags_set,
        vec!["TagA".to_string(), "TagB".to_string()]
    );
    assert_eq!(subscription.code_set.len(), 2);
}

/// The bench harness spawns these futures on a multi-thread runtime.
#[allow(dead_code)]
fn futures_are_send(producer: &Producer, consumer: &PullConsumer, queue: &MessageQueue) {
    fn assert_send<T: Send>(_: &T) {}
    let options = SendOptions::default();
    assert_send(&producer.send("T", "x", &options));
    assert_send(&producer.send_oneway("T", "x", &options));
    assert_send(&producer.send_batch("T", &[], &QueueSelector::RoundRobin));
    assert_send(&consumer.pull(queue, 0, 1, "*", None));
    assert_send(&consumer.heartbeat());
    fn assert_sync<T: Send + Sync>() {}
    assert_sync::<Producer>();
    assert_sync::<PullConsumer>();
    assert_sync::<ferrocket_client::Admin>();
}
