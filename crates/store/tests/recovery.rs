//! Restart and crash recovery: everything survives a clean restart, a torn
//! tail is cut back to the last whole record, appends continue after it.

mod common;

use std::os::unix::fs::FileExt;
use std::sync::{Arc, Mutex};

use common::*;
use ferrocket_store::{
    offset_file_name, AppendResult, FaultyIo, MessageStore, StoreConfig, StoreError, WriteMode,
};

const TOPIC: &str = "RecoverMe";

/// Appends `count` records per queue (queues 0 and 1), sequentially per
/// queue, with bodies numbered from `first`.
fn append_round(config: StoreConfig, first: usize, count: usize) -> Vec<AppendResult> {
    let (outputs, outcome, _) = run_store(config, None, 2, move |shard| async move {
        let queue_id = shard.shard_id() as i32;
        let mut results = Vec::new();
        for n in first..first + count {
            let body = body_for(0, queue_id, n);
            results.push(
                shard
                    .append(request(TOPIC, queue_id, &body, "t"))
                    .await
                    .unwrap(),
            );
        }
        results
    });
    outcome.unwrap();
    outputs.into_iter().flatten().collect()
}

/// Reads both queues back (bodies in queue order).
fn read_all(config: StoreConfig) -> Vec<Vec<Vec<u8>>> {
    let (outputs, outcome, _) = run_store(config, None, 2, |shard| async move {
        read_queue(&shard, TOPIC, shard.shard_id() as i32)
    });
    outcome.unwrap();
    outputs
}

fn expected(queue_id: i32, range: std::ops::Range<usize>) -> Vec<Vec<u8>> {
    range.map(|n| body_for(0, queue_id, n)).collect()
}

fn restart_keeps_everything(mode: WriteMode) {
    let dir = tempfile::tempdir().unwrap();
    let mut config = small_config(dir.path());
    config.write_mode = mode;
    append_round(config.clone(), 0, 40);
    {
        let (handle, parts) = MessageStore::open(config.clone()).unwrap();
        assert_eq!(parts.recovered_queue_offset(TOPIC, 0), 40);
        assert_eq!(parts.recovered_queue_offset(TOPIC, 1), 40);
        assert_eq!(handle.durable_offset(), handle.written_offset());
    }
    let more = append_round(config.clone(), 40, 25);
    assert!(more.iter().all(|r| r.queue_offset >= 40));
    let queues = read_all(config);
    assert_eq!(queues[0], expected(0, 0..65));
    assert_eq!(queues[1], expected(1, 0..65));
}

#[test]
fn restart_keeps_everything_buffered() {
    restart_keeps_everything(WriteMode::Buffered);
}

#[test]
fn restart_keeps_everything_direct() {
    restart_keeps_everything(WriteMode::Direct);
}

/// Overwrites the second half of the record `victim` as a torn write would.
fn tear(config: &StoreConfig, victim: &AppendResult, fill: u8) {
    let seg = config.segment_bytes as i64;
    let start = victim.physical_offset - victim.physical_offset % seg;
    let path = config.commitlog_dir().join(offset_file_name(start));
    let file = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    let half = victim.total_bytes as i64 / 2;
    let at = (victim.physical_offset - start + half) as u64;
    file.write_all_at(&vec![fill; half as usize], at).unwrap();
    file.sync_all().unwrap();
}

fn torn_tail(fill: u8, keep_checkpoint: bool) {
    let dir = tempfile::tempdir().unwrap();
    let config = small_config(dir.path());
    let results = append_round(config.clone(), 0, 30);
    // The newest record in the log.
    let last = *results.iter().max_by_key(|r| r.physical_offset).unwrap();
    let last_queue: i32 = if results[..30].contains(&last) { 0 } else { 1 };
    if !keep_checkpoint {
        std::fs::remove_file(config.checkpoint_path()).unwrap();
    }
    tear(&config, &last, fill);
    {
        let (handle, parts) = MessageStore::open(config.clone()).unwrap();
        assert_eq!(
            handle.written_offset(),
            last.physical_offset,
            "cut at the torn record"
        );
        assert_eq!(parts.recovered_queue_offset(TOPIC, last_queue), 29);
        assert_eq!(parts.recovered_queue_offset(TOPIC, 1 - last_queue), 30);
    }
    let more = append_round(config.clone(), 100, 1);
    assert!(more.iter().any(|r| r.queue_offset == 29));
    let first_new = more.iter().map(|r| r.physical_offset).min().unwrap();
    assert_eq!(
        first_new, last.physical_offset,
        "appends continue at the cut"
    );
    let queues = read_all(config);
    let mut want = expected(last_queue, 0..29);
    want.push(body_for(0, last_queue, 100));
    assert_eq!(queues[last_queue as usize], want);
    let mut want = expected(1 - last_queue, 0..30);
    want.push(body_for(0, 1 - last_queue, 100));
    assert_eq!(queues[1 - last_queue as usize], want);
}

#[test]
fn torn_tail_of_zeros_without_checkpoint() {
    torn_tail(0, false);
}

#[test]
fn torn_tail_of_garbage_with_checkpoint() {
    torn_tail(0xAB, true);
}

