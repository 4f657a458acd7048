//! Sync flush: an append is acknowledged only after the fdatasync that
//! covers it; a failed fdatasync is an error, a slow one FLUSH_DISK_TIMEOUT.

mod common;

use std::rc::Rc;
use std::sync::{Arc, Mutex};

use common::*;
use ferrocket_store::{
    AppendRequest, AppendStatus, FaultyIo, FlushMode, StoreConfig, StoreError, WriteMode,
};

const TOPIC: &str = "SyncTopic";

fn sync_config(root: &std::path::Path, mode: WriteMode, timeout_ms: u64) -> StoreConfig {
    let mut config = small_config(root);
    config.write_mode = mode;
    config.flush_mode = FlushMode::Sync { timeout_ms };
    config
}

fn acked_means_durable(mode: WriteMode) {
    let dir = tempfile::tempdir().unwrap();
    let config = sync_config(dir.path(), mode, 10_000);
    let (outputs, outcome, _) = run_store(config, None, 2, |shard| async move {
        let mut tasks = Vec::new();
        for t in 0..8 {
            let shard = Rc::clone(&shard);
            tasks.push(glommio::spawn_local(async move {
                let queue_id = shard.shard_id() as i32;
                let mut acked = 0;
                for n in 0..15 {
                    let body = body_for(t, queue_id, n);
                    let r = shard
                        .append(request(TOPIC, queue_id, &body, "a"))
                        .await
                        .unwrap();
                    assert_eq!(r.status, AppendStatus::Ok);
                    let durable = shard.reader().durable_offset();
                    assert!(
                        durable >= r.physical_offset + r.total_bytes as i64,
                        "acknowledged before durable: {durable} < {r:?}"
                    );
                    acked += 1;
                }
                acked
            }));
        }
        let mut acked = 0;
        for task in tasks {
            acked += task.await;
        }
        acked
    });
    outcome.unwrap();
    assert_eq!(outputs, vec![120, 120]);
}

#[test]
fn acked_means_durable_buffered() {
    acked_means_durable(WriteMode::Buffered);
}

#[test]
fn acked_means_durable_direct() {
    acked_means_durable(WriteMode::Direct);
}

type Outcomes = Arc<Mutex<Vec<Result<ferrocket_store::AppendResult, StoreError>>>>;

#[test]
fn failed_fdatasync_is_an_error_not_success() {
    let dir = tempfile::tempdir().unwrap();
    let config = sync_config(dir.path(), WriteMode::Buffered, 10_000);
    let (io, plan) = FaultyIo::new();
    let outcomes: Outcomes = Arc::default();
    let seen = Arc::clone(&outcomes);
    let steer = plan.clone();
    let (_, outcome, _) = run_store(config, Some(Arc::new(io)), 1, move |shard| {
        let plan = steer.clone();
        let seen = Arc::clone(&seen);
        async move {
            let ok = shard.append(request(TOPIC, 0, b"first", "a")).await;
            plan.fail_next_syncs(1);
            let failed = shard.append(request(TOPIC, 0, b"second", "a")).await;
            let refused = shard.append(request(TOPIC, 0, b"third", "a")).await;
            // Nothing that failed was dispatched to the ConsumeQueue.
            let queue = shard.consume_queue(TOPIC, 0).unwrap();
            wait_for_entries(&shard, TOPIC, 0, 1).await;
            assert_eq!(queue.max_offset(), 1);
            seen.lock().unwrap().extend([ok, failed, refused]);
        }
    });
    let outcomes = outcomes.lock().unwrap();
    assert_eq!(outcomes[0].as_ref().unwrap().status, AppendStatus::Ok);
    assert!(
        matches!(outcomes[1], Err(StoreError::FlushFailed(_))),
        "{:?}",
        outcomes[1]
    );
    assert_eq!(outcomes[1].as_ref().unwrap_err().response_code(), 1);
    assert_eq!(outcomes[2].as_ref().unwrap_err().response_code(), 14);
    assert!(outcome.is_err());
    assert!(plan.syncs_ok() >= 1);
}

