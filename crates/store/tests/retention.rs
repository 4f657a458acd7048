//! Retention: expired CommitLog segments and the ConsumeQueue files that
//! point only into them are deleted, queue min offsets move up, the newest
//! data stays readable, and the store recovers afterwards. Topic deletion
//! removes a topic's ConsumeQueues and restarts its offsets at 0.

mod common;

use std::path::Path;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{body_for, read_queue, request, run_store, small_config, wait_for_entries};
use ferrocket_store::{offset_file_name, queue_dir, AppendResult, StoreConfig};

const SHARDS: usize = 2;
const QUEUES: i32 = 4;
const PER_QUEUE: usize = 300;
const TOPIC: &str = "Ret";

fn config(root: &Path, reserved_ms: u64) -> StoreConfig {
    let mut config = small_config(root);
    config.retention.file_reserved_ms = reserved_ms;
    config.retention.delete_when = (0..24).collect();
    config.retention.clean_interval_ms = 50;
    // Whatever the host's disk usage, only age decides here.
    config.retention.disk_max_used_percent = 100;
    config.retention.disk_clean_forcibly_percent = 100;
    config
}

fn file_offsets(dir: &Path) -> Vec<i64> {
    let mut names: Vec<i64> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse().ok()))
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// Appends PER_QUEUE messages to each queue (each shard its own queues);
/// returns the results per queue.
fn fill(config: StoreConfig) -> Vec<Vec<AppendResult>> {
    let (outputs, outcome, _) = run_store(config, None, SHARDS, |shard| async move {
        let mut out = Vec::new();
        for queue_id in (0..QUEUES).filter(|q| *q as usize % SHARDS == shard.shard_id()) {
            let mut results = Vec::new();
            for n in 0..PER_QUEUE {
                let body = body_for(shard.shard_id(), queue_id, n);
                results.push(
                    shard
                        .append(request(TOPIC, queue_id, &body, "t"))
                        .await
                        .unwrap(),
                );
            }
            wait_for_entries(&shard, TOPIC, queue_id, PER_QUEUE as i64).await;
            out.push((queue_id, results));
        }
        out
    });
    outcome.unwrap();
    let mut per_queue = vec![Vec::new(); QUEUES as usize];
    for (queue_id, results) in outputs.into_iter().flatten() {
        per_queue[queue_id as usize] = results;
    }
    per_queue
}

fn expected_bodies(queue_id: i32, from: usize) -> Vec<Vec<u8>> {
    let shard = queue_id as usize % SHARDS;
    (from..PER_QUEUE)
        .map(|n| body_for(shard, queue_id, n))
        .collect()
}

