//! Micro measurement of append throughput (not a test, asserts nothing):
//! `cargo run --release -p ferrocket-store --example append_throughput`.
//! Two shard executors, 32 appending tasks, 1 KiB bodies, each write/flush
//! mode in turn, in a temp dir.

use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Instant;

use bytes::BytesMut;
use ferrocket_protocol::record::NewRecord;
use ferrocket_store::{
    AppendRequest, FlushMode, MessageStore, Placement, QueueOwnerFn, ShardStore, StoreConfig,
    WriteMode,
};
use glommio::LocalExecutorBuilder;

const SHARDS: usize = 2;
const TASKS_PER_SHARD: usize = 16;
const APPENDS_PER_TASK: usize = 2_000;
const BODY_BYTES: usize = 1024;

fn record(queue_id: i32) -> BytesMut {
    let host: SocketAddr = "127.0.0.1:10911".parse().expect("address");
    let body = vec![b'x'; BODY_BYTES];
    let mut out = BytesMut::new();
    NewRecord {
        topic: "Bench",
        queue_id,
        flag: 0,
        sys_flag: 0,
        born_timestamp_ms: 0,
        born_host: host,
        store_timestamp_ms: 0,
        store_host: host,
        reconsume_times: 0,
        prepared_transaction_offset: 0,
        body: &body,
        properties: b"",
    }
    .encode(0, 0, &mut out)
    .expect("encode");
    out
}

fn run(write_mode: WriteMode, flush_mode: FlushMode) {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut config = StoreConfig::new(dir.path());
    config.segment_bytes = 256 << 20;
    config.write_mode = write_mode;
    config.flush_mode = flush_mode;
    let (_, parts) = MessageStore::open(config).expect("open");
    let owner: QueueOwnerFn = Arc::new(|_: &str, queue_id: i32| queue_id as usize % SHARDS);
    let (appender, ports) = parts
        .start_appender(SHARDS, owner, Placement::Unbound)
        .expect("start");
    let started = Instant::now();
    let shards: Vec<_> = ports
        .into_iter()
        .map(|port| {
            LocalExecutorBuilder::new(Placement::Unbound)
                .spawn(move || async move {
                    let shard = Rc::new(ShardStore::connect(port).await);
                    let topic: Arc<str> = Arc::from("Bench");
                    let tasks: Vec<_> = (0..TASKS_PER_SHARD)
                        .map(|t| {
                            let shard = Rc::clone(&shard);
                            let topic = Arc::clone(&topic);
                            glommio::spawn_local(async move {
                                let queue_id = t as i32 % 8;
                                for _ in 0..APPENDS_PER_TASK {
                                    let request = AppendRequest::new(
                                        Arc::clone(&topic),
                                        queue_id,
                                        record(queue_id),
                                        0,
                                    );
                                    shard.append(request).await.expect("append");
                                }
                            })
                        })
                        .collect();
                    for task in tasks {
                        task.await;
                    }
                    shard.shutdown().await;
                })
                .expect("shard")
        })
        .collect();
    for shard in shards {
        shard.join().expect("shard thread");
    }
    appender.join().expect("appender");
    let appends = SHARDS * TASKS_PER_SHARD * APPENDS_PER_TASK;
    let elapsed = started.elapsed();
    println!(
        "{write_mode:?} {flush_mode:?}: {appends} appends of {BODY_BYTES} B in {elapsed:.2?} = {:.0}/s",
        appends as f64 / elapsed.as_secs_f64()
    );
}

fn main() {
    for write_mode in [WriteMode::Buffered, WriteMode::Direct] {
        run(write_mode, FlushMode::Async { interval_ms: 500 });
        run(write_mode, FlushMode::Sync { timeout_ms: 5_000 });
    }
}
