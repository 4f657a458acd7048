//! INVOKE_BROKER_TO_RESET_OFFSET (222), mqadmin's `resetOffsetByTime` for
//! an online group (`Broker2Client.resetOffset`).
//!
//! For every readable queue of the topic the queue's owner shard finds the
//! offset of the first message stored at or after the timestamp (the max
//! offset for timestamp -1), keeps the group's committed offset instead
//! when that is not further back and the request is not forced, and
//! commits the result. The new table is then pushed oneway
//! (RESET_CONSUMER_CLIENT_OFFSET, 220) to every connected consumer of the
//! group, which drops its in-flight messages and pulls from there, and
//! returned to the admin as a `ResetOffsetBody`.
//!
//! Java commits nothing itself on this path and leaves it to the clients;
//! committing too means a consumer that ignores the push, or rebalances
//! before handling it, still restarts from the reset offsets.
//!
//! Bodies: Java writes `ResetOffsetBody` (`Map<MessageQueue, Long>`, which
//! fastjson writes with object keys) for Java clients and
//! `ResetOffsetBodyForC` (a list of `{brokerName, offset, queueId, topic}`)
//! when the admin itself speaks CPP. The C++ client parses only the list,
//! the Java client only the map, so we choose per consumer by the language
//! it connected with.

use std::collections::BTreeMap;
use std::rc::Rc;

use ferrocket_protocol::body::encode_json;
use ferrocket_protocol::codes::{request_code, response_code};
use ferrocket_protocol::header::ResetOffsetRequestHeader;
use ferrocket_protocol::RemotingCommand;
use ferrocket_runtime::shard::ShardCall;
use serde::Serialize;

use crate::error::Reject;
use crate::services::locks::MessageQueue;
use crate::shard::clients::conn_infos;
use crate::shard::push::send_oneway;
use crate::shard::Shard;

/// Lowest client version that understands RESET_CONSUMER_CLIENT_OFFSET
/// (`MQVersion.Version.V3_0_7_SNAPSHOT.ordinal()`).
pub const RESET_CLIENT_VERSION_MIN: i32 = 28;
/// `timestamp` value meaning "each queue's max offset".
pub const TIMESTAMP_LATEST: i64 = -1;

/// The offset a queue is reset to: `target`, except that without `force`
/// a committed offset is only ever moved back. A queue the group has no
/// committed offset of takes `target` (Java refuses the whole reset then).
pub(crate) fn reset_to(committed: Option<i64>, target: i64, force: bool) -> i64 {
    match committed {
        Some(current) if !force && target >= current => current,
        _ => target,
    }
}

/// On the owner shard: computes and commits the reset offsets of `queues`
/// (all owned here); answers `(queue id, new offset)` per queue.
async fn reset_owned(
    shard: &Shard,
    group: &str,
    topic: &str,
    queues: &[i32],
    timestamp_ms: i64,
    force: bool,
) -> Result<Vec<(i32, i64)>, Reject> {
    let mut table = Vec::with_capacity(queues.len());
    for &queue_id in queues {
        let target = if timestamp_ms == TIMESTAMP_LATEST {
            shard.store().consume_queue(topic, queue_id)?.max_offset()
        } else {
            crate::services::search::search_offset_owned(
                shard.store(),
                topic,
                queue_id,
                timestamp_ms,
            )
            .await?
        }
        .max(0);
        let committed = shard.offsets().borrow().query(group, topic, queue_id);
        let offset = reset_to(committed, target, force);
        if committed != Some(offset) {
            shard
                .offsets()
                .borrow_mut()
                .commit(group, topic, queue_id, offset);
        }
        table.push((queue_id, offset));
    }
    Ok(table)
}

/// One `MessageQueueForC`, fields in fastjson's sorted order.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct QueueForCJson<'a> {
    broker_name: &'a str,
    offset: i64,
    queue_id: i32,
    topic: &'a str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ResetBodyForC<'a> {
    offset_table: Vec<QueueForCJson<'a>>,
}

/// `ResetOffsetBody` as fastjson writes it:
/// `{"offsetTable":{{"brokerName":..,"queueId":..,"topic":..}:offset,..}}`.
pub(crate) fn reset_body(broker_name: &str, topic: &str, table: &[(i32, i64)]) -> Vec<u8> {
    let mut out = String::from("{\"offsetTable\":{");
    for (i, &(queue_id, offset)) in table.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&MessageQueue::json_key(broker_name, queue_id, topic));
        out.push(':');
        out.push_str(&offset.to_string());
    }
    out.push_str("}}");
    out.into_bytes()
}

/// `ResetOffsetBodyForC`: `{"offsetTable":[{"brokerName":..,"offset":..,
/// "queueId":..,"topic":..},..]}`.
pub(crate) fn reset_body_for_c(broker_name: &str, topic: &str, table: &[(i32, i64)]) -> Vec<u8> {
    let body = ResetBodyForC {
        offset_table: table
            .iter()
            .map(|&(queue_id, offset)| QueueForCJson {
                broker_name,
                offset,
                queue_id,
                topic,
            })
            .collect(),
    };
    encode_json(&body).to_vec()
}

/// On a queue's owner: reset and commit the group's offsets of these
/// queues ([`reset_owned`]); answers `(queue id, new offset)` per queue.
pub(crate) struct ResetOffsets {
    pub group: String,
    pub topic: String,
    pub queues: Vec<i32>,
    pub timestamp_ms: i64,
    pub force: bool,
}

