//! The appender running on the only shard's executor: appends across
//! segment rolls are acknowledged, dispatched and readable in both write
//! modes (sync flush means durable when acknowledged), the shard shuts down
//! cleanly, and a store written this way recovers intact under a threaded
//! appender.

mod common;

use std::rc::Rc;

use common::*;
use ferrocket_store::{AppendStatus, FlushMode, StoreConfig, WriteMode};

const TOPIC: &str = "InShardTopic";
const QUEUES: i32 = 4;
const PER_QUEUE: usize = 150;

fn config(root: &std::path::Path, mode: WriteMode, flush: FlushMode) -> StoreConfig {
    let mut config = small_config(root);
    config.write_mode = mode;
    config.flush_mode = flush;
    config
}

fn expected(queue_id: i32) -> Vec<Vec<u8>> {
    (0..PER_QUEUE).map(|n| body_for(0, queue_id, n)).collect()
}

fn appends_survive_restart(mode: WriteMode, flush: FlushMode) {
    let dir = tempfile::tempdir().unwrap();
    let sync = matches!(flush, FlushMode::Sync { .. });
    let (read, outcome, _) =
        run_store_in_shard(config(dir.path(), mode, flush), move |shard| async move {
            let mut tasks = Vec::new();
            for queue_id in 0..QUEUES {
                let shard = Rc::clone(&shard);
                tasks.push(glommio::spawn_local(async move {
                    for n in 0..PER_QUEUE {
                        let body = body_for(0, queue_id, n);
                        let result = shard
                            .append(request(TOPIC, queue_id, &body, "t"))
                            .await
                            .unwrap();
                        assert_eq!(result.status, AppendStatus::Ok);
                        assert_eq!(result.queue_offset, n as i64);
                        if sync {
                            let durable = shard.reader().durable_offset();
                            assert!(durable >= result.physical_offset + result.total_bytes as i64);
                        }
                    }
                }));
            }
            for task in tasks {
                task.await;
            }
            let mut read = Vec::new();
            for queue_id in 0..QUEUES {
                wait_for_entries(&shard, TOPIC, queue_id, PER_QUEUE as i64).await;
                read.push(read_queue(&shard, TOPIC, queue_id));
            }
            read
        });
    outcome.unwrap();
    for queue_id in 0..QUEUES {
        assert_eq!(
            read[queue_id as usize],
            expected(queue_id),
            "queue {queue_id}"
        );
    }
    let segments = std::fs::read_dir(dir.path().join("commitlog"))
        .unwrap()
        .count();
    assert!(segments > 1, "the test must roll segments, saw {segments}");

    // Reopen with the appender on a thread of its own: same data.
    let (reread, outcome, _) = run_store(
        config(dir.path(), mode, flush),
        None,
        1,
        |shard| async move {
            (0..QUEUES)
                .map(|queue_id| read_queue(&shard, TOPIC, queue_id))
                .collect::<Vec<_>>()
        },
    );
    outcome.unwrap();
    for queue_id in 0..QUEUES {
        assert_eq!(
            reread[0][queue_id as usize],
            expected(queue_id),
            "queue {queue_id} after restart"
        );
    }
}

#[test]
fn buffered_async_appends_survive_restart() {
    appends_survive_restart(WriteMode::Buffered, FlushMode::Async { interval_ms: 20 });
}

#[test]
fn direct_sync_appends_are_durable_and_survive_restart() {
    appends_survive_restart(WriteMode::Direct, FlushMode::Sync { timeout_ms: 10_000 });
}
