//! A CommitLog roll only switches files: the next segment is created while
//! the current one fills (a clean shutdown removes one never used, recovery
//! one a crash left behind), and under async flush the roll leaves the old
//! segment's fdatasync to the flush task instead of holding sends for it.

mod common;

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{read_queue, request, run_store, run_store_in_shard, small_config};
use ferrocket_store::{
    offset_file_name, FaultyIo, FlushMode, MessageStore, ShardStore, StoreConfig,
};

const TOPIC: &str = "Ahead";

fn segment_files(config: &StoreConfig) -> Vec<i64> {
    let mut starts: Vec<i64> = std::fs::read_dir(config.commitlog_dir())
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse().ok()))
        .collect();
    starts.sort();
    starts
}

fn body(n: usize) -> Vec<u8> {
    let mut body = format!("ahead-{n}-").into_bytes();
    body.resize(900, b'a');
    body
}

/// Appends numbered bodies until the CommitLog ends at or past `end`;
/// returns where it ends.
async fn append_until(shard: &ShardStore, sent: &mut usize, end: i64) -> i64 {
    loop {
        let r = shard
            .append(request(TOPIC, 0, &body(*sent), "t"))
            .await
            .unwrap();
        *sent += 1;
        let now = r.physical_offset + r.total_bytes as i64;
        if now >= end {
            return now;
        }
    }
}

/// Waits on the executor until `path` exists (the creation runs as a task
/// of the same executor).
async fn exists_soon(path: &Path) -> bool {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if path.exists() {
            return true;
        }
        glommio::timer::sleep(Duration::from_millis(5)).await;
    }
    false
}

#[test]
fn the_next_segment_exists_before_the_roll_and_a_clean_stop_removes_it() {
    let dir = tempfile::tempdir().unwrap();
    let config = small_config(dir.path());
    let seg = config.segment_bytes as i64;
    let commitlog = config.commitlog_dir();
    let (sent, outcome, _handle) = run_store_in_shard(config.clone(), move |shard| async move {
        let mut sent = 0usize;
        // Past half of the first segment, short of its end.
        let end = append_until(&shard, &mut sent, seg / 2 + 1024).await;
        assert!(end < seg, "still in the first segment");
        let second = commitlog.join(offset_file_name(seg));
        assert!(
            exists_soon(&second).await,
            "the second segment is created ahead"
        );
        // Through the roll and past half of the second segment.
        append_until(&shard, &mut sent, seg + seg / 2 + 1024).await;
        let third = commitlog.join(offset_file_name(2 * seg));
        assert!(
            exists_soon(&third).await,
            "the third segment is created ahead"
        );
        common::wait_for_entries(&shard, TOPIC, 0, sent as i64).await;
        let bodies = read_queue(&shard, TOPIC, 0);
        assert_eq!(bodies, (0..sent).map(body).collect::<Vec<_>>());
        sent
    });
    outcome.unwrap();
    assert_eq!(
        segment_files(&config),
        vec![0, seg],
        "the unused third segment is removed at shutdown"
    );
    // Reopened: everything is there and appends go on where they stopped.
    let (again, outcome, _handle) = run_store_in_shard(config.clone(), move |shard| async move {
        let r = shard
            .append(request(TOPIC, 0, &body(sent), "t"))
            .await
            .unwrap();
        assert_eq!(r.queue_offset, sent as i64);
        common::wait_for_entries(&shard, TOPIC, 0, sent as i64 + 1).await;
        read_queue(&shard, TOPIC, 0).len()
    });
    outcome.unwrap();
    assert_eq!(again, sent + 1);
}

#[test]
fn recovery_removes_a_segment_created_ahead_that_a_crash_left() {
    let dir = tempfile::tempdir().unwrap();
    let config = small_config(dir.path());
    let seg = config.segment_bytes as i64;
    let (sent, outcome, _handle) = run_store_in_shard(config.clone(), |shard| async move {
        for n in 0..10 {
            shard
                .append(request(TOPIC, 0, &body(n), "t"))
                .await
                .unwrap();
        }
        10usize
    });
    outcome.unwrap();
    // What a crash between the creation and the roll leaves: an allocated,
    // never written next segment.
    let left = config.commitlog_dir().join(offset_file_name(seg));
    std::fs::write(&left, vec![0u8; seg as usize]).unwrap();
    let (handle, _parts) = MessageStore::open(config.clone()).unwrap();
    assert!(!left.exists(), "recovery removes the unwritten segment");
    assert_eq!(segment_files(&config), vec![0]);
    assert!(handle.written_offset() > 0 && handle.written_offset() < seg);
    drop((handle, _parts));
    let (bodies, outcome, _handle) =
        run_store_in_shard(config, |shard| async move { read_queue(&shard, TOPIC, 0) });
    outcome.unwrap();
    assert_eq!(bodies, (0..sent).map(body).collect::<Vec<_>>());
}

#[test]
fn under_async_flush_a_roll_does_not_wait_for_the_old_segments_fdatasync() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = small_config(dir.path());
    config.flush_mode = FlushMode::Async { interval_ms: 20 };
    let seg = config.segment_bytes as i64;
    let (io, plan) = FaultyIo::new();
    // Every fdatasync takes 3 s more: a roll that waited for one would come
    // back with it counted.
    plan.delay_syncs_ms(3_000);
    let steer = plan.clone();
    let (outputs, outcome, handle) = run_store(config, Some(Arc::new(io)), 1, move |shard| {
        let plan = steer.clone();
        async move {
            let mut sent = 0usize;
            let end = append_until(&shard, &mut sent, seg + 4096).await;
            assert!(end > seg, "the appends went through a roll");
            assert_eq!(
                plan.syncs_ok(),
                0,
                "no fdatasync finished, none was waited for"
            );
            // Let the flush task finish its syncs: the old segment first.
            plan.delay_syncs_ms(0);
            sent
        }
    });
    outcome.unwrap();
    assert!(outputs[0] > 0);
    assert!(
        plan.syncs_ok() >= 2,
        "the old segment and the current one were synced"
    );
    assert_eq!(handle.durable_offset(), handle.written_offset());
}
