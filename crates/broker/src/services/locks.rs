//! Order locks (Java's `RebalanceLockManager`): an orderly consumer locks
//! each queue it is assigned before consuming it, so one client of the
//! group holds a queue at a time. A lock lasts [`LOCK_EXPIRY_MS`] unless
//! renewed (clients renew every 20 s); an expired lock goes to whoever asks
//! next. Each queue's locks live on the queue's owner shard.

use std::collections::{BTreeMap, HashMap};

use ferrocket_protocol::body::{de_i32, de_string};
use serde::{Deserialize, Serialize};

/// How long a lock lasts without renewal
/// (`rocketmq.broker.rebalance.lockMaxLiveTime`).
pub const LOCK_EXPIRY_MS: i64 = 60_000;
/// Most locks one shard holds; locking more queues is refused.
pub const LOCKS_PER_SHARD_MAX: usize = 200_000;

/// A message queue as Java's JSON bodies write it (`MessageQueue`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
pub struct MessageQueue {
    #[serde(deserialize_with = "de_string")]
    pub topic: String,
    #[serde(deserialize_with = "de_string")]
    pub broker_name: String,
    #[serde(deserialize_with = "de_i32")]
    pub queue_id: i32,
}

/// A `MessageQueue` in key position, fields in fastjson's sorted order.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct MessageQueueKey<'a> {
    broker_name: &'a str,
    queue_id: i32,
    topic: &'a str,
}

impl MessageQueue {
    /// The queue as fastjson writes a `MessageQueue` map key (fields sorted:
    /// brokerName, queueId, topic), for bodies Java clients parse.
    pub fn json_key(broker_name: &str, queue_id: i32, topic: &str) -> String {
        let key = MessageQueueKey {
            broker_name,
            queue_id,
            topic,
        };
        String::from_utf8_lossy(&ferrocket_protocol::body::encode_json(&key)).into_owned()
    }
}

impl std::fmt::Display for MessageQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}@{}#{}", self.topic, self.broker_name, self.queue_id)
    }
}

#[derive(Debug, Clone)]
struct LockEntry {
    client_id: String,
    last_update_ms: i64,
}

impl LockEntry {
    fn expired(&self, now_ms: i64) -> bool {
        now_ms - self.last_update_ms > LOCK_EXPIRY_MS
    }
}

/// The locks of one shard's queues, by group.
#[derive(Debug, Default)]
pub struct LockTable {
    groups: HashMap<String, BTreeMap<MessageQueue, LockEntry>>,
    count: usize,
}

impl LockTable {
    /// Locks what it can of `queues` for `client_id`: free queues, queues
    /// whose lock expired, and queues the client holds already (renewed).
    /// Returns the queues the client holds afterwards.
    pub fn try_lock(
        &mut self,
        group: &str,
        client_id: &str,
        queues: &[MessageQueue],
        now_ms: i64,
    ) -> Vec<MessageQueue> {
        if self.count >= LOCKS_PER_SHARD_MAX {
            self.expire(now_ms);
        }
        let room = LOCKS_PER_SHARD_MAX.saturating_sub(self.count);
        let mut added = 0usize;
        let locks = self.groups.entry(group.to_string()).or_default();
        let mut locked = Vec::new();
        for queue in queues {
            match locks.get_mut(queue) {
                Some(entry) if entry.client_id == client_id || entry.expired(now_ms) => {
                    if entry.client_id != client_id {
                        tracing::info!(
                            group,
                            queue = %queue,
                            old = %entry.client_id,
                            new = client_id,
                            "order lock expired; given to another client"
                        );
                    }
                    entry.client_id = client_id.to_string();
                    entry.last_update_ms = now_ms;
                    locked.push(queue.clone());
                }
                Some(_) => {}
                None if added < room => {
                    locks.insert(
                        queue.clone(),
                        LockEntry {
                            client_id: client_id.to_string(),
                            last_update_ms: now_ms,
                        },
                    );
                    added += 1;
                    locked.push(queue.clone());
                }
                None => {
                    tracing::warn!(group, "order lock table full; lock refused");
                }
            }
        }
        if locks.is_empty() {
            self.groups.remove(group);
        }
        self.count += added;
        locked
    }

    /// Releases the queues `client_id` holds among `queues`.
    pub fn unlock(&mut self, group: &str, client_id: &str, queues: &[MessageQueue]) {
        let Some(locks) = self.groups.get_mut(group) else {
            return;
        };
        for queue in queues {
            if locks.get(queue).is_some_and(|e| e.client_id == client_id) {
                locks.remove(queue);
                self.count -= 1;
            }
        }
        if locks.is_empty() {
            self.groups.remove(group);
        }
    }

    /// The client holding an unexpired lock on `queue`, if any.
    #[cfg(test)]
    pub fn holder(&self, group: &str, queue: &MessageQueue, now_ms: i64) -> Option<&str> {
        self.groups
            .get(group)?
            .get(queue)
            .filter(|e| !e.expired(now_ms))
            .map(|e| e.client_id.as_str())
    }

    /// Drops expired locks; returns how many.
    pub fn expire(&mut self, now_ms: i64) -> usize {
        let before = self.count;
        self.groups.retain(|_, locks| {
            locks.retain(|_, e| !e.expired(now_ms));
            !locks.is_empty()
        });
        self.count = self.groups.values().map(BTreeMap::len).sum();
        before - self.count
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.count
    }

    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Queue `id` of topic T on broker b.
    pub(crate) fn q(id: i32) -> MessageQueue {
        MessageQueue {
            topic: "T".into(),
            broker_name: "b".into(),
            queue_id: id,
        }
    }

    #[test]
    fn one_holder_per_queue_until_expiry() {
        let mut table = LockTable::default();
        assert_eq!(
            table.try_lock("G", "c1", &[q(0), q(1)], 0),
            vec![q(0), q(1)]
        );
        assert_eq!(table.try_lock("G", "c2", &[q(1), q(2)], 10), vec![q(2)]);
        assert_eq!(
            table.try_lock("H", "c2", &[q(1)], 10),
            vec![q(1)],
            "groups are separate"
        );
        assert_eq!(table.holder("G", &q(1), 10), Some("c1"));
        // Renewal keeps c1's lock alive past the first expiry.
        assert_eq!(table.try_lock("G", "c1", &[q(1)], 50_000), vec![q(1)]);
        assert!(table.try_lock("G", "c2", &[q(1)], 100_000).is_empty());
        assert_eq!(
            table.try_lock("G", "c2", &[q(0)], 70_001),
            vec![q(0)],
            "expired"
        );
        table.unlock("G", "c1", &[q(0), q(1)]);
        assert_eq!(
            table.holder("G", &q(0), 70_001),
            Some("c2"),
            "not c1's any more"
        );
        assert_eq!(table.holder("G", &q(1), 70_001), None);
        assert_eq!(table.len(), 3);
        assert_eq!(table.expire(200_000), 3);
        assert!(table.is_empty());
    }
}
