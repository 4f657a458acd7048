//! Every append acknowledged under sync flush survives kill -9: a child
//! process appends and prints each acknowledgement; the parent kills it
//! mid-stream with SIGKILL, reopens the store and finds every acked record.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use common::*;
use ferrocket_protocol::record::decode_record;
use ferrocket_store::{queue_dir, ConsumeQueue, FlushMode, MessageStore, StoreConfig, WriteMode};

const CHILD_ENV: &str = "FERROCKET_STORE_KILL9_DIR";
const MODE_ENV: &str = "FERROCKET_STORE_KILL9_DIRECT";
const TOPIC: &str = "Kill9";
/// Acks the parent waits for before killing the child.
const ACKS_BEFORE_KILL: usize = 300;
/// The child stops by itself after this many appends per shard.
const CHILD_APPENDS_MAX: usize = 200_000;

fn config(root: &std::path::Path, direct: bool) -> StoreConfig {
    let mut config = small_config(root);
    if direct {
        config.write_mode = WriteMode::Direct;
    }
    config.flush_mode = FlushMode::Sync { timeout_ms: 10_000 };
    config
}

/// The child: appends until killed (or a bound), printing each ack.
#[test]
fn kill9_child() {
    let Ok(dir) = std::env::var(CHILD_ENV) else {
        return;
    };
    let direct = std::env::var(MODE_ENV).is_ok_and(|v| v == "1");
    let _ = run_store(config(dir.as_ref(), direct), None, 2, |shard| async move {
        let me = shard.shard_id();
        for n in 0..CHILD_APPENDS_MAX {
            let queue_id = me as i32;
            let body = body_for(me, queue_id, n);
            let Ok(r) = shard.append(request(TOPIC, queue_id, &body, "k")).await else {
                break;
            };
            println!(
                "ACK {me} {queue_id} {} {} {n}",
                r.queue_offset, r.physical_offset
            );
        }
    });
}

#[test]
fn acked_sync_appends_survive_kill_9_buffered() {
    kill_and_check(false);
}

#[test]
fn acked_sync_appends_survive_kill_9_direct() {
    kill_and_check(true);
}

fn kill_and_check(direct: bool) {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["kill9_child", "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, dir.path())
        .env(MODE_ENV, if direct { "1" } else { "0" })
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut acks = Vec::new();
    for line in BufReader::new(stdout).lines() {
        let line = line.unwrap();
        let Some(rest) = line.strip_prefix("ACK ") else {
            continue;
        };
        let f: Vec<i64> = rest.split(' ').map(|x| x.parse().unwrap()).collect();
        acks.push((f[0] as usize, f[1] as i32, f[2], f[3], f[4] as usize));
        if acks.len() == ACKS_BEFORE_KILL {
            child.kill().unwrap(); // SIGKILL
        }
    }
    child.wait().unwrap();
    assert!(
        acks.len() >= ACKS_BEFORE_KILL,
        "child acked only {}",
        acks.len()
    );

    let config = config(dir.path(), direct);
    let (handle, _parts) = MessageStore::open(config.clone()).unwrap();
    let reader = handle.reader();
    for (shard, queue_id, queue_offset, physical_offset, n) in acks {
        let head = reader.read(physical_offset, 4).expect("acked record lost");
        let size = i32::from_be_bytes([head[0], head[1], head[2], head[3]]) as usize;
        let bytes = reader.read(physical_offset, size).unwrap();
        let view = decode_record(&bytes, true).unwrap();
        assert_eq!(view.body, body_for(shard, queue_id, n).as_slice());
        assert_eq!((view.queue_id, view.queue_offset), (queue_id, queue_offset));
        let queue = ConsumeQueue::open(
            queue_dir(&config.consumequeue_dir(), TOPIC, queue_id).unwrap(),
            config.cq_entries_per_file,
        )
        .unwrap();
        assert_eq!(
            queue.entry(queue_offset).unwrap().physical_offset,
            physical_offset
        );
    }
}
