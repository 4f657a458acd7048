//! A slave's store: the master's CommitLog bytes replicated at the master's
//! offsets give a byte-identical CommitLog and the same ConsumeQueues, a
//! new slave may start at the master's last segment, and the slave's store
//! refuses anything else.

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::BytesMut;
use common::*;
use ferrocket_protocol::record::{peek_record, RecordPeek};
use ferrocket_store::{CommitLogReader, StoreConfig, StoreError};

const QUEUES: i32 = 3;
const RECORDS: usize = 240;

fn master_config(root: &std::path::Path) -> StoreConfig {
    let mut config = small_config(root);
    config.segment_bytes = 16 * 1024;
    config
}

fn slave_config(root: &std::path::Path) -> StoreConfig {
    let mut config = master_config(root);
    config.replica = true;
    config
}

/// Writes RECORDS records over QUEUES queues on a master; returns its
/// reader and each queue's bodies in order.
fn fill_master(root: &std::path::Path) -> (CommitLogReader, BTreeMap<i32, Vec<Vec<u8>>>) {
    let (_, outcome, handle) = run_store(master_config(root), None, 1, |shard| async move {
        for n in 0..RECORDS {
            let queue_id = (n % QUEUES as usize) as i32;
            let body = body_for(0, queue_id, n);
            shard
                .append(request("TopicR", queue_id, &body, &format!("t{}", n % 2)))
                .await
                .unwrap();
        }
    });
    outcome.unwrap();
    let mut bodies: BTreeMap<i32, Vec<Vec<u8>>> = BTreeMap::new();
    for n in 0..RECORDS {
        let queue_id = (n % QUEUES as usize) as i32;
        bodies
            .entry(queue_id)
            .or_default()
            .push(body_for(0, queue_id, n));
    }
    (handle.reader(), bodies)
}

/// The master's CommitLog from `from` on, cut at record boundaries into
/// chunks of at most `chunk_max` bytes that never cross a segment, the way
/// the HA stream hands them to a slave.
fn chunks(reader: &CommitLogReader, from: i64, chunk_max: usize) -> Vec<(i64, Vec<u8>)> {
    let seg = reader.segment_bytes() as i64;
    let end = reader.written_offset();
    let mut out = Vec::new();
    let mut pos = from;
    while pos < end {
        let seg_end = (pos - pos % seg + seg).min(end);
        let bytes = reader.read(pos, (seg_end - pos) as usize).unwrap();
        let (mut at, mut chunk_start) = (0usize, 0usize);
        while at < bytes.len() {
            let size = match peek_record(&bytes[at..]).unwrap() {
                RecordPeek::Message { total_size, .. } | RecordPeek::Blank { total_size } => {
                    total_size
                }
                RecordPeek::Unwritten => panic!("unwritten bytes below the written end"),
            };
            if at + size - chunk_start > chunk_max && at > chunk_start {
                out.push((pos + chunk_start as i64, bytes[chunk_start..at].to_vec()));
                chunk_start = at;
            }
            at += size;
        }
        out.push((pos + chunk_start as i64, bytes[chunk_start..].to_vec()));
        pos = seg_end;
    }
    out
}

