//! IndexService: put/query by key and unique key, file rolls, time ranges,
//! limits, reopen, recovery truncation, hash collisions and damaged files.

use std::fs;

use ferrocket_store::index::{
    index_key_hash, message_index_keys, IndexConfig, IndexError, IndexService,
};

fn small(slots: u32, entries: u32) -> IndexConfig {
    IndexConfig {
        hash_slots: slots,
        entries_per_file: entries,
        ..IndexConfig::default()
    }
}

const T0: i64 = 1_700_000_000_000;

/// Message `i` at offset `i * 100`, stored at `T0 + i * 10 s`, with keys
/// `U{i}` (unique), `order-{i}` and `common`.
fn put_messages(index: &mut IndexService, range: std::ops::Range<i64>) {
    for i in range {
        let uniq = format!("U{i}");
        let keys = format!("order-{i} common");
        let all = message_index_keys(Some(&keys), Some(&uniq));
        assert_eq!(all.len(), 3);
        let written = index.put("TopicA", &all, i * 100, T0 + i * 10_000).unwrap();
        assert_eq!(written, 3);
    }
}

#[test]
fn put_and_query_across_file_rolls() {
    let dir = tempfile::tempdir().unwrap();
    // 4 entries per file: every message (3 keys) forces frequent rolls.
    let mut index = IndexService::open(dir.path().join("index"), small(7, 5)).unwrap();
    put_messages(&mut index, 0..10);
    assert_eq!(index.entry_count(), 30);
    assert!(index.file_count() >= 8, "files: {}", index.file_count());
    for i in 0..10 {
        let uniq = format!("U{i}");
        assert_eq!(index.query("TopicA", &uniq, 32, 0, i64::MAX), vec![i * 100]);
        let order = format!("order-{i}");
        assert_eq!(
            index.query("TopicA", &order, 32, 0, i64::MAX),
            vec![i * 100]
        );
    }
    let all: Vec<i64> = (0..10).rev().map(|i| i * 100).collect();
    assert_eq!(index.query("TopicA", "common", 32, 0, i64::MAX), all);
    // Topic is part of the key.
    assert!(index.query("TopicB", "common", 32, 0, i64::MAX).is_empty());
    assert!(index.query("TopicA", "missing", 32, 0, i64::MAX).is_empty());
    assert_eq!(index.last_indexed_offset(), Some(900));
    assert_eq!(index.last_update(), (T0 + 90_000, 900));
}

#[test]
fn time_range_and_max_count() {
    let dir = tempfile::tempdir().unwrap();
    let mut index = IndexService::open(
        dir.path(),
        IndexConfig {
            query_count_max: 5,
            ..small(64, 9)
        },
    )
    .unwrap();
    put_messages(&mut index, 0..10);
    // Messages 3..=6 are stored within [T0 + 30 s, T0 + 60 s].
    let got = index.query("TopicA", "common", 32, T0 + 30_000, T0 + 60_000);
    assert_eq!(got, vec![600, 500, 400, 300]);
    // Seconds granularity: a begin 500 ms after message 3 still includes it.
    let got = index.query("TopicA", "common", 32, T0 + 30_500, T0 + 40_000);
    assert_eq!(got, vec![400, 300]);
    assert!(index
        .query("TopicA", "common", 32, T0 + 200_000, T0 + 300_000)
        .is_empty());
    assert!(index
        .query("TopicA", "common", 32, T0 + 60_000, T0)
        .is_empty());
    // max_count picks the newest; the config caps it.
    assert_eq!(
        index.query("TopicA", "common", 2, 0, i64::MAX),
        vec![900, 800]
    );
    assert_eq!(index.query("TopicA", "common", 100, 0, i64::MAX).len(), 5);
    assert!(index.query("TopicA", "common", 0, 0, i64::MAX).is_empty());
}

#[test]
fn reopen_keeps_entries_and_ignores_replayed_records() {
    let dir = tempfile::tempdir().unwrap();
    let config = small(13, 8);
    {
        let mut index = IndexService::open(dir.path(), config.clone()).unwrap();
        put_messages(&mut index, 0..6);
        index.flush().unwrap();
    }
    let mut index = IndexService::open(dir.path(), config.clone()).unwrap();
    assert_eq!(index.entry_count(), 18);
    assert_eq!(index.last_indexed_offset(), Some(500));
    assert_eq!(index.query("TopicA", "U2", 8, 0, i64::MAX), vec![200]);
    // Replaying already indexed records writes nothing.
    assert_eq!(index.put("TopicA", &["U2"], 200, T0).unwrap(), 0);
    assert_eq!(index.put("TopicA", &["U5"], 500, T0).unwrap(), 0);
    put_messages(&mut index, 6..9);
    assert_eq!(
        index.query("TopicA", "common", 64, 0, i64::MAX),
        (0..9).rev().map(|i| i * 100).collect::<Vec<_>>()
    );
    for handle in index.take_dirty_files().unwrap() {
        handle.sync_data().unwrap();
    }
    drop(index);
    let index = IndexService::open(dir.path(), config).unwrap();
    assert_eq!(index.query("TopicA", "order-8", 8, 0, i64::MAX), vec![800]);
}

