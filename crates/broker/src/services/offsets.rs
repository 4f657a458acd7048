//! Consumer offsets (`ConsumerOffsetManager`). Each shard holds the offsets
//! of the queues it owns; shard 0 merges every shard's table into
//! `config/consumerOffset.json` every few seconds and at shutdown, and at
//! start each shard takes the entries of its own queues from that file (so
//! the file stays valid when the shard count changes).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// File holding consumer offsets under `config/`.
pub const OFFSETS_FILE: &str = "consumerOffset.json";

/// `topic@group` -> queue id -> next offset to consume.
pub type OffsetMap = BTreeMap<String, BTreeMap<i32, i64>>;

/// consumerOffset.json.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct OffsetFile {
    pub offset_table: OffsetMap,
}

/// The key Java uses: `topic@group`.
pub fn offset_key(topic: &str, group: &str) -> String {
    format!("{topic}@{group}")
}

/// The topic part of a key (topic names cannot contain `@`).
pub fn key_topic(key: &str) -> &str {
    key.split_once('@').map_or(key, |(topic, _)| topic)
}

/// One shard's offsets.
#[derive(Debug, Default)]
pub struct OffsetTable {
    map: OffsetMap,
    dirty: bool,
}

impl OffsetTable {
    /// Takes the entries of `all` for which `owned(topic, queue_id)` holds.
    pub fn from_file(all: &OffsetMap, owned: impl Fn(&str, i32) -> bool) -> Self {
        let mut map = OffsetMap::new();
        for (key, queues) in all {
            let topic = key_topic(key);
            let mine: BTreeMap<i32, i64> = queues
                .iter()
                .filter(|(queue_id, offset)| **offset >= 0 && owned(topic, **queue_id))
                .map(|(q, o)| (*q, *o))
                .collect();
            if !mine.is_empty() {
                map.insert(key.clone(), mine);
            }
        }
        Self { map, dirty: false }
    }

    pub fn commit(&mut self, group: &str, topic: &str, queue_id: i32, offset: i64) {
        let queues = self.map.entry(offset_key(topic, group)).or_default();
        if queues.insert(queue_id, offset) != Some(offset) {
            self.dirty = true;
        }
    }

    pub fn query(&self, group: &str, topic: &str, queue_id: i32) -> Option<i64> {
        self.map
            .get(&offset_key(topic, group))
            .and_then(|queues| queues.get(&queue_id))
            .copied()
    }

    /// Every committed offset of this shard's queues.
    pub fn entries(&self) -> &OffsetMap {
        &self.map
    }

    /// Drops every offset of consumer group `group`.
    pub fn forget_group(&mut self, group: &str) {
        let before = self.map.len();
        self.map
            .retain(|key, _| key.split_once('@').is_none_or(|(_, g)| g != group));
        self.dirty |= self.map.len() != before;
    }

    /// Drops every group's offsets of `topic`.
    pub fn forget_topic(&mut self, topic: &str) {
        let before = self.map.len();
        self.map.retain(|key, _| key_topic(key) != topic);
        self.dirty |= self.map.len() != before;
    }

    /// A copy of the table and whether it changed since the last snapshot.
    pub fn snapshot(&mut self) -> (OffsetMap, bool) {
        let changed = std::mem::take(&mut self.dirty);
        (self.map.clone(), changed)
    }
}

/// Merges shard tables (their queues are disjoint).
pub fn merge(parts: impl IntoIterator<Item = OffsetMap>) -> OffsetMap {
    let mut all = OffsetMap::new();
    for part in parts {
        for (key, queues) in part {
            all.entry(key).or_default().extend(queues);
        }
    }
    all
}

/// Whether a queue still starts at offset 0 and its first message is
/// within `in_memory_bytes` of the CommitLog's end `written` (Java's
/// `checkInMemByConsumeOffset`): a new group then starts from the first
/// message rather than the end.
pub fn first_message_in_memory(
    queue: &ferrocket_store::ConsumeQueue,
    written: i64,
    in_memory_bytes: i64,
) -> bool {
    queue.min_offset() <= 0
        && queue
            .entry(0)
            .is_some_and(|entry| written - entry.physical_offset <= in_memory_bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commit_query_forget_and_split_by_owner() {
        let mut table = OffsetTable::default();
        table.commit("G", "T", 0, 5);
        table.commit("G", "T", 1, 7);
        table.commit("G", "U", 0, 1);
        assert_eq!(table.query("G", "T", 1), Some(7));
        assert_eq!(table.query("H", "T", 1), None);
        let (map, changed) = table.snapshot();
        assert!(changed);
        assert!(!table.snapshot().1);
        let even = OffsetTable::from_file(&map, |_, q| q % 2 == 0);
        let odd = OffsetTable::from_file(&map, |_, q| q % 2 == 1);
        assert_eq!(even.query("G", "T", 0), Some(5));
        assert_eq!(even.query("G", "T", 1), None);
        assert_eq!(merge([even.map.clone(), odd.map.clone()]), map);
        table.forget_topic("T");
        assert_eq!(table.query("G", "T", 0), None);
        assert_eq!(table.query("G", "U", 0), Some(1));
        let json = serde_json::to_string(&OffsetFile {
            offset_table: map.clone(),
        })
        .unwrap();
        let back: OffsetFile = serde_json::from_str(&json).unwrap();
        assert_eq!(back.offset_table, map);
    }
}
