//! A shard's compaction topics: which queues read through their compacted
//! file, and the passes over the queues it owns.

use std::collections::HashMap;
use std::sync::Arc;

use ferrocket_runtime::shard::owner_shard;
use ferrocket_store::ConsumeQueue;

use super::Shard;
use crate::services::compaction::{self, file::SharedFile, read};
use crate::services::filter::TagFilter;
use crate::services::pull::{gather_from, Gathered};

impl Shard {
    /// The compacted file of a queue this shard owns, when its topic is a
    /// compaction topic and compaction is on (`enableCompaction`).
    pub fn compacted_file(&self, topic: &str, queue_id: i32) -> Option<SharedFile> {
        if !self.config().compaction.enabled {
            return None;
        }
        // `with`: no reference count written on the read path.
        let compacted = self.topics().with(|topics| {
            topics
                .topic_config_table
                .get(topic)
                .is_some_and(compaction::is_compaction_topic)
        });
        if !compacted {
            return None;
        }
        self.compaction()
            .file(self.store.root_dir(), topic, queue_id)
    }

    /// The first offset a read of the queue finds (its compacted file's
    /// first record, for a compaction topic).
    pub fn read_min(&self, topic: &str, queue_id: i32, queue: &ConsumeQueue) -> i64 {
        match self.compacted_file(topic, queue_id) {
            Some(file) => read::bounds(&file, queue.min_offset()).min,
            None => queue.min_offset(),
        }
    }

    /// A pop's read of a queue this shard owns: [`gather_from`], through
    /// the queue's compacted file for a compaction topic.
    pub fn gather_queue(
        &self,
        queue: &ConsumeQueue,
        (topic, queue_id): (&str, i32),
        start: i64,
        limits: (usize, usize),
        filter: &TagFilter,
    ) -> Gathered {
        let Some(file) = self.compacted_file(topic, queue_id) else {
            return gather_from(&self.store, queue, start, limits, filter);
        };
        let tail = read::bounds(&file, queue.min_offset()).tail;
        read::gather(&file, tail, start, limits, filter)
            .unwrap_or_else(|| gather_from(&self.store, queue, start.max(tail), limits, filter))
    }

    /// The compaction-topic queues this shard owns and has opened.
    fn compaction_queues(&self) -> Vec<(String, i32)> {
        let topics = self.topics().get();
        let compacted = |topic: &str| {
            topics
                .topic_config_table
                .get(topic)
                .is_some_and(compaction::is_compaction_topic)
        };
        self.compaction().retain_topics(compacted);
        self.store
            .open_queues()
            .into_iter()
            .filter(|(topic, queue_id)| {
                compacted(topic) && owner_shard(topic, *queue_id, self.count) == self.index
            })
            .map(|(topic, queue_id)| (topic.to_string(), queue_id))
            .collect()
    }

    /// Per compaction topic, where each queue this shard owns is compacted
    /// up to: the store keeps every CommitLog entry from there on, however
    /// old, so retention never takes a message before it is compacted (a
    /// queue without a compacted file keeps everything).
    pub fn compaction_pins(&self) -> Vec<(Arc<str>, HashMap<i32, i64>)> {
        if !self.config().compaction.enabled {
            return Vec::new();
        }
        let mut pins: HashMap<Arc<str>, HashMap<i32, i64>> = HashMap::new();
        let topics = self.topics().get();
        for (topic, config) in &topics.topic_config_table {
            if compaction::is_compaction_topic(config) {
                pins.entry(Arc::from(topic.as_str())).or_default();
            }
        }
        for (topic, queue_id) in self.compaction_queues() {
            let upto = self
                .compaction()
                .file(self.store.root_dir(), &topic, queue_id);
            if let (Some(queues), Some(file)) = (pins.get_mut(topic.as_str()), upto) {
                queues.insert(queue_id, file.upto());
            }
        }
        pins.into_iter().collect()
    }

    /// A deleted topic's compacted files go (a re-created topic restarts
    /// at offset 0).
    pub fn forget_compacted_topic(&self, topic: &str) {
        self.compaction().retain_topics(|t| t != topic);
        match compaction::file::topic_dir(self.store.root_dir(), topic) {
            Ok(dir) => match std::fs::remove_dir_all(&dir) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    tracing::error!(topic, error = %e, "cannot delete compacted files");
                }
                _ => {}
            },
            Err(why) => tracing::error!(topic, %why, "no compacted files to delete"),
        }
    }

    /// One round: passes over every compaction-topic queue, each until it
    /// is compacted up to its end (at most `PASSES_PER_ROUND_MAX` passes,
    /// so a queue written faster than it compacts does not hold the rest).
    pub async fn compact_round(&self) {
        let config = self.config();
        if !config.compaction.enabled {
            return;
        }
        let key_map_bytes = config.compaction.key_map_bytes(self.count);
        for (topic, queue_id) in self.compaction_queues() {
            let queue = (topic.as_str(), queue_id);
            for _ in 0..compaction::PASSES_PER_ROUND_MAX {
                match compaction::compact_queue(
                    &self.store,
                    self.compaction(),
                    queue,
                    key_map_bytes,
                )
                .await
                {
                    Ok(true) => continue,
                    Ok(false) => break,
                    Err(why) => {
                        tracing::error!(topic, queue_id, %why, "compaction pass failed");
                        break;
                    }
                }
            }
        }
    }
}
