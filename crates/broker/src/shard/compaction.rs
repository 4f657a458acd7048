//! A shard's compaction topics: which queues read through their compacted
//! file, and the passes over the queues it owns.

use ferrocket_runtime::shard::owner_shard;

use super::Shard;
use crate::services::compaction::{self, file::SharedFile};

impl Shard {
    /// The compacted file of a queue this shard owns, when its topic is a
    /// compaction topic and compaction is on (`enableCompaction`).
    pub fn compacted_file(&self, topic: &str, queue_id: i32) -> Option<SharedFile> {
        if !self.config().compaction.enabled {
            return None;
        }
        let topics = self.topics.get();
        let config = topics.topic_config_table.get(topic)?;
        if !compaction::is_compaction_topic(config) {
            return None;
        }
        self.compaction
            .file(self.store.root_dir(), topic, queue_id)
    }

    /// The compaction-topic queues this shard owns and has opened.
    fn compaction_queues(&self) -> Vec<(String, i32)> {
        let topics = self.topics.get();
        let compacted = |topic: &str| {
            topics
                .topic_config_table
                .get(topic)
                .is_some_and(compaction::is_compaction_topic)
        };
        self.compaction.retain_topics(compacted);
        self.store
            .open_queues()
            .into_iter()
            .filter(|(topic, queue_id)| {
                compacted(topic) && owner_shard(topic, *queue_id, self.count) == self.index
            })
            .map(|(topic, queue_id)| (topic.to_string(), queue_id))
            .collect()
    }

    /// One round: passes over every compaction-topic queue, each until it
    /// is compacted up to its end as found (or a pass fails).
    pub async fn compact_round(&self) {
        let config = self.config();
        if !config.compaction.enabled {
            return;
        }
        let key_map_bytes = config.compaction.key_map_bytes(self.count);
        for (topic, queue_id) in self.compaction_queues() {
            let queue = (topic.as_str(), queue_id);
            loop {
                match compaction::compact_queue(&self.store, &self.compaction, queue, key_map_bytes)
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
