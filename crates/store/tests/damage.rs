//! Recovery keeps good data: a damaged record in the first or a middle
//! segment costs that record only (its range is quarantined and its queue
//! offset marked lost), never the segments after it; a torn tail still ends
//! the log; a short or empty ConsumeQueue file is rebuilt; a segment past
//! the end that holds bytes is moved to quarantine, not unlinked.

mod common;

use std::os::unix::fs::FileExt;
use std::path::Path;

use common::*;
use ferrocket_protocol::record::decode_record;
use ferrocket_store::{offset_file_name, AppendResult, MessageStore, StoreConfig, QUARANTINE_DIR};

const TOPIC: &str = "Damaged";
const COUNT: usize = 3_000;

fn config_in(root: &Path) -> StoreConfig {
    let mut config = small_config(root);
    // Four segments hold the 3,000 messages.
    config.segment_bytes = 160 * 1024;
    config.cq_entries_per_file = 1_000;
    config
}

fn body(n: usize) -> Vec<u8> {
    format!("message-{n:05}-{}", "x".repeat(n % 200)).into_bytes()
}

fn fill(config: &StoreConfig, first: usize, count: usize) -> Vec<AppendResult> {
    let (outputs, outcome, _) = run_store(config.clone(), None, 1, move |shard| async move {
        let mut results = Vec::new();
        for n in first..first + count {
            let sent = shard.append(request(TOPIC, 0, &body(n), "t")).await;
            results.push(sent.unwrap());
        }
        results
    });
    outcome.unwrap();
    outputs.into_iter().flatten().collect()
}

/// Every queue offset of the queue: its body, or `None` for a lost entry.
fn read_back(config: &StoreConfig) -> Vec<Option<Vec<u8>>> {
    let (outputs, outcome, _) = run_store(config.clone(), None, 1, |shard| async move {
        let queue = shard.consume_queue(TOPIC, 0).unwrap();
        let entries = queue.get(queue.min_offset(), usize::MAX);
        assert_eq!(entries.len() as i64, queue.max_offset(), "dense");
        let mut out = Vec::new();
        for (offset, entry) in entries.iter().enumerate() {
            if entry.is_lost() {
                out.push(None);
                continue;
            }
            let bytes = shard
                .read_records(entry.physical_offset, entry.size as usize)
                .unwrap();
            let view = decode_record(&bytes, true).unwrap();
            assert_eq!(view.queue_offset, offset as i64);
            out.push(Some(view.body.to_vec()));
        }
        out
    });
    outcome.unwrap();
    outputs.into_iter().next().unwrap()
}

fn overwrite(config: &StoreConfig, physical_offset: i64, at: i64, bytes: &[u8]) {
    let seg = config.segment_bytes as i64;
    let start = physical_offset - physical_offset % seg;
    let path = config.commitlog_dir().join(offset_file_name(start));
    let file = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    file.write_all_at(bytes, (physical_offset - start + at) as u64)
        .unwrap();
    file.sync_all().unwrap();
}

fn segment_count(config: &StoreConfig) -> usize {
    std::fs::read_dir(config.commitlog_dir()).unwrap().count()
}

fn quarantined(config: &StoreConfig) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(config.root_dir.join(QUARANTINE_DIR)) else {
        return Vec::new();
    };
    let mut names: Vec<String> = entries
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    names
}