#[test]
fn hash_collisions_return_every_candidate_with_the_same_hash() {
    let dir = tempfile::tempdir().unwrap();
    // One slot: every key shares one chain.
    let mut index = IndexService::open(dir.path(), small(1, 64)).unwrap();
    // "Aa" and "BB" have the same Java hashCode; "Cc" does not.
    assert_eq!(index_key_hash("T", "Aa"), index_key_hash("T", "BB"));
    assert_ne!(index_key_hash("T", "Aa"), index_key_hash("T", "Cc"));
    index.put("T", &["Aa"], 0, T0).unwrap();
    index.put("T", &["Cc"], 100, T0).unwrap();
    index.put("T", &["BB"], 200, T0).unwrap();
    index.put("T", &["x", "Aa"], 300, T0).unwrap();
    index.put("T", &["Cc"], 400, T0).unwrap();
    // Same hash: candidates for the caller to verify; different hash in the
    // same slot: filtered out.
    assert_eq!(index.query("T", "Aa", 64, 0, i64::MAX), vec![300, 200, 0]);
    assert_eq!(index.query("T", "BB", 64, 0, i64::MAX), vec![300, 200, 0]);
    assert_eq!(index.query("T", "Cc", 64, 0, i64::MAX), vec![400, 100]);
    assert_eq!(index.query("T", "x", 64, 0, i64::MAX), vec![300]);
}

#[test]
fn truncate_from_restores_chains() {
    let dir = tempfile::tempdir().unwrap();
    let config = small(2, 6);
    let mut index = IndexService::open(dir.path(), config.clone()).unwrap();
    put_messages(&mut index, 0..8);
    let files_before = index.file_count();
    // The CommitLog recovered only up to offset 450: messages 5.. are gone.
    assert_eq!(index.truncate_from(450).unwrap(), 9);
    assert!(index.file_count() < files_before);
    assert_eq!(index.last_indexed_offset(), Some(400));
    assert_eq!(
        index.query("TopicA", "common", 64, 0, i64::MAX),
        vec![400, 300, 200, 100, 0]
    );
    assert!(index.query("TopicA", "U6", 64, 0, i64::MAX).is_empty());
    // Re-dispatch writes the lost messages again.
    put_messages(&mut index, 5..8);
    assert_eq!(index.query("TopicA", "U6", 64, 0, i64::MAX), vec![600]);
    assert_eq!(index.query("TopicA", "common", 64, 0, i64::MAX).len(), 8);
    index.flush().unwrap();
    drop(index);
    let mut index = IndexService::open(dir.path(), config).unwrap();
    assert_eq!(index.truncate_from(0).unwrap(), 24);
    assert_eq!(index.file_count(), 1);
    assert_eq!(index.last_indexed_offset(), None);
    assert!(index.query("TopicA", "common", 64, 0, i64::MAX).is_empty());
    assert_eq!(index.put("TopicA", &["k"], 0, T0).unwrap(), 1);
}

#[test]
fn damaged_files_give_typed_errors_or_bounded_answers() {
    let dir = tempfile::tempdir().unwrap();
    let config = small(4, 16);
    {
        let mut index = IndexService::open(dir.path(), config.clone()).unwrap();
        put_messages(&mut index, 0..4);
        index.flush().unwrap();
    }
    let name = fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .next()
        .unwrap();
    let good = fs::read(&name).unwrap();

    // Entries overwritten with garbage (chains pointing anywhere): queries
    // stay bounded and never panic.
    let mut bytes = good.clone();
    let entries_at = 40 + 4 * 4;
    for (n, b) in bytes[entries_at + 20..].iter_mut().enumerate() {
        *b = (n as u8).wrapping_mul(37).wrapping_add(11);
    }
    fs::write(&name, &bytes).unwrap();
    let index = IndexService::open(dir.path(), config.clone()).unwrap();
    let got = index.query("TopicA", "common", 64, 0, i64::MAX);
    assert!(got.len() <= 64);
    drop(index);

    // Index count beyond the file's capacity.
    let mut bytes = good.clone();
    bytes[36..40].copy_from_slice(&1000i32.to_be_bytes());
    fs::write(&name, &bytes).unwrap();
    let err = IndexService::open(dir.path(), config.clone()).unwrap_err();
    assert!(matches!(err, IndexError::Corrupt { .. }), "{err}");

    // Wrong size (e.g. slot count changed in the config).
    fs::write(&name, &good[..good.len() - 20]).unwrap();
    let err = IndexService::open(dir.path(), config.clone()).unwrap_err();
    assert!(matches!(err, IndexError::SizeMismatch { .. }), "{err}");
    fs::write(&name, &good).unwrap();
    let err = IndexService::open(dir.path(), small(5, 16)).unwrap_err();
    assert!(matches!(err, IndexError::SizeMismatch { .. }), "{err}");

    // Other names are ignored.
    fs::write(dir.path().join("notes.txt"), b"hi").unwrap();
    let index = IndexService::open(dir.path(), config).unwrap();
    assert_eq!(index.query("TopicA", "U3", 8, 0, i64::MAX), vec![300]);
}

#[test]
fn limits_and_config() {
    let dir = tempfile::tempdir().unwrap();
    assert!(matches!(
        IndexService::open(dir.path(), small(0, 10)),
        Err(IndexError::Config(_))
    ));
    assert!(matches!(
        IndexService::open(dir.path(), small(10, 1)),
        Err(IndexError::Config(_))
    ));
    assert!(matches!(
        IndexService::open(dir.path(), small(u32::MAX, u32::MAX / 2)),
        Err(IndexError::Config(_))
    ));
    let mut index = IndexService::open(
        dir.path(),
        IndexConfig {
            keys_per_message_max: 2,
            ..small(16, 32)
        },
    )
    .unwrap();
    assert!(matches!(
        index.put("T", &["a"], -1, T0),
        Err(IndexError::InvalidOffset { .. })
    ));
    assert_eq!(index.put("T", &["a", "", "b", "c"], 0, T0).unwrap(), 2);
    assert!(index.query("T", "c", 8, 0, i64::MAX).is_empty());
    assert_eq!(index.query("T", "b", 8, 0, i64::MAX), vec![0]);
}
