//! Appends from two shard executors at once, then reads everything back
//! through the reader and the ConsumeQueues; segments roll many times.

mod common;

use std::collections::BTreeSet;
use std::rc::Rc;

use common::*;
use ferrocket_protocol::record::{peek_record, RecordPeek};
use ferrocket_store::{AppendStatus, WriteMode};

const QUEUES: i32 = 4;
const PER_SHARD_PER_QUEUE: usize = 60;

fn append_and_verify(mode: WriteMode) {
    let dir = tempfile::tempdir().unwrap();
    let mut config = small_config(dir.path());
    config.write_mode = mode;
    config.segment_bytes = 16 * 1024;
    let (outputs, outcome, handle) = run_store(config, None, 2, |shard| async move {
        let me = shard.shard_id();
        // Several tasks per shard append concurrently, each to one queue in
        // order, so per-task queue offsets must grow.
        let mut tasks = Vec::new();
        for queue_id in 0..QUEUES {
            let shard = Rc::clone(&shard);
            tasks.push(glommio::spawn_local(async move {
                let mut last = -1;
                for n in 0..PER_SHARD_PER_QUEUE {
                    let body = body_for(me, queue_id, n);
                    let r = shard
                        .append(request("TopicA", queue_id, &body, &format!("tag{}", n % 3)))
                        .await
                        .unwrap();
                    assert_eq!(r.status, AppendStatus::Ok);
                    assert!(r.queue_offset > last);
                    last = r.queue_offset;
                }
            }));
        }
        for task in tasks {
            task.await;
        }
        // Read back the queues this shard owns, once both shards are done.
        let mut seen = Vec::new();
        for queue_id in (0..QUEUES).filter(|q| shard.owner_of("TopicA", *q) == me) {
            wait_for_entries(&shard, "TopicA", queue_id, 2 * PER_SHARD_PER_QUEUE as i64).await;
            let bodies = read_queue(&shard, "TopicA", queue_id);
            seen.push((queue_id, bodies));
            assert!(matches!(
                shard.consume_queue("TopicA", queue_id + 1),
                Err(ferrocket_store::StoreError::NotOwner { .. })
            ));
        }
        seen
    });
    outcome.unwrap();
    let mut queues_seen = 0;
    for (queue_id, bodies) in outputs.into_iter().flatten() {
        queues_seen += 1;
        let got: BTreeSet<Vec<u8>> = bodies.iter().cloned().collect();
        assert_eq!(got.len(), bodies.len(), "no duplicates");
        let want: BTreeSet<Vec<u8>> = (0..2)
            .flat_map(|s| (0..PER_SHARD_PER_QUEUE).map(move |n| body_for(s, queue_id, n)))
            .collect();
        assert_eq!(got, want, "queue {queue_id} holds exactly what was sent");
    }
    assert_eq!(queues_seen, QUEUES);

    // The whole log through the Send + Sync reader: records back to back,
    // blank fillers at segment ends, every segment used.
    let reader = handle.reader();
    let end = reader.written_offset();
    assert!(end > 4 * 16 * 1024, "several segments were written");
    assert_eq!(handle.durable_offset(), end, "shutdown flushes everything");
    let (mut pos, mut records, mut blanks) = (0i64, 0, 0);
    while pos < end {
        let head = reader.read(pos, 8).unwrap();
        match peek_record(&head).unwrap() {
            RecordPeek::Message { total_size, .. } => {
                let bytes = reader.read(pos, total_size).unwrap();
                ferrocket_protocol::record::decode_record(&bytes, true).unwrap();
                pos += total_size as i64;
                records += 1;
            }
            RecordPeek::Blank { total_size } => {
                assert_eq!(pos + total_size as i64, reader.next_segment_start(pos));
                pos += total_size as i64;
                blanks += 1;
            }
            RecordPeek::Unwritten => panic!("hole at {pos}"),
        }
    }
    assert_eq!(pos, end);
    assert_eq!(records, 2 * QUEUES as usize * PER_SHARD_PER_QUEUE);
    assert!(blanks >= 4);
    assert!(reader.read(end, 1).is_none(), "nothing past the end");
    let checkpoint = ferrocket_store::StoreCheckpoint::load(&handle.config().checkpoint_path())
        .unwrap()
        .unwrap();
    assert_eq!(checkpoint.commitlog_flushed, end);
    assert_eq!(checkpoint.consumequeue_flushed, end);
}

#[test]
fn two_shards_buffered() {
    append_and_verify(WriteMode::Buffered);
}

#[test]
fn two_shards_direct() {
    append_and_verify(WriteMode::Direct);
}