/// Damages record `victim` (its magic and its body), optionally drops the
/// checkpoint and the ConsumeQueues, recovers, and checks that only that
/// record is gone and appends go on.
fn one_damaged_record(victim: usize, drop_indexes: bool) {
    let dir = tempfile::tempdir().unwrap();
    let config = config_in(dir.path());
    let sent = fill(&config, 0, COUNT);
    let segments = segment_count(&config);
    assert!(segments >= 4, "{segments} segments");
    let hit = sent[victim];
    overwrite(&config, hit.physical_offset, 4, &[0x11; 4]);
    overwrite(
        &config,
        hit.physical_offset,
        hit.total_bytes as i64 - 30,
        &[0x22; 8],
    );
    if drop_indexes {
        std::fs::remove_file(config.checkpoint_path()).unwrap();
        std::fs::remove_dir_all(config.consumequeue_dir()).unwrap();
    }
    let more = fill(&config, COUNT, 1);
    assert_eq!(more[0].queue_offset, COUNT as i64, "appends continue");
    assert_eq!(segment_count(&config), segments, "no segment deleted");
    let names = quarantined(&config);
    let next = sent[victim + 1].physical_offset;
    let wanted = format!("{:020}-{:020}", hit.physical_offset, next);
    if drop_indexes {
        assert_eq!(names, vec![wanted.clone()]);
        let kept = std::fs::read(config.root_dir.join(QUARANTINE_DIR).join(&wanted)).unwrap();
        assert_eq!(kept.len() as i64, next - hit.physical_offset);
    }
    let back = read_back(&config);
    assert_eq!(back.len(), COUNT + 1);
    for (n, got) in back.iter().enumerate() {
        if n == victim && drop_indexes {
            assert_eq!(got, &None, "the damaged record is marked lost");
        } else if n != victim {
            assert_eq!(got.as_deref(), Some(body(n).as_slice()), "offset {n}");
        }
    }
}

#[test]
fn damage_in_the_first_segment_without_checkpoint_or_queues_costs_one_record() {
    one_damaged_record(100, true);
}

#[test]
fn damage_in_a_middle_segment_without_checkpoint_or_queues_costs_one_record() {
    one_damaged_record(COUNT / 2, true);
}

#[test]
fn body_rot_under_intact_queues_is_marked_lost_on_a_full_scan() {
    let dir = tempfile::tempdir().unwrap();
    let config = config_in(dir.path());
    let sent = fill(&config, 0, COUNT);
    let hit = sent[1_234];
    // The body only: the header still parses, the CRC does not match.
    overwrite(
        &config,
        hit.physical_offset,
        hit.total_bytes as i64 - 30,
        &[0x33; 4],
    );
    std::fs::remove_file(config.checkpoint_path()).unwrap();
    let back = read_back(&config);
    assert_eq!(back.len(), COUNT);
    assert_eq!(back[1_234], None);
    assert_eq!(back[1_235].as_deref(), Some(body(1_235).as_slice()));
    assert_eq!(quarantined(&config).len(), 1);
}

#[test]
fn a_torn_tail_still_ends_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let config = config_in(dir.path());
    let sent = fill(&config, 0, 200);
    let last = sent[199];
    overwrite(&config, last.physical_offset, 20, &[0u8; 40]);
    std::fs::remove_file(config.checkpoint_path()).unwrap();
    let (handle, parts) = MessageStore::open(config.clone()).unwrap();
    assert_eq!(handle.written_offset(), last.physical_offset);
    assert_eq!(parts.recovered_queue_offset(TOPIC, 0), 199);
    drop((handle, parts));
    assert!(quarantined(&config).is_empty());
}

