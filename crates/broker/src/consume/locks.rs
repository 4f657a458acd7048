//! Order locks (LOCK_BATCH_MQ 41, UNLOCK_BATCH_MQ 42; Java's
//! `RebalanceLockManager`): an orderly consumer locks each queue it is
//! assigned before consuming it, so one client of the group holds a queue
//! at a time. A lock lasts [`LOCK_EXPIRY_MS`] unless renewed (clients renew
//! every 20 s); an expired lock goes to whoever asks next. Each queue's
//! locks live on the queue's owner shard; a request naming queues of
//! several shards is split among them and the answers joined.

use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;

use ferrocket_protocol::body::{decode_json, encode_json};
use ferrocket_protocol::codes::response_code;
use ferrocket_protocol::RemotingCommand;
use ferrocket_runtime::shard::ShardCall;
use serde::{Deserialize, Serialize};

use super::QueueKey;
use crate::clock::now_ms;
use crate::error::Reject;
use crate::shard::Shard;

/// How long a lock lasts without renewal
/// (`rocketmq.broker.rebalance.lockMaxLiveTime`).
pub const LOCK_EXPIRY_MS: i64 = 60_000;
/// Most queues one lock or unlock request may name.
pub const LOCK_BATCH_QUEUES_MAX: usize = 4096;
/// Most locks one shard holds; locking more queues is refused.
pub const LOCKS_PER_SHARD_MAX: usize = 200_000;

/// LOCK_BATCH_MQ body (`LockBatchRequestBody`); UNLOCK_BATCH_MQ's
/// (`UnlockBatchRequestBody`) has the same fields.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
pub struct LockBatchBody {
    #[serde(deserialize_with = "ferrocket_protocol::body::de_string")]
    pub consumer_group: String,
    #[serde(deserialize_with = "ferrocket_protocol::body::de_string")]
    pub client_id: String,
    #[serde(deserialize_with = "ferrocket_protocol::body::de_bool")]
    pub only_this_broker: bool,
    pub mq_set: Vec<QueueKey>,
}

/// LOCK_BATCH_MQ answer (`LockBatchResponseBody`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct LockBatchAnswer {
    #[serde(rename = "lockOKMQSet")]
    pub lock_ok_mq_set: Vec<QueueKey>,
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
    groups: HashMap<String, BTreeMap<QueueKey, LockEntry>>,
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
        queues: &[QueueKey],
        now_ms: i64,
    ) -> Vec<QueueKey> {
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
    pub fn unlock(&mut self, group: &str, client_id: &str, queues: &[QueueKey]) {
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
    pub fn holder(&self, group: &str, queue: &QueueKey, now_ms: i64) -> Option<&str> {
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

fn parse_body(request: &RemotingCommand) -> Result<LockBatchBody, Reject> {
    let body: LockBatchBody = decode_json(&request.body)?;
    if body.consumer_group.is_empty() || body.client_id.is_empty() {
        return Err(Reject::new(
            response_code::INVALID_PARAMETER,
            "the lock request names no consumerGroup or clientId",
        ));
    }
    if body.mq_set.len() > LOCK_BATCH_QUEUES_MAX {
        return Err(Reject::new(
            response_code::INVALID_PARAMETER,
            format!(
                "the lock request names {} queues, more than {LOCK_BATCH_QUEUES_MAX}",
                body.mq_set.len()
            ),
        ));
    }
    Ok(body)
}

/// The queues of `body` grouped by owner shard.
fn by_owner(shard: &Shard, queues: Vec<QueueKey>) -> BTreeMap<usize, Vec<QueueKey>> {
    let mut split: BTreeMap<usize, Vec<QueueKey>> = BTreeMap::new();
    for queue in queues {
        split
            .entry(shard.owner_of(&queue.topic, queue.queue_id))
            .or_default()
            .push(queue);
    }
    split
}

/// On the owner shard: lock queues it owns for a client.
struct Lock {
    group: String,
    client_id: String,
    queues: Vec<QueueKey>,
}

impl ShardCall<Shard> for Lock {
    type Reply = Vec<QueueKey>;

    async fn run(self, shard: Rc<Shard>) -> Vec<QueueKey> {
        let mut table = shard.consume.locks.borrow_mut();
        table.try_lock(&self.group, &self.client_id, &self.queues, now_ms())
    }
}

/// On the owner shard: release a client's locks of queues it owns.
struct Unlock {
    group: String,
    client_id: String,
    queues: Vec<QueueKey>,
}

impl ShardCall<Shard> for Unlock {
    type Reply = ();

    async fn run(self, shard: Rc<Shard>) {
        let mut table = shard.consume.locks.borrow_mut();
        table.unlock(&self.group, &self.client_id, &self.queues);
    }
}

/// LOCK_BATCH_MQ.
pub(crate) async fn lock_batch(
    shard: &Rc<Shard>,
    request: &RemotingCommand,
) -> Result<RemotingCommand, Reject> {
    let body = parse_body(request)?;
    let mut locked = Vec::new();
    for (owner, queues) in by_owner(shard, body.mq_set) {
        let ask = Lock {
            group: body.consumer_group.clone(),
            client_id: body.client_id.clone(),
            queues,
        };
        locked.extend(shard.call(owner, ask).await?);
    }
    let answer = LockBatchAnswer {
        lock_ok_mq_set: locked,
    };
    Ok(
        RemotingCommand::response_to(request, response_code::SUCCESS, None)
            .with_body(encode_json(&answer)),
    )
}

/// UNLOCK_BATCH_MQ.
pub(crate) async fn unlock_batch(
    shard: &Rc<Shard>,
    request: &RemotingCommand,
) -> Result<RemotingCommand, Reject> {
    let body = parse_body(request)?;
    for (owner, queues) in by_owner(shard, body.mq_set) {
        let ask = Unlock {
            group: body.consumer_group.clone(),
            client_id: body.client_id.clone(),
            queues,
        };
        shard.call(owner, ask).await?;
    }
    Ok(RemotingCommand::response_to(
        request,
        response_code::SUCCESS,
        None,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(id: i32) -> QueueKey {
        QueueKey {
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

    #[test]
    fn cpp_client_bodies_parse() {
        let body = br#"{"clientId":"127.0.0.1@c1","consumerGroup":"G",
            "mqSet":[{"brokerName":"b","queueId":1,"topic":"T"}]}"#;
        let parsed: LockBatchBody = decode_json(body).unwrap();
        assert_eq!(parsed.mq_set, vec![q(1)]);
        let answer = LockBatchAnswer {
            lock_ok_mq_set: vec![q(1)],
        };
        let json = String::from_utf8(encode_json(&answer)).unwrap();
        assert_eq!(
            json,
            r#"{"lockOKMQSet":[{"topic":"T","brokerName":"b","queueId":1}]}"#
        );
    }
}