#[test]
fn expired_segments_and_queue_files_go_newest_data_stays() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    let results = fill(config(&root, 3_600_000));
    let seg = small_config(&root).segment_bytes as i64;
    let segments_before = file_offsets(&small_config(&root).commitlog_dir());
    assert!(segments_before.len() >= 4, "{segments_before:?}");
    let end = results
        .iter()
        .flatten()
        .map(|r| r.physical_offset + i64::from(r.total_bytes))
        .max()
        .unwrap();
    let active = end - end % seg;
    assert_eq!(*segments_before.last().unwrap(), active);
    // The queue offset of each queue's first record in the active segment.
    let first_kept: Vec<usize> = results
        .iter()
        .map(|r| {
            r.iter()
                .position(|r| r.physical_offset >= active)
                .unwrap_or(PER_QUEUE)
        })
        .collect();

    // Second run: segments older than 200 ms expire.
    std::thread::sleep(Duration::from_millis(250));
    let first = first_kept.clone();
    let (outputs, outcome, handle) = run_store(config(&root, 200), None, SHARDS, move |shard| {
        let first = first.clone();
        async move {
            let reader = shard.reader();
            let deadline = Instant::now() + Duration::from_secs(30);
            while reader.min_offset() < active {
                assert!(Instant::now() < deadline, "segments never expired");
                glommio::timer::sleep(Duration::from_millis(10)).await;
            }
            assert_eq!(reader.min_offset(), active, "the active segment stays");
            shard.run_queue_retention().unwrap();
            // A deleted region reads as absent, never a bad access.
            assert!(shard.read_records(0, 64).is_none());
            for queue_id in (0..QUEUES).filter(|q| *q as usize % SHARDS == shard.shard_id()) {
                let queue = shard.consume_queue(TOPIC, queue_id).unwrap();
                let kept = first[queue_id as usize];
                assert_eq!(queue.min_offset(), kept as i64, "queue {queue_id}");
                assert_eq!(queue.max_offset(), PER_QUEUE as i64);
                assert!(queue.get(0, 8).is_empty());
                assert_eq!(
                    read_queue(&shard, TOPIC, queue_id),
                    expected_bodies(queue_id, kept)
                );
            }
        }
    });
    outcome.unwrap();
    assert_eq!(outputs.len(), SHARDS);
    assert_eq!(handle.reader().min_offset(), active);
    let config_now = small_config(&root);
    assert_eq!(file_offsets(&config_now.commitlog_dir()), vec![active]);
    let per_file = config_now.cq_entries_per_file as i64;
    for queue_id in 0..QUEUES {
        let kept = first_kept[queue_id as usize] as i64;
        let files =
            file_offsets(&queue_dir(&config_now.consumequeue_dir(), TOPIC, queue_id).unwrap());
        let first_file = (kept.min(PER_QUEUE as i64 - 1) / per_file) * per_file * 20;
        assert_eq!(files.first().copied(), Some(first_file), "queue {queue_id}");
        assert!(
            !files.contains(&0) || first_file == 0,
            "old ConsumeQueue files remain: {files:?}"
        );
    }

    // Third run: recovery after retention; min offsets hold; appends go on.
    let first = first_kept.clone();
    let (_, outcome, _) = run_store(config(&root, 3_600_000), None, SHARDS, move |shard| {
        let first = first.clone();
        async move {
            assert_eq!(shard.reader().min_offset(), active);
            for queue_id in (0..QUEUES).filter(|q| *q as usize % SHARDS == shard.shard_id()) {
                let queue = shard.consume_queue(TOPIC, queue_id).unwrap();
                let kept = first[queue_id as usize];
                assert_eq!(queue.min_offset(), kept as i64);
                assert_eq!(
                    read_queue(&shard, TOPIC, queue_id),
                    expected_bodies(queue_id, kept)
                );
                let next = shard
                    .append(request(TOPIC, queue_id, b"after", "t"))
                    .await
                    .unwrap();
                assert_eq!(next.queue_offset, PER_QUEUE as i64);
            }
        }
    });
    outcome.unwrap();
    let _ = offset_file_name(0);
}

#[test]
fn deleted_topic_starts_again_at_zero() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    let cq_root = small_config(&root).consumequeue_dir();
    let (outputs, outcome, _) = run_store(config(&root, 3_600_000), None, SHARDS, move |shard| {
        let cq_root = cq_root.clone();
        async move {
            let queue_id = shard.shard_id() as i32;
            for n in 0..40 {
                for topic in ["Del", "Gone"] {
                    shard
                        .append(request(topic, queue_id, &body_for(0, queue_id, n), "t"))
                        .await
                        .unwrap();
                }
            }
            wait_for_entries(&shard, "Del", queue_id, 40).await;
            wait_for_entries(&shard, "Gone", queue_id, 40).await;
            assert_eq!(shard.delete_topic_queues("Gone").unwrap(), 1);
            assert!(queue_dir(&cq_root, "Del", queue_id).unwrap().exists());
            assert_eq!(shard.delete_topic_queues("Del").unwrap(), 1);
            assert!(!queue_dir(&cq_root, "Del", queue_id).unwrap().exists());
            let queue = shard.consume_queue("Del", queue_id).unwrap();
            assert_eq!((queue.min_offset(), queue.max_offset()), (0, 0));
            let again = shard
                .append(request("Del", queue_id, b"reborn", "t"))
                .await
                .unwrap();
            assert_eq!(again.queue_offset, 0);
            wait_for_entries(&shard, "Del", queue_id, 1).await;
            assert_eq!(
                read_queue(&shard, "Del", queue_id),
                vec![b"reborn".to_vec()]
            );
            queue_id
        }
    });
    outcome.unwrap();
    assert_eq!(outputs.len(), SHARDS);

    // After a restart the old records stay out of the new queues: recovery
    // skips them (they lie below the queues' restart positions).
    let cq_root = small_config(&root).consumequeue_dir();
    let (_, outcome, _) = run_store(config(&root, 3_600_000), None, SHARDS, move |shard| {
        let cq_root = cq_root.clone();
        async move {
            let queue_id = shard.shard_id() as i32;
            assert_eq!(
                read_queue(&shard, "Del", queue_id),
                vec![b"reborn".to_vec()]
            );
            assert!(!queue_dir(&cq_root, "Gone", queue_id).unwrap().exists());
            let gone = shard.consume_queue("Gone", queue_id).unwrap();
            assert_eq!((gone.min_offset(), gone.max_offset()), (0, 0));
            let next = shard
                .append(request("Del", queue_id, b"next", "t"))
                .await
                .unwrap();
            assert_eq!(next.queue_offset, 1);
            let back = shard
                .append(request("Gone", queue_id, b"back", "t"))
                .await
                .unwrap();
            assert_eq!(back.queue_offset, 0);
        }
    });
    outcome.unwrap();
}