#[test]
fn short_and_empty_consume_queue_files_are_rebuilt() {
    for keep in [0u64, 7 * 20 + 3] {
        let dir = tempfile::tempdir().unwrap();
        let config = config_in(dir.path());
        fill(&config, 0, COUNT);
        let queue_dir = config.consumequeue_dir().join(TOPIC).join("0");
        let mut files: Vec<_> = std::fs::read_dir(&queue_dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        files.sort();
        // The middle file: everything after it must come back too.
        let victim = std::fs::OpenOptions::new()
            .write(true)
            .open(&files[1])
            .unwrap();
        victim.set_len(keep).unwrap();
        let back = read_back(&config);
        assert_eq!(back.len(), COUNT, "kept {keep} bytes");
        for (n, got) in back.iter().enumerate() {
            assert_eq!(got.as_deref(), Some(body(n).as_slice()), "offset {n}");
        }
    }
}

#[test]
fn a_segment_past_the_end_with_bytes_is_quarantined_not_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let config = config_in(dir.path());
    let sent = fill(&config, 0, 100);
    let seg = config.segment_bytes as i64;
    let end = sent[99].physical_offset + sent[99].total_bytes as i64;
    // A later segment with bytes that are no record (written by no one we
    // know): recovery must not make it vanish.
    let stray_start = (end / seg + 2) * seg;
    let stray = config.commitlog_dir().join(offset_file_name(stray_start));
    std::fs::write(&stray, vec![0x5A; seg as usize]).unwrap();
    let skipped = config
        .commitlog_dir()
        .join(offset_file_name(stray_start - seg));
    std::fs::write(&skipped, vec![0u8; seg as usize]).unwrap();
    let back = read_back(&config);
    assert_eq!(back.len(), 100);
    assert!(!stray.exists());
    assert!(!skipped.exists());
    let kept = quarantined(&config);
    assert_eq!(
        kept,
        vec![format!("segment-{}", offset_file_name(stray_start))]
    );
}

#[test]
fn damage_to_the_last_record_of_a_segment_keeps_the_later_segments() {
    // Offsets are the same in every fill: find a segment's last record.
    let dir = tempfile::tempdir().unwrap();
    let config = config_in(dir.path());
    let seg = config.segment_bytes as i64;
    let sent = fill(&config, 0, COUNT);
    let victim = (0..COUNT - 1)
        .find(|&n| sent[n].physical_offset / seg != sent[n + 1].physical_offset / seg)
        .unwrap();
    drop(dir);
    one_damaged_record(victim, true);
}

/// Zeroes `[at, at + len)` of the segment holding `physical_offset` by
/// punching a hole: what a lost page looks like to the file system.
fn punch(config: &StoreConfig, physical_offset: i64, len: i64) -> i64 {
    use std::os::unix::io::AsRawFd;
    let seg = config.segment_bytes as i64;
    let start = physical_offset - physical_offset % seg;
    let page = 4096;
    let at = (physical_offset - start + page - 1) / page * page;
    let path = config.commitlog_dir().join(offset_file_name(start));
    let file = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    let mode = libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE;
    // SAFETY: plain syscall on a file this test opened.
    let punched = unsafe { libc::fallocate(file.as_raw_fd(), mode, at, len) };
    assert_eq!(
        punched,
        0,
        "punching a hole: {}",
        std::io::Error::last_os_error()
    );
    file.sync_all().unwrap();
    start + at
}

#[test]
fn a_hole_in_a_middle_segment_costs_only_the_records_it_covers() {
    // The search past bad bytes reads only the file's data extents: the
    // records after a hole are still found.
    let dir = tempfile::tempdir().unwrap();
    let config = config_in(dir.path());
    let sent = fill(&config, 0, COUNT);
    let hole_len = 8192;
    let hole = punch(&config, sent[1_000].physical_offset, hole_len);
    std::fs::remove_file(config.checkpoint_path()).unwrap();
    std::fs::remove_dir_all(config.consumequeue_dir()).unwrap();
    fill(&config, COUNT, 1);
    assert_eq!(quarantined(&config).len(), 1, "one damaged range");
    let back = read_back(&config);
    assert_eq!(back.len(), COUNT + 1);
    let mut lost = 0;
    for (n, got) in back.iter().enumerate().take(COUNT) {
        let start = sent[n].physical_offset;
        let end = start + i64::from(sent[n].total_bytes);
        let covered = start < hole + hole_len && end > hole;
        match covered {
            true => lost += usize::from(got.is_none()),
            false => assert_eq!(got.as_deref(), Some(body(n).as_slice()), "offset {n}"),
        }
    }
    assert!(lost > 0, "the records under the hole are marked lost");
}
