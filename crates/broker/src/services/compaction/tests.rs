use bytes::BytesMut;
use ferrocket_protocol::properties::Properties;
use ferrocket_protocol::record::NewRecord;

use super::file::{CompactedFile, FileWriter};
use super::read::{bounds, gather};
use crate::services::filter::TagFilter;

fn record(queue_offset: i64, key: &str, body: &[u8]) -> BytesMut {
    let mut props = Properties::default();
    props.insert("KEYS", key);
    let props = props.to_bytes();
    let host = "127.0.0.1:10911".parse().unwrap();
    let new = NewRecord {
        topic: "T",
        queue_id: 0,
        flag: 0,
        sys_flag: 0,
        born_timestamp_ms: 1,
        born_host: host,
        store_timestamp_ms: 1,
        store_host: host,
        reconsume_times: 0,
        prepared_transaction_offset: 0,
        body,
        properties: &props,
    };
    let mut out = BytesMut::new();
    new.encode(queue_offset, queue_offset * 1000, &mut out)
        .unwrap();
    out
}

fn written(dir: &std::path::Path, upto: i64, offsets: &[i64]) -> CompactedFile {
    let mut writer = FileWriter::create(dir).unwrap();
    for &offset in offsets {
        writer
            .push(&record(offset, &format!("k{offset}"), b"v"))
            .unwrap();
    }
    writer.finish(upto).unwrap();
    CompactedFile::load(dir).unwrap()
}

#[test]
fn a_written_file_loads_with_its_offsets() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(
        CompactedFile::load(dir.path()).unwrap().upto(),
        0,
        "none yet"
    );
    let file = written(dir.path(), 10, &[2, 5, 7]);
    assert_eq!(file.upto(), 10);
    let offsets: Vec<i64> = file.slots().iter().map(|s| s.queue_offset).collect();
    assert_eq!(offsets, [2, 5, 7]);
    let again = written(dir.path(), 12, &[5, 11]);
    assert_eq!(again.slots().len(), 2, "the rewrite replaced the file");
    assert_eq!(file.slots().len(), 3, "an old map still reads the old file");
}

#[test]
fn a_damaged_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    written(dir.path(), 10, &[2, 5]);
    let path = dir.path().join("compacted");
    let mut bytes = std::fs::read(&path).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    std::fs::write(&path, bytes).unwrap();
    assert!(CompactedFile::load(dir.path()).is_err());
}

#[test]
fn reads_skip_compacted_offsets_and_end_at_upto() {
    let dir = tempfile::tempdir().unwrap();
    let file = written(dir.path(), 10, &[2, 5, 7]);
    let b = bounds(&file, 0);
    assert_eq!((b.min, b.tail), (2, 10));
    let all = gather(&file, b.tail, 0, (32, 1 << 20), &TagFilter::All).unwrap();
    assert_eq!(all.records.len(), 3);
    assert_eq!(all.next, 10, "past the last record kept: upto");
    let one = gather(&file, b.tail, 3, (1, 1 << 20), &TagFilter::All).unwrap();
    assert_eq!(one.records.len(), 1);
    assert_eq!(one.next, 6, "the record at 5, next 6");
    assert!(gather(&file, b.tail, 8, (32, 1 << 20), &TagFilter::All).is_none());
    assert_eq!(
        bounds(&file, 12).tail,
        12,
        "retention moved the queue past upto"
    );
}

#[test]
fn a_pass_fetches_what_the_read_cache_keeps() {
    use super::{fetch_budget, PASS_FETCH_BYTES_MAX};
    // Half the cache less the chunk read ahead past what was fetched.
    assert_eq!(fetch_budget(64 << 10, 16 << 10), 16 << 10);
    assert_eq!(fetch_budget(256 << 20, 4 << 20), PASS_FETCH_BYTES_MAX);
    // A cache of two chunks: only the first record (always fetched).
    assert_eq!(fetch_budget(32 << 10, 16 << 10), 0);
}
