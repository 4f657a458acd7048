//! One compaction pass over one queue, run on a blocking thread (never on
//! the shard's executor): Java's `CompactionLog.compactAndReplace`. It
//! maps each key of the new range (`KEYS`, the whole property as Java's
//! `getKeys()`) to its newest queue offset, then writes a new file of the
//! old file's records whose key the range does not supersede, followed by
//! the range's newest record per key. Records without keys, and a key
//! whose newest record has an empty body (a tombstone), are dropped, as
//! Java drops them. A record only object storage holds (tiered storage)
//! that is not in the read-through cache ends the range before it: the
//! next pass goes on from there once it is fetched, never dropping it.

use std::collections::HashMap;
use std::path::PathBuf;

use ferrocket_protocol::properties;
use ferrocket_protocol::record::decode_record;
use ferrocket_store::{CommitLogReader, CqEntry};

use super::file::{CompactedFile, FileWriter, SharedFile};

/// What the key map counts for one key besides its bytes (the `String`,
/// the offset and the hash table's share).
pub const KEY_ENTRY_OVERHEAD_BYTES: usize = 64;

/// What a pass works on.
pub struct PassInput {
    pub dir: PathBuf,
    pub old: SharedFile,
    /// ConsumeQueue entries of the new range, from `start` on.
    pub start: i64,
    pub entries: Vec<CqEntry>,
    pub reader: CommitLogReader,
    /// Most bytes the key map may count.
    pub key_map_bytes: usize,
}

/// A finished pass.
pub struct PassOutcome {
    pub file: CompactedFile,
    pub kept: usize,
    pub dropped: usize,
}

/// Keys of a range, each to its newest queue offset, within a byte bound.
struct KeyMap {
    newest: HashMap<String, i64>,
    bytes: usize,
    limit: usize,
}

impl KeyMap {
    /// Records `key` at `offset`; false when the map is full.
    fn insert(&mut self, key: &str, offset: i64) -> bool {
        if let Some(newest) = self.newest.get_mut(key) {
            *newest = offset;
            return true;
        }
        let cost = key.len() + KEY_ENTRY_OVERHEAD_BYTES;
        if self.bytes + cost > self.limit {
            return false;
        }
        self.bytes += cost;
        self.newest.insert(key.to_string(), offset);
        true
    }
}

/// A record's key and whether its body is empty; `None` without a key.
fn key_of(record: &[u8]) -> Option<(String, bool)> {
    let view = decode_record(record, false).ok()?;
    let key = view.properties().get(properties::KEYS)?.to_string();
    (!key.is_empty()).then_some((key, view.body.is_empty()))
}

/// Runs the pass; `Ok(None)` when the range is empty.
pub fn run(input: PassInput) -> Result<Option<PassOutcome>, String> {
    let (keys, end) = map_keys(&input);
    if end == input.start {
        return Ok(None);
    }
    let mut writer = FileWriter::create(&input.dir)?;
    let mut kept = 0;
    let mut dropped = 0;
    for slot in input.old.slots() {
        let record = input.old.record(slot);
        match key_of(record) {
            Some((key, _)) if !keys.newest.contains_key(&key) => {
                writer.push(record)?;
                kept += 1;
            }
            _ => dropped += 1,
        }
    }
    for (index, entry) in input.entries.iter().enumerate() {
        let offset = input.start + index as i64;
        if offset >= end {
            break;
        }
        let read = read(&input.reader, entry).map_err(|at| {
            format!("record at {at} left the local disk during the pass; compacted later")
        })?;
        match read.map(|r| (key_of(&r), r)) {
            Some((Some((key, false)), record)) if keys.newest.get(&key) == Some(&offset) => {
                writer.push(&record)?;
                kept += 1;
            }
            _ => dropped += 1,
        }
    }
    writer.finish(end)?;
    let file = CompactedFile::load(&input.dir)?;
    Ok(Some(PassOutcome {
        file,
        kept,
        dropped,
    }))
}

/// The range's key map, and where the range ends (earlier than its last
/// entry when the map filled up: the next pass goes on from there).
fn map_keys(input: &PassInput) -> (KeyMap, i64) {
    let mut keys = KeyMap {
        newest: HashMap::new(),
        bytes: 0,
        limit: input.key_map_bytes,
    };
    for (index, entry) in input.entries.iter().enumerate() {
        let offset = input.start + index as i64;
        let Ok(record) = read(&input.reader, entry) else {
            return (keys, offset);
        };
        let Some(record) = record else {
            continue;
        };
        if let Some((key, _)) = key_of(&record) {
            if !keys.insert(&key, offset) {
                return (keys, offset);
            }
        }
    }
    (keys, input.start + input.entries.len() as i64)
}

/// The record an entry points at; `None` when lost or deleted by retention,
/// its offset as the error when only object storage holds it (and the
/// read-through cache does not).
fn read(reader: &CommitLogReader, entry: &CqEntry) -> Result<Option<bytes::Bytes>, i64> {
    let Ok(size) = usize::try_from(entry.size) else {
        return Ok(None);
    };
    if entry.is_lost() {
        return Ok(None);
    }
    match reader.read(entry.physical_offset, size) {
        Some(record) => Ok(Some(record)),
        None if reader.is_offloaded(entry.physical_offset) => Err(entry.physical_offset),
        None => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_map_keeps_the_newest_offset_within_its_bound() {
        let mut keys = KeyMap {
            newest: HashMap::new(),
            bytes: 0,
            limit: 2 * (KEY_ENTRY_OVERHEAD_BYTES + 1),
        };
        assert!(keys.insert("a", 0));
        assert!(keys.insert("b", 1));
        assert!(keys.insert("a", 2), "a known key always fits");
        assert!(!keys.insert("c", 3), "full");
        assert_eq!(keys.newest["a"], 2);
        assert_eq!(keys.newest.len(), 2);
    }
}
