//! Where each deleted topic's queues restarted (`config/queueFloors.json`).
//!
//! A deleted topic's records stay in the CommitLog until retention removes
//! them. If the topic comes back, its queues restart at offset 0, so on a
//! restart recovery must not mistake the old records for the new queue's:
//! it skips records of a queue below its floor (the CommitLog position where
//! the appender reset its offsets). Floors below the CommitLog's start are
//! dropped: those records are gone.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::error::StoreError;
use crate::json_file::ConfigDir;

/// File name under the store's `config/`.
pub const QUEUE_FLOORS_FILE: &str = "queueFloors.json";

#[derive(Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct FloorsFile {
    floors: Vec<Floor>,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Floor {
    topic: String,
    queue_id: i32,
    commitlog_offset: i64,
}

/// Floors by topic, then queue id.
#[derive(Default, Debug, Clone)]
pub(crate) struct QueueFloors {
    floors: HashMap<String, HashMap<i32, i64>>,
}

impl QueueFloors {
    pub(crate) fn load(dir: &ConfigDir) -> Result<Self, StoreError> {
        let file: FloorsFile = dir.read_json(QUEUE_FLOORS_FILE)?.unwrap_or_default();
        let mut floors = Self::default();
        for floor in file.floors {
            floors.set(&floor.topic, floor.queue_id, floor.commitlog_offset);
        }
        Ok(floors)
    }

    pub(crate) fn store(&self, dir: &ConfigDir) -> Result<(), StoreError> {
        let mut file = FloorsFile::default();
        for (topic, queues) in &self.floors {
            for (queue_id, offset) in queues {
                file.floors.push(Floor {
                    topic: topic.clone(),
                    queue_id: *queue_id,
                    commitlog_offset: *offset,
                });
            }
        }
        file.floors
            .sort_by(|a, b| (&a.topic, a.queue_id).cmp(&(&b.topic, b.queue_id)));
        dir.write_json(QUEUE_FLOORS_FILE, &file)
    }

    pub(crate) fn set(&mut self, topic: &str, queue_id: i32, commitlog_offset: i64) {
        self.floors
            .entry(topic.to_owned())
            .or_default()
            .insert(queue_id, commitlog_offset);
    }

    /// True when a record of the queue at `position` predates its reset.
    pub(crate) fn hides(&self, topic: &str, queue_id: i32, position: i64) -> bool {
        self.floors
            .get(topic)
            .and_then(|queues| queues.get(&queue_id))
            .is_some_and(|floor| position < *floor)
    }

    /// Drops floors at or below `commitlog_min`; true when any went.
    pub(crate) fn prune(&mut self, commitlog_min: i64) -> bool {
        let before: usize = self.floors.values().map(HashMap::len).sum();
        for queues in self.floors.values_mut() {
            queues.retain(|_, floor| *floor > commitlog_min);
        }
        self.floors.retain(|_, queues| !queues.is_empty());
        let after: usize = self.floors.values().map(HashMap::len).sum();
        after != before
    }

    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.floors.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floors_hide_older_records_and_persist() {
        let dir = tempfile::tempdir().unwrap();
        let config = ConfigDir::open(dir.path()).unwrap();
        let mut floors = QueueFloors::load(&config).unwrap();
        assert!(floors.is_empty());
        floors.set("T", 1, 5_000);
        floors.set("U", 0, 100);
        assert!(floors.hides("T", 1, 4_999));
        assert!(!floors.hides("T", 1, 5_000));
        assert!(!floors.hides("T", 2, 0));
        floors.store(&config).unwrap();
        let mut loaded = QueueFloors::load(&config).unwrap();
        assert!(loaded.hides("T", 1, 10) && loaded.hides("U", 0, 99));
        assert!(loaded.prune(1_000));
        assert!(!loaded.hides("U", 0, 99));
        assert!(loaded.hides("T", 1, 10));
        assert!(!loaded.prune(1_000));
    }
}