#[test]
fn injected_torn_write_is_an_error_and_recovers() {
    let dir = tempfile::tempdir().unwrap();
    let config = small_config(dir.path());
    let (io, plan) = FaultyIo::new();
    let outcomes = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&outcomes);
    let (_, outcome, _) = run_store(config.clone(), Some(Arc::new(io)), 1, move |shard| {
        let plan = plan.clone();
        let seen = Arc::clone(&seen);
        async move {
            for n in 0..10 {
                shard
                    .append(request(TOPIC, 0, &body_for(0, 0, n), "t"))
                    .await
                    .unwrap();
            }
            plan.tear_next_write(60);
            let torn = shard
                .append(request(TOPIC, 0, &body_for(0, 0, 10), "t"))
                .await;
            let after = shard
                .append(request(TOPIC, 0, &body_for(0, 0, 11), "t"))
                .await;
            seen.lock().unwrap().push((torn, after));
        }
    });
    let (torn, after) = outcomes.lock().unwrap().pop().unwrap();
    assert!(matches!(torn, Err(StoreError::Io { .. })), "{torn:?}");
    let after = after.unwrap_err();
    assert_eq!(after.response_code(), 14, "{after:?}");
    assert!(outcome.is_err(), "the appender reports its failure");

    let (_, parts) = MessageStore::open(config.clone()).unwrap();
    assert_eq!(parts.recovered_queue_offset(TOPIC, 0), 10);
    drop(parts);
    let (outputs, outcome, _) = run_store(config, None, 1, |shard| async move {
        let r = shard
            .append(request(TOPIC, 0, &body_for(0, 0, 12), "t"))
            .await
            .unwrap();
        (r.queue_offset, read_queue(&shard, TOPIC, 0))
    });
    outcome.unwrap();
    let (offset, bodies) = &outputs[0];
    assert_eq!(*offset, 10);
    let mut want = expected(0, 0..10);
    want.push(body_for(0, 0, 12));
    assert_eq!(bodies, &want);
}

/// A clean restart reads no record: recovery starts at the checkpoint,
/// where the last record ends (a controller-mode role change restarts
/// this way).
#[test]
fn clean_restart_reads_no_record() {
    let dir = tempfile::tempdir().unwrap();
    let config = small_config(dir.path());
    append_round(config.clone(), 0, 40);
    let (handle, parts) = MessageStore::open(config.clone()).unwrap();
    assert_eq!(parts.recovery_scanned_bytes(), 0);
    assert!(handle.written_offset() > 0);
    drop((handle, parts));
    assert_eq!(
        read_all(config),
        vec![expected(0, 0..40), expected(1, 0..40)]
    );
}

/// After a crash recovery reads what was written since the checkpoint,
/// not the segment holding it; a checkpoint inside a record falls back to
/// the segment's first record. Either way nothing is lost.
#[test]
fn crash_restart_reads_from_the_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let config = small_config(dir.path());
    let mut results = append_round(config.clone(), 0, 60);
    results.sort_by_key(|r| r.physical_offset);
    let end = results
        .last()
        .map(|r| r.physical_offset + r.total_bytes as i64)
        .unwrap();
    let seg = config.segment_bytes as i64;
    // A record boundary past the last segment's start, and one byte past it.
    let last_start = end - end % seg;
    let at = results
        .iter()
        .map(|r| r.physical_offset + r.total_bytes as i64)
        .find(|e| *e > last_start && *e < end)
        .expect("the last segment holds two records");
    for (checkpointed, scanned) in [(at, end - at), (at + 1, end - last_start)] {
        let checkpoint = ferrocket_store::StoreCheckpoint {
            commitlog_flushed: checkpointed,
            consumequeue_flushed: checkpointed,
            commitlog_timestamp_ms: 0,
            consumequeue_timestamp_ms: 0,
        };
        checkpoint.store(&config.checkpoint_path()).unwrap();
        let (handle, parts) = MessageStore::open(config.clone()).unwrap();
        assert_eq!(
            parts.recovery_scanned_bytes(),
            scanned,
            "checkpoint {checkpointed}"
        );
        assert_eq!(handle.written_offset(), end);
        assert_eq!(parts.recovered_queue_offset(TOPIC, 0), 60);
        assert_eq!(parts.recovered_queue_offset(TOPIC, 1), 60);
    }
    assert_eq!(
        read_all(config),
        vec![expected(0, 0..60), expected(1, 0..60)]
    );
}

/// A replica cut back to a fork point: the next open starts at the cut
/// (not at the log's start), the queues end with the log, and appends
/// continue there with the next queue offsets.
#[test]
fn cut_back_log_reopens_at_the_cut() {
    let dir = tempfile::tempdir().unwrap();
    let config = small_config(dir.path());
    // Queue 0's 60 results, then queue 1's.
    let results = append_round(config.clone(), 0, 60);
    let mut by_position: Vec<(i64, usize)> = results
        .iter()
        .enumerate()
        .map(|(n, r)| (r.physical_offset, n / 60))
        .collect();
    by_position.sort();
    let keep = 70;
    let cut = by_position[keep].0;
    let kept = |queue: usize| {
        by_position[..keep]
            .iter()
            .filter(|(_, q)| *q == queue)
            .count()
    };
    let dropped = ferrocket_store::truncate_commitlog(&config, cut).unwrap();
    assert!(dropped > 0);
    let (handle, parts) = MessageStore::open(config.clone()).unwrap();
    assert_eq!(handle.written_offset(), cut);
    assert!(
        parts.recovery_scanned_bytes() < config.segment_bytes as i64,
        "scanned {} bytes",
        parts.recovery_scanned_bytes()
    );
    let (q0, q1) = (kept(0), kept(1));
    assert_eq!(parts.recovered_queue_offset(TOPIC, 0), q0 as i64);
    assert_eq!(parts.recovered_queue_offset(TOPIC, 1), q1 as i64);
    drop((handle, parts));
    let more = append_round(config.clone(), 100, 1);
    assert_eq!(more.iter().map(|r| r.physical_offset).min(), Some(cut));
    let queues = read_all(config);
    let mut want0 = expected(0, 0..q0);
    want0.push(body_for(0, 0, 100));
    let mut want1 = expected(1, 0..q1);
    want1.push(body_for(0, 1, 100));
    assert_eq!(queues, vec![want0, want1]);
}
