//! Producers on several connections send to queues owned by every shard;
//! a consumer pulls everything back exactly once, bodies and properties
//! intact, per-queue order preserved. Run with 1 and 2 shards.

mod common;

use std::collections::{BTreeMap, BTreeSet};

use common::*;
use ferrocket_broker::{BrokerConfig, CommitLogWriteMode, FlushDiskType};
use ferrocket_protocol::codes::{request_code, response_code};
use ferrocket_protocol::header::SendMessageResponseHeader;
use ferrocket_protocol::RemotingCommand;
use ferrocket_runtime::shard::owner_shard;

const TOPIC: &str = "OrderTopic";
const QUEUES: i32 = 8;
const PRODUCERS: usize = 4;
const PER_PRODUCER: usize = 150;

fn send_and_pull_everything(shards: usize, tune: impl FnOnce(&mut BrokerConfig)) {
    let dir = tempfile::tempdir().unwrap();
    let mut config = config(dir.path(), shards);
    tune(&mut config);
    // Small segments so the CommitLog rolls during the test.
    config.mapped_file_size_commit_log = 64 * 1024;
    let broker = Broker::start(config);
    broker.client().create_topic(TOPIC, QUEUES);
    let owners: BTreeSet<usize> = (0..QUEUES).map(|q| owner_shard(TOPIC, q, shards)).collect();
    assert_eq!(owners.len(), shards, "queues are owned by every shard");

    let producers: Vec<_> = (0..PRODUCERS)
        .map(|p| {
            let addr = broker.addr;
            std::thread::spawn(move || {
                let mut client = connect(addr);
                let mut sent = Vec::new();
                for i in 0..PER_PRODUCER {
                    let queue_id = ((p + i) % QUEUES as usize) as i32;
                    let body = format!("p{p}-m{i}-{}", "x".repeat(i % 300)).into_bytes();
                    let key = format!("k{p}-{i}");
                    let tag = if i % 2 == 0 { "even" } else { "odd" };
                    let properties = props(&[("KEYS", &key), ("TAGS", tag), ("custom", "v\u{e9}")]);
                    let (q, offset, msg_id) = client.send_ok(TOPIC, queue_id, &body, &properties);
                    assert_eq!(q, queue_id);
                    assert_eq!(msg_id.len(), 32);
                    sent.push((queue_id, offset, body, key));
                }
                sent
            })
        })
        .collect();
    let mut sent: Vec<(i32, i64, Vec<u8>, String)> = Vec::new();
    for producer in producers {
        sent.extend(producer.join().unwrap());
    }
    assert_eq!(sent.len(), PRODUCERS * PER_PRODUCER);

    // Per queue, the queue offsets handed out are exactly 0..n.
    let mut by_queue: BTreeMap<i32, BTreeMap<i64, (Vec<u8>, String)>> = BTreeMap::new();
    for (queue_id, offset, body, key) in sent {
        let previous = by_queue
            .entry(queue_id)
            .or_default()
            .insert(offset, (body, key));
        assert!(
            previous.is_none(),
            "queue offset {offset} of queue {queue_id} given twice"
        );
    }

    let mut consumer = broker.client();
    let mut total = 0;
    for queue_id in 0..QUEUES {
        let expected = by_queue.remove(&queue_id).unwrap_or_default();
        let pulled = consumer.pull_all("G1", TOPIC, queue_id, "*");
        assert_eq!(pulled.len(), expected.len(), "queue {queue_id}");
        for (message, (offset, (body, key))) in pulled.iter().zip(expected.iter()) {
            assert_eq!(message.queue_id, queue_id);
            assert_eq!(
                message.queue_offset, *offset,
                "order within queue {queue_id}"
            );
            assert_eq!(&message.body, body);
            assert_eq!(message.topic, TOPIC);
            let get = |name: &str| {
                message
                    .properties
                    .iter()
                    .find(|(k, _)| k == name)
                    .map(|(_, v)| v.clone())
            };
            assert_eq!(get("KEYS").as_deref(), Some(key.as_str()));
            assert_eq!(get("custom").as_deref(), Some("v\u{e9}"));
            assert!(get("UNIQ_KEY").is_some(), "the broker adds a unique key");
            assert_eq!(get("CLUSTER").as_deref(), Some("DefaultCluster"));
            // Stored as Java 5.x stores them: a 5.x consumer's trace takes
            // its region from the message.
            assert_eq!(get("MSG_REGION").as_deref(), Some("DefaultRegion"));
            assert_eq!(get("TRACE_ON").as_deref(), Some("true"));
        }
        total += pulled.len();

        // A tag filter sees only its half, in order.
        let odd = consumer.pull_all("G2", TOPIC, queue_id, "odd");
        assert!(odd
            .iter()
            .all(|m| m.properties.iter().any(|(k, v)| k == "TAGS" && v == "odd")));
        let expected_odd = pulled
            .iter()
            .filter(|m| m.properties.iter().any(|(k, v)| k == "TAGS" && v == "odd"))
            .count();
        assert_eq!(odd.len(), expected_odd);

        let max = consumer.offset_call(
            request_code::GET_MAX_OFFSET,
            &[("topic", TOPIC), ("queueId", &queue_id.to_string())],
        );
        assert_eq!(offset_of(&max), pulled.len() as i64);
    }
    assert_eq!(total, PRODUCERS * PER_PRODUCER);
    broker.stop();
    let segments = std::fs::read_dir(dir.path().join("commitlog"))
        .unwrap()
        .count();
    assert!(
        segments > 1,
        "the CommitLog rolled over {segments} segment(s)"
    );
}