/// Replicates `chunks` into a slave store at `root` (2 shards), then reads
/// every queue back; returns the slave's reader and the queues' bodies.
fn replicate(
    root: &std::path::Path,
    chunks: Vec<(i64, Vec<u8>)>,
) -> (CommitLogReader, BTreeMap<i32, Vec<Vec<u8>>>) {
    let chunks = Arc::new(chunks);
    let counts: Arc<BTreeMap<i32, i64>> = Arc::new(
        (0..QUEUES)
            .map(|q| {
                (
                    q,
                    (RECORDS as i64 + QUEUES as i64 - 1 - q as i64) / QUEUES as i64,
                )
            })
            .collect(),
    );
    let (outputs, outcome, handle) = run_store(slave_config(root), None, 2, move |shard| {
        let chunks = Arc::clone(&chunks);
        let counts = Arc::clone(&counts);
        async move {
            if shard.shard_id() == 0 {
                for (start, bytes) in chunks.iter() {
                    let result = shard
                        .replicate(*start, BytesMut::from(&bytes[..]))
                        .await
                        .unwrap();
                    assert_eq!(result.physical_offset, *start);
                }
                let refused = shard.append(request("TopicR", 0, b"x", "t")).await;
                assert!(
                    matches!(refused, Err(StoreError::Unavailable(_))),
                    "{refused:?}"
                );
            }
            let mut seen = Vec::new();
            for queue_id in (0..QUEUES).filter(|q| shard.owner_of("TopicR", *q) == shard.shard_id())
            {
                wait_for_entries(&shard, "TopicR", queue_id, counts[&queue_id]).await;
                seen.push((queue_id, read_queue(&shard, "TopicR", queue_id)));
            }
            seen
        }
    });
    outcome.unwrap();
    (handle.reader(), outputs.into_iter().flatten().collect())
}

fn log_bytes(reader: &CommitLogReader, from: i64) -> Vec<u8> {
    chunks(reader, from, usize::MAX)
        .into_iter()
        .flat_map(|(_, bytes)| bytes)
        .collect()
}

#[test]
fn a_slave_holds_the_masters_log_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let (master, bodies) = fill_master(&dir.path().join("master"));
    assert!(
        master.written_offset() > 3 * master.segment_bytes() as i64,
        "several segments"
    );
    let (slave, slave_bodies) = replicate(&dir.path().join("slave"), chunks(&master, 0, 3000));
    assert_eq!(slave.written_offset(), master.written_offset());
    assert!(
        log_bytes(&slave, 0) == log_bytes(&master, 0),
        "CommitLogs differ"
    );
    assert_eq!(slave_bodies, bodies);
}

#[test]
fn a_new_slave_starts_at_the_masters_last_segment_and_recovers_there() {
    let dir = tempfile::tempdir().unwrap();
    let (master, bodies) = fill_master(&dir.path().join("master"));
    let seg = master.segment_bytes() as i64;
    let last = master.written_offset() - master.written_offset() % seg;
    let slave_root = dir.path().join("slave");
    // Only the last segment's records reach the slave: read_queue checks
    // every entry the slave's queues begin with against its record.
    let tail = chunks(&master, last, 2000);
    let chunks_arc = Arc::new(tail);
    let (outputs, outcome, handle) = run_store(slave_config(&slave_root), None, 1, move |shard| {
        let chunks = Arc::clone(&chunks_arc);
        async move {
            for (start, bytes) in chunks.iter() {
                shard
                    .replicate(*start, BytesMut::from(&bytes[..]))
                    .await
                    .unwrap();
            }
            let wrong = shard.replicate(7, BytesMut::from(&chunks[0].1[..])).await;
            assert!(
                matches!(wrong, Err(StoreError::InvalidRecord(_))),
                "{wrong:?}"
            );
            (0..QUEUES)
                .map(|q| read_queue(&shard, "TopicR", q))
                .collect::<Vec<_>>()
        }
    });
    outcome.unwrap();
    assert_eq!(handle.reader().min_offset(), last);
    assert!(log_bytes(&handle.reader(), last) == log_bytes(&master, last));
    for (queue_id, slave_bodies) in outputs.into_iter().next().unwrap().into_iter().enumerate() {
        let all = &bodies[&(queue_id as i32)];
        assert!(!slave_bodies.is_empty());
        assert_eq!(&all[all.len() - slave_bodies.len()..], &slave_bodies[..]);
    }
    // Reopened, the slave's store recovers the same end and queues.
    let (outputs, outcome, handle) =
        run_store(slave_config(&slave_root), None, 1, |shard| async move {
            (0..QUEUES)
                .map(|q| read_queue(&shard, "TopicR", q).len())
                .collect::<Vec<_>>()
        });
    outcome.unwrap();
    assert_eq!(handle.reader().written_offset(), master.written_offset());
    assert!(outputs[0].iter().all(|n| *n > 0));
}
