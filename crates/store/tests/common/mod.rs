//! Test support: encode records, run a store with N shard executors.
#![allow(dead_code)]

use std::future::Future;
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::BytesMut;
use ferrocket_protocol::properties::tags_code;
use ferrocket_protocol::record::{decode_record, NewRecord};
use ferrocket_store::{
    AppendRequest, MessageStore, Placement, QueueOwnerFn, ShardStore, StorageIo, StoreConfig,
    StoreError, StoreHandle,
};
use glommio::LocalExecutorBuilder;

pub fn small_config(root: &std::path::Path) -> StoreConfig {
    let mut config = StoreConfig::new(root);
    config.segment_bytes = 64 * 1024;
    config.cq_entries_per_file = 16;
    config.ring_capacity = 8;
    config.batch_bytes_max = 16 * 1024;
    config.checkpoint_interval_ms = 50;
    config.cq_flush_interval_ms = 50;
    // Retention must not depend on how full the host's disk is.
    config.retention.disk_max_used_percent = 100;
    config.retention.disk_clean_forcibly_percent = 100;
    config
}

pub fn owner_by_queue(shards: usize) -> QueueOwnerFn {
    Arc::new(move |_topic: &str, queue_id: i32| queue_id as usize % shards)
}

/// One encoded record with TAGS set, as the broker would build it.
pub fn request(topic: &str, queue_id: i32, body: &[u8], tag: &str) -> AppendRequest {
    let properties = format!("TAGS\u{1}{tag}\u{2}");
    let host: SocketAddr = "127.0.0.1:10911".parse().unwrap();
    let record = NewRecord {
        topic,
        queue_id,
        flag: 0,
        sys_flag: 0,
        born_timestamp_ms: 1_700_000_000_000,
        born_host: host,
        store_timestamp_ms: 1_700_000_000_123,
        store_host: host,
        reconsume_times: 0,
        prepared_transaction_offset: 0,
        body,
        properties: properties.as_bytes(),
    };
    let mut buf = BytesMut::new();
    record.encode(0, 0, &mut buf).unwrap();
    AppendRequest::new(Arc::from(topic), queue_id, buf, tags_code(tag))
}

pub fn body_for(shard: usize, queue_id: i32, n: usize) -> Vec<u8> {
    // Varying sizes exercise padding and segment ends.
    let mut body = format!("s{shard}-q{queue_id}-n{n}-").into_bytes();
    body.resize(body.len() + (n * 37) % 300, b'x');
    body
}

/// Opens a store, starts the appender and `shards` shard executors, runs
/// `work` on each, shuts everything down. Returns each shard's output and
/// the appender's outcome.
pub fn run_store<T, F, Fut>(
    config: StoreConfig,
    io: Option<Arc<dyn StorageIo>>,
    shards: usize,
    work: F,
) -> (Vec<T>, Result<(), StoreError>, StoreHandle)
where
    T: Send + 'static,
    F: Fn(Rc<ShardStore>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = T> + 'static,
{
    let (handle, parts) = match io {
        Some(io) => MessageStore::open_with_io(config, io).unwrap(),
        None => MessageStore::open(config).unwrap(),
    };
    let (appender, ports) = parts
        .start_appender(shards, owner_by_queue(shards), Placement::Unbound)
        .unwrap();
    let work = Arc::new(work);
    let threads: Vec<_> = ports
        .into_iter()
        .map(|port| {
            let work = Arc::clone(&work);
            LocalExecutorBuilder::new(Placement::Unbound)
                .name(&format!("shard-{}", port.shard_id()))
                .spawn(move || async move {
                    let shard = Rc::new(ShardStore::connect(port).await);
                    let out = work(Rc::clone(&shard)).await;
                    shard.shutdown().await;
                    out
                })
                .unwrap()
        })
        .collect();
    let outputs = threads.into_iter().map(|t| t.join().unwrap()).collect();
    let outcome = appender.join();
    (outputs, outcome, handle)
}

/// Like [`run_store`] with one shard whose executor also runs the appender
/// (`AppenderParts::start_appender_in_shard`).
pub fn run_store_in_shard<T, F, Fut>(
    config: StoreConfig,
    work: F,
) -> (T, Result<(), StoreError>, StoreHandle)
where
    T: Send + 'static,
    F: FnOnce(Rc<ShardStore>) -> Fut + Send + 'static,
    Fut: Future<Output = T> + 'static,
{
    let (handle, parts) = MessageStore::open(config).unwrap();
    let (appender, port) = parts.start_appender_in_shard(owner_by_queue(1)).unwrap();
    let output = LocalExecutorBuilder::new(Placement::Unbound)
        .name("shard-0")
        .spawn(move || async move {
            let shard = Rc::new(ShardStore::connect(port).await);
            let out = work(Rc::clone(&shard)).await;
            shard.shutdown().await;
            out
        })
        .unwrap()
        .join()
        .unwrap();
    let outcome = appender.join();
    (output, outcome, handle)
}

/// Waits (on the executor) until `queue` on this shard has `count` entries.
pub async fn wait_for_entries(shard: &ShardStore, topic: &str, queue_id: i32, count: i64) {
    let deadline = Instant::now() + Duration::from_secs(20);
    let queue = shard.consume_queue(topic, queue_id).unwrap();
    while queue.max_offset() < count {
        assert!(
            Instant::now() < deadline,
            "timed out waiting for {topic}/{queue_id} to reach {count}"
        );
        glommio::timer::sleep(Duration::from_millis(2)).await;
    }
}

/// Reads every entry of a queue, checks each record against its entry, and
/// returns the bodies in queue order.
pub fn read_queue(shard: &ShardStore, topic: &str, queue_id: i32) -> Vec<Vec<u8>> {
    let queue = shard.consume_queue(topic, queue_id).unwrap();
    let entries = queue.get(queue.min_offset(), usize::MAX);
    assert_eq!(
        entries.len() as i64,
        queue.max_offset() - queue.min_offset()
    );
    let mut last_end = -1;
    let mut bodies = Vec::new();
    for (index, entry) in entries.iter().enumerate() {
        assert!(
            entry.physical_offset >= last_end,
            "physical offsets must grow"
        );
        last_end = entry.end();
        let bytes = shard
            .read_records(entry.physical_offset, entry.size as usize)
            .unwrap_or_else(|| panic!("record at {} unreadable", entry.physical_offset));
        let view = decode_record(&bytes, true).unwrap();
        assert_eq!(view.topic, topic);
        assert_eq!(view.queue_id, queue_id);
        assert_eq!(view.queue_offset, queue.min_offset() + index as i64);
        assert_eq!(view.physical_offset, entry.physical_offset);
        let tag = view.properties().tags().map(tags_code).unwrap_or(0);
        assert_eq!(tag, entry.tags_code);
        bodies.push(view.body.to_vec());
    }
    bodies
}