#[test]
fn one_shard_serves_every_message_exactly_once() {
    send_and_pull_everything(1, |_| {});
}

#[test]
fn two_shards_serve_every_message_exactly_once() {
    send_and_pull_everything(2, |_| {});
}

#[test]
fn two_pinned_shards_with_direct_writes_and_sync_flush() {
    send_and_pull_everything(2, |config| {
        config.pin_shards = true;
        config.write_mode = CommitLogWriteMode::Direct;
        config.flush_disk_type = FlushDiskType::SyncFlush;
    });
}

#[test]
fn batch_send_stores_each_message_and_lists_their_ids() {
    let dir = tempfile::tempdir().unwrap();
    let broker = Broker::start(config(dir.path(), 2));
    let mut client = broker.client();
    client.create_topic("BatchTopic", 2);
    let items: Vec<ferrocket_protocol::batch::BatchItem> = (0..5)
        .map(|i| ferrocket_protocol::batch::BatchItem {
            flag: i,
            body: format!("batch-{i}").into_bytes().into(),
            properties: props(&[("TAGS", "b"), ("UNIQ_KEY", &format!("U{i}"))])
                .to_bytes()
                .into(),
        })
        .collect();
    let body = ferrocket_protocol::batch::encode_batch(&items).unwrap();
    for queue_id in 0..2 {
        let queue = queue_id.to_string();
        let request_fields = if queue_id == 0 {
            // Java client: SEND_BATCH_MESSAGE with V2 short names.
            fields(&[
                ("a", "PG"),
                ("b", "BatchTopic"),
                ("e", &queue),
                ("f", "0"),
                ("g", "1700000000000"),
                ("h", "0"),
                ("i", ""),
                ("m", "true"),
            ])
        } else {
            // Apache C++ client 1.0: SEND_MESSAGE with V1 names, batch "1".
            fields(&[
                ("producerGroup", "PG"),
                ("topic", "BatchTopic"),
                ("queueId", &queue),
                ("sysFlag", "0"),
                ("bornTimestamp", "1700000000000"),
                ("flag", "0"),
                ("properties", "WAIT\u{1}true\u{2}"),
                ("batch", "1"),
                ("unitMode", "0"),
            ])
        };
        let code = if queue_id == 0 {
            request_code::SEND_BATCH_MESSAGE
        } else {
            request_code::SEND_MESSAGE
        };
        let mut request = RemotingCommand::request(code);
        request.ext_fields = request_fields;
        request.body = body.clone();
        let response = client.request(request);
        assert_eq!(
            response.code,
            response_code::SUCCESS,
            "{:?}",
            response.remark
        );
        let header = SendMessageResponseHeader::from_ext(&response.ext_fields).unwrap();
        assert_eq!(header.msg_id.split(',').count(), 5);
        assert_eq!(header.queue_offset, 0);
        let pulled = client.pull_all("G", "BatchTopic", queue_id, "*");
        let bodies: Vec<String> = pulled
            .iter()
            .map(|m| String::from_utf8(m.body.clone()).unwrap())
            .collect();
        assert_eq!(
            bodies,
            (0..5).map(|i| format!("batch-{i}")).collect::<Vec<_>>()
        );
        assert_eq!(
            pulled.iter().map(|m| m.queue_offset).collect::<Vec<_>>(),
            vec![0, 1, 2, 3, 4]
        );
        // Each message keeps its own properties and gets the broker's
        // stamp, as Java's broker appends the batch's properties to each.
        for (i, message) in pulled.iter().enumerate() {
            let get = |name: &str| {
                message
                    .properties
                    .iter()
                    .find(|(k, _)| k == name)
                    .map(|(_, v)| v.as_str())
            };
            assert_eq!(get("UNIQ_KEY"), Some(format!("U{i}").as_str()));
            assert_eq!(get("TAGS"), Some("b"));
            assert_eq!(get("CLUSTER"), Some("DefaultCluster"));
            assert_eq!(get("MSG_REGION"), Some("DefaultRegion"));
            assert_eq!(get("TRACE_ON"), Some("true"));
        }
    }
    broker.stop();
}
