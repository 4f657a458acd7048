//! Order locks (LOCK_BATCH_MQ 41, UNLOCK_BATCH_MQ 42; Java's
//! `RebalanceLockManager`): an orderly consumer locks each queue it is
//! assigned before consuming it, so one client of the group holds a queue
//! at a time. A lock lasts [`LOCK_EXPIRY_MS`] unless renewed (clients renew
//! every 20 s); an expired lock goes to whoever asks next. Each queue's
//! locks live on the queue's owner shard; a request naming queues of
//! several shards is split among them and the answers joined.

use std::collections::BTreeMap;
use std::rc::Rc;

use ferrocket_protocol::body::{decode_json, encode_json};
use ferrocket_protocol::codes::response_code;
use ferrocket_protocol::RemotingCommand;
use ferrocket_runtime::shard::ShardCall;
use serde::{Deserialize, Serialize};

use crate::clock::now_ms;
use crate::error::Reject;
use crate::services::locks::MessageQueue;
use crate::shard::Shard;

/// Most queues one lock or unlock request may name.
pub const LOCK_BATCH_QUEUES_MAX: usize = 4096;

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
    pub mq_set: Vec<MessageQueue>,
}

/// LOCK_BATCH_MQ answer (`LockBatchResponseBody`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct LockBatchAnswer {
    #[serde(rename = "lockOKMQSet")]
    pub lock_ok_mq_set: Vec<MessageQueue>,
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
fn by_owner(shard: &Shard, queues: Vec<MessageQueue>) -> BTreeMap<usize, Vec<MessageQueue>> {
    let mut split: BTreeMap<usize, Vec<MessageQueue>> = BTreeMap::new();
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
    queues: Vec<MessageQueue>,
}

impl ShardCall<Shard> for Lock {
    type Reply = Vec<MessageQueue>;

    async fn run(self, shard: Rc<Shard>) -> Vec<MessageQueue> {
        for queue in &self.queues {
            shard.assert_owns(&queue.topic, queue.queue_id);
        }
        let mut table = shard.locks().borrow_mut();
        table.try_lock(&self.group, &self.client_id, &self.queues, now_ms())
    }
}

/// On the owner shard: release a client's locks of queues it owns.
struct Unlock {
    group: String,
    client_id: String,
    queues: Vec<MessageQueue>,
}

impl ShardCall<Shard> for Unlock {
    type Reply = ();

    async fn run(self, shard: Rc<Shard>) {
        let mut table = shard.locks().borrow_mut();
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
    use crate::services::locks::tests::q;

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