/// A reset posted while the shard's request ring is full waits, and the
/// shard's later appends wait behind it: an append made after
/// `delete_topic_queues` returns is numbered in the new, empty queue.
#[test]
fn reset_behind_a_full_ring_comes_before_later_appends() {
    use ferrocket_store::{FaultyIo, FlushMode};
    let dir = tempfile::tempdir().unwrap();
    let mut config = small_config(dir.path());
    config.flush_mode = FlushMode::Sync { timeout_ms: 60_000 };
    config.ring_capacity = 1;
    config.batch_bytes_max = 4096;
    let (io, plan) = FaultyIo::new();
    let (_, outcome, _) = run_store(config, Some(Arc::new(io)), 1, move |shard| {
        let plan = plan.clone();
        async move {
            for n in 0..3 {
                let old = format!("old-{n}");
                shard
                    .append(request("Busy", 0, old.as_bytes(), "t"))
                    .await
                    .unwrap();
            }
            wait_for_entries(&shard, "Busy", 0, 3).await;
            // Slow flushes keep the appender busy while other appends fill
            // the ring (and wait for room in it).
            plan.delay_syncs_ms(30);
            let others: Vec<_> = (0..40)
                .map(|n| {
                    let shard = Rc::clone(&shard);
                    glommio::spawn_local(async move {
                        let body = vec![b'o'; 1000 + n];
                        shard.append(request("Other", 0, &body, "t")).await
                    })
                })
                .collect();
            glommio::timer::sleep(Duration::from_millis(20)).await;
            assert_eq!(shard.delete_topic_queues("Busy").unwrap(), 1);
            let after = shard
                .append(request("Busy", 0, b"after", "t"))
                .await
                .unwrap();
            assert_eq!(after.queue_offset, 0);
            for other in others {
                other.await.unwrap();
            }
            plan.delay_syncs_ms(0);
            wait_for_entries(&shard, "Busy", 0, 1).await;
            assert_eq!(read_queue(&shard, "Busy", 0), vec![b"after".to_vec()]);
        }
    });
    outcome.unwrap();
}

#[test]
fn index_files_below_the_commitlog_start_go() {
    use ferrocket_store::index::{message_index_keys, IndexConfig, IndexService};
    let dir = tempfile::tempdir().unwrap();
    let config = IndexConfig {
        hash_slots: 7,
        entries_per_file: 4,
        ..IndexConfig::default()
    };
    let mut index = IndexService::open(dir.path().join("index"), config.clone()).unwrap();
    // Message i at CommitLog offset i * 100, one key each: 4 per file.
    for i in 0..20i64 {
        let key = format!("k{i}");
        let keys = message_index_keys(Some(&key), None);
        index
            .put("T", &keys, i * 100, 1_700_000_000_000 + i)
            .unwrap();
    }
    let files = index.file_count();
    assert!(files >= 5, "files: {files}");
    assert_eq!(index.delete_below(0).unwrap(), 0);
    // Everything below 1000 (messages 0..10) may go, file by file.
    let deleted = index.delete_below(1_000).unwrap();
    assert!(deleted >= 2, "deleted {deleted}");
    assert_eq!(index.file_count(), files - deleted);
    assert!(index.query("T", "k0", 8, 0, i64::MAX).is_empty());
    assert_eq!(index.query("T", "k15", 8, 0, i64::MAX), vec![1_500]);
    // The newest file always stays.
    index.delete_below(i64::MAX).unwrap();
    assert_eq!(index.file_count(), 1);
    drop(index);
    let reopened = IndexService::open(dir.path().join("index"), config).unwrap();
    assert_eq!(reopened.file_count(), 1);
}