#[test]
fn slow_fdatasync_answers_flush_disk_timeout() {
    let dir = tempfile::tempdir().unwrap();
    // The slow fdatasync takes 4x the timeout; the fast one has the whole
    // timeout, wide enough for a loaded CI machine (20 ms was not).
    let config = sync_config(dir.path(), WriteMode::Buffered, 500);
    let (io, plan) = FaultyIo::new();
    let outcomes: Outcomes = Arc::default();
    let seen = Arc::clone(&outcomes);
    let (_, outcome, _) = run_store(config, Some(Arc::new(io)), 1, move |shard| {
        let plan = plan.clone();
        let seen = Arc::clone(&seen);
        async move {
            plan.delay_syncs_ms(2_000);
            let slow = shard.append(request(TOPIC, 0, b"slow", "a")).await;
            plan.delay_syncs_ms(0);
            let fast = shard.append(request(TOPIC, 0, b"fast", "a")).await;
            // Both are stored and indexed.
            wait_for_entries(&shard, TOPIC, 0, 2).await;
            seen.lock().unwrap().extend([slow, fast]);
        }
    });
    outcome.unwrap();
    let outcomes = outcomes.lock().unwrap();
    let slow = outcomes[0].as_ref().unwrap();
    assert_eq!(slow.status, AppendStatus::FlushDiskTimeout);
    assert_eq!(slow.status.response_code(), 10);
    let fast = outcomes[1].as_ref().unwrap();
    assert_eq!(fast.status, AppendStatus::Ok);
    assert_eq!(fast.queue_offset, 1);
}

#[test]
fn batch_and_invalid_appends() {
    let dir = tempfile::tempdir().unwrap();
    let config = sync_config(dir.path(), WriteMode::Buffered, 10_000);
    let (outputs, outcome, _) = run_store(config, None, 1, |shard| async move {
        // Three records for one queue in one request.
        let mut records = bytes::BytesMut::new();
        for n in 0..3 {
            let one = request(TOPIC, 0, format!("batch-{n}").as_bytes(), "b");
            records.extend_from_slice(&one_record_bytes(one));
        }
        let tag = ferrocket_protocol::properties::tags_code("b");
        let batch = AppendRequest::batch(Arc::from(TOPIC), 0, records, vec![tag; 3]);
        let r = shard.append(batch).await.unwrap();
        assert_eq!((r.queue_offset, r.record_count), (0, 3));
        let single = shard
            .append(request(TOPIC, 0, b"after", "b"))
            .await
            .unwrap();
        assert_eq!(single.queue_offset, 3);
        wait_for_entries(&shard, TOPIC, 0, 4).await;
        let bodies = read_queue(&shard, TOPIC, 0);

        // Wrong queue id in the record, and too large for a segment.
        let wrong = AppendRequest::new(
            Arc::from(TOPIC),
            1,
            one_record_bytes(request(TOPIC, 0, b"x", "b")),
            0,
        );
        let wrong = shard.append(wrong).await.unwrap_err();
        let huge = shard
            .append(request(TOPIC, 0, &vec![0u8; 70 * 1024], "b"))
            .await
            .unwrap_err();
        (bodies, wrong, huge)
    });
    outcome.unwrap();
    let (bodies, wrong, huge) = &outputs[0];
    let want: Vec<Vec<u8>> = vec![
        b"batch-0".to_vec(),
        b"batch-1".to_vec(),
        b"batch-2".to_vec(),
        b"after".to_vec(),
    ];
    assert_eq!(bodies, &want);
    assert!(matches!(wrong, StoreError::InvalidRecord(_)));
    assert!(matches!(huge, StoreError::TooLarge { .. }));
    assert_eq!(huge.response_code(), 13);
}

fn one_record_bytes(request: AppendRequest) -> bytes::BytesMut {
    request.into_records()
}
