//! The store on a full disk: a ConsumeQueue that needs its next block of
//! space and finds none defers its dispatches (the messages are in the
//! CommitLog, acknowledged), the store refuses appends with DiskFull, and
//! once space is back the deferred entries land in order and appends go on.
//!
//! Runs on a small tmpfs the test mounts, which needs root; elsewhere the
//! test says so and passes without running.

mod common;

use std::fs;
use std::io::Write;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use common::*;

const TMPFS_BYTES: u64 = 16 << 20;
const TOPIC: &str = "DiskFullTopic";
/// ConsumeQueue space is taken 256 KiB (13,107 entries) at a time.
const ENTRIES_PER_CHUNK: i64 = (256 << 10) / 20;
const APPENDS_MAX: usize = 3 * ENTRIES_PER_CHUNK as usize;

struct Tmpfs(tempfile::TempDir);

impl Tmpfs {
    fn mount() -> Option<Tmpfs> {
        let dir = tempfile::tempdir().ok()?;
        let mounted = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={TMPFS_BYTES}"), "tmpfs"])
            .arg(dir.path())
            .status()
            .is_ok_and(|status| status.success());
        mounted.then_some(Tmpfs(dir))
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(self.0.path()).status();
    }
}

/// Fills the file system holding `path`, then gives back `leave_bytes`.
fn fill(path: &Path, leave_bytes: u64) {
    let mut file = fs::File::create(path).unwrap();
    let chunk = vec![0u8; 64 << 10];
    let mut written = 0u64;
    while let Ok(n) = file.write(&chunk) {
        if n == 0 {
            break;
        }
        written += n as u64;
    }
    file.set_len(written.saturating_sub(leave_bytes)).unwrap();
}

#[test]
fn queue_dispatches_wait_for_space_and_nothing_acknowledged_is_lost() {
    let Some(tmpfs) = Tmpfs::mount() else {
        eprintln!("SKIPPED: mounting a tmpfs needs root; this test did not run");
        return;
    };
    let root = tmpfs.0.path().join("store");
    let filler = tmpfs.0.path().join("filler");
    let mut config = small_config(&root);
    config.segment_bytes = 4 << 20;
    config.cq_entries_per_file = 4 * ENTRIES_PER_CHUNK as u64;
    // Only the ENOSPC of the queue file stops writes here (99% used).
    config.retention.disk_warning_level_percent = 100;
    let (acked, _, _) = run_store_in_shard(config, move |shard| async move {
        shard
            .append(request(TOPIC, 0, b"first", "a"))
            .await
            .unwrap();
        wait_for_entries(&shard, TOPIC, 0, 1).await;
        // Less room than a ConsumeQueue chunk; the segment has its own.
        fill(&filler, 64 << 10);
        let mut acked = 1i64;
        let refused = loop {
            assert!((acked as usize) < APPENDS_MAX, "appends never refused");
            match shard.append(request(TOPIC, 0, b"body", "a")).await {
                Ok(result) => {
                    assert_eq!(result.queue_offset, acked, "dense queue offsets");
                    acked += 1;
                }
                Err(error) => break error,
            }
        };
        assert!(refused.is_disk_full(), "{refused}");
        assert!(shard.is_disk_full());
        let queue = shard.consume_queue(TOPIC, 0).unwrap();
        assert!(
            queue.max_offset() < acked,
            "the queue could not have taken every entry without space"
        );
        assert!(queue.max_offset() >= ENTRIES_PER_CHUNK - 1);

        fs::remove_file(&filler).unwrap();
        wait_for_entries(&shard, TOPIC, 0, acked).await;
        let deadline = Instant::now() + Duration::from_secs(10);
        while shard.is_disk_full() {
            assert!(
                Instant::now() < deadline,
                "the store never took writes again"
            );
            glommio::timer::sleep(Duration::from_millis(50)).await;
        }
        let again = shard
            .append(request(TOPIC, 0, b"after", "a"))
            .await
            .unwrap();
        assert_eq!(again.queue_offset, acked);
        wait_for_entries(&shard, TOPIC, 0, acked + 1).await;
        assert_eq!(read_queue(&shard, TOPIC, 0).len() as i64, acked + 1);
        acked + 1
    });
    assert!(acked > ENTRIES_PER_CHUNK);
}

/// A timer store opens on a disk without room for its wheel: the wheel
/// stays sparse (holding none of the little space left) and takes its
/// blocks with its first persist once there is room.
#[test]
fn a_timer_store_opens_without_room_for_its_wheel() {
    use ferrocket_store::timer::{TimerConfig, TimerStore};
    use std::os::unix::fs::MetadataExt;
    let Some(tmpfs) = Tmpfs::mount() else {
        eprintln!("SKIPPED: mounting a tmpfs needs root; this test did not run");
        return;
    };
    let dir = tmpfs.0.path().join("timer");
    let filler = tmpfs.0.path().join("filler");
    fill(&filler, 256 << 10);
    // The default wheel: 16 bytes a slot, 8 MiB, more than the room left.
    let (store, _) = TimerStore::open(&dir, TimerConfig::default()).unwrap();
    let wheel = fs::metadata(dir.join("wheel")).unwrap();
    assert!(
        wheel.len() > TMPFS_BYTES / 4,
        "wheel of {} bytes",
        wheel.len()
    );
    assert_eq!(wheel.blocks(), 0, "a wheel without room stays sparse");
    drop(store);
    fs::remove_file(&filler).unwrap();
}