impl ShardCall<Shard> for ResetOffsets {
    type Reply = Result<Vec<(i32, i64)>, Reject>;

    async fn run(self, shard: Rc<Shard>) -> Self::Reply {
        let Self {
            group,
            topic,
            queues,
            timestamp_ms,
            force,
        } = self;
        for &queue_id in &queues {
            shard.assert_owns(&topic, queue_id);
        }
        reset_owned(&shard, &group, &topic, &queues, timestamp_ms, force).await
    }
}

/// Computes and commits the new offsets on each queue's owner.
async fn reset_on_owners(
    shard: &Shard,
    header: &ResetOffsetRequestHeader,
    queue_count: i32,
) -> Result<Vec<(i32, i64)>, Reject> {
    let mut by_owner: BTreeMap<usize, Vec<i32>> = BTreeMap::new();
    for queue_id in 0..queue_count.max(0) {
        by_owner
            .entry(shard.owner_of(&header.topic, queue_id))
            .or_default()
            .push(queue_id);
    }
    let mut table = Vec::new();
    for (owner, queues) in by_owner {
        let ask = ResetOffsets {
            group: header.group.clone(),
            topic: header.topic.clone(),
            queues,
            timestamp_ms: header.timestamp,
            force: header.is_force,
        };
        table.extend(shard.call(owner, ask).await??);
    }
    table.sort_unstable();
    Ok(table)
}

/// INVOKE_BROKER_TO_RESET_OFFSET: answers TOPIC_NOT_EXIST for an unknown
/// topic, CONSUMER_NOT_ONLINE when the group has no connected consumer
/// (mqadmin then resets the offline way), SYSTEM_ERROR when a consumer is
/// too old to take the push; otherwise resets, pushes and answers the new
/// offsets.
pub(crate) async fn reset_offset(
    shard: &Rc<Shard>,
    request: &RemotingCommand,
) -> Result<RemotingCommand, Reject> {
    let header = ResetOffsetRequestHeader::from_ext(&request.ext_fields)?;
    let Some(topic) = shard.topic(&header.topic) else {
        return Err(Reject::new(
            response_code::TOPIC_NOT_EXIST,
            format!(
                "[reset-offset] reset offset failed, no topic in this broker. topic={}",
                header.topic
            ),
        ));
    };
    let conn_ids: Vec<u64> = shard
        .clients()
        .with(|clients| clients.group_connections(&header.group));
    if conn_ids.is_empty() {
        return Err(Reject::new(
            response_code::CONSUMER_NOT_ONLINE,
            format!(
                "Consumer not online, so can not reset offset, Group: {} Topic: {} Timestamp: {}",
                header.group, header.topic, header.timestamp
            ),
        ));
    }
    let infos = conn_infos(shard, &conn_ids).await?;
    if let Some(old) = infos
        .values()
        .find(|info| info.version < RESET_CLIENT_VERSION_MIN)
    {
        return Err(Reject::system(format!(
            "the client does not support this feature. version={} ({})",
            old.version, old.addr
        )));
    }
    let table = reset_on_owners(shard, &header, topic.read_queue_nums).await?;
    let broker_name = shard.config().broker_name.clone();
    let map_body = bytes::Bytes::from(reset_body(&broker_name, &header.topic, &table));
    let list_body = bytes::Bytes::from(reset_body_for_c(&broker_name, &header.topic, &table));
    for conn_id in conn_ids {
        let cpp = infos
            .get(&conn_id)
            .is_some_and(|info| info.language == "CPP");
        let mut push = RemotingCommand::request(request_code::RESET_CONSUMER_CLIENT_OFFSET);
        push.ext_fields = header.to_ext();
        push.body = if cpp {
            list_body.clone()
        } else {
            map_body.clone()
        };
        if let Err(reject) = send_oneway(shard, conn_id, push).await {
            tracing::warn!(group = %header.group, remark = %reject.remark,
                "[reset-offset] could not tell a consumer");
        }
    }
    tracing::info!(group = %header.group, topic = %header.topic, timestamp = header.timestamp,
        force = header.is_force, "[reset-offset] offsets reset");
    let mut response = RemotingCommand::response_to(request, response_code::SUCCESS, None);
    response.body = map_body;
    Ok(response)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_move_forward_only_when_forced() {
        assert_eq!(reset_to(Some(5), 2, false), 2);
        assert_eq!(reset_to(Some(5), 9, false), 5);
        assert_eq!(reset_to(Some(5), 9, true), 9);
        assert_eq!(reset_to(Some(5), 2, true), 2);
        assert_eq!(reset_to(None, 4, false), 4);
    }

    #[test]
    fn bodies_match_fastjson() {
        let table = [(0, 3), (1, 0)];
        assert_eq!(
            String::from_utf8(reset_body("b", "T", &table)).unwrap(),
            r#"{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:3,{"brokerName":"b","queueId":1,"topic":"T"}:0}}"#
        );
        assert_eq!(
            String::from_utf8(reset_body_for_c("b", "T", &table)).unwrap(),
            r#"{"offsetTable":[{"brokerName":"b","offset":3,"queueId":0,"topic":"T"},{"brokerName":"b","offset":0,"queueId":1,"topic":"T"}]}"#
        );
        assert_eq!(
            String::from_utf8(reset_body("b", "T", &[])).unwrap(),
            r#"{"offsetTable":{}}"#
        );
    }
}
