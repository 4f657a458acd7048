//! Consumer administration (`AdminBrokerProcessor`):
//! GET_CONSUMER_CONNECTION_LIST (203), GET_ALL_CONSUMER_OFFSET (43) and
//! GET_CONSUME_STATS (208). Offsets and queue figures are gathered from
//! the owner shards; connection details from the shards holding them.

use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;

use ferrocket_protocol::body::{encode_json, DataVersion, SubscriptionData};
use ferrocket_protocol::codes::response_code;
use ferrocket_protocol::RemotingCommand;
use serde::Serialize;

use crate::clock::now_ms;
use crate::error::Reject;
use crate::services::offsets::{key_topic, OffsetMap};
use crate::shard::clients::conn_infos;
use crate::shard::consume_stats::{all_offsets, consume_stats_body, group_queue_stats};
use crate::shard::Shard;

fn ok(request: &RemotingCommand) -> RemotingCommand {
    RemotingCommand::response_to(request, response_code::SUCCESS, None)
}

/// One client connection (`Connection` in `ConsumerConnection`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, PartialOrd, Ord)]
#[serde(rename_all = "camelCase")]
struct ConnectionBody {
    client_id: String,
    client_addr: String,
    language: String,
    version: i32,
}

/// GET_CONSUMER_CONNECTION_LIST body (`ConsumerConnection`).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
struct ConsumerConnectionBody {
    connection_set: Vec<ConnectionBody>,
    subscription_table: BTreeMap<String, SubscriptionData>,
    consume_type: &'static str,
    message_model: &'static str,
    consume_from_where: &'static str,
}

/// GET_CONSUMER_CONNECTION_LIST (header consumerGroup): the group's clients
/// with their addresses, languages and versions, and its subscriptions.
pub(crate) async fn consumer_connections(
    shard: &Rc<Shard>,
    request: &RemotingCommand,
) -> Result<RemotingCommand, Reject> {
    let group = request.ext_fields.required("consumerGroup")?.to_string();
    let Some(info) = shard
        .clients()
        .with(|clients| clients.consumers.get(&group).cloned())
        .filter(|g| !g.clients.is_empty())
    else {
        return Err(Reject::new(
            response_code::CONSUMER_NOT_ONLINE,
            format!("the consumer group[{group}] not online"),
        ));
    };
    let conn_ids: Vec<u64> = info.clients.values().map(|c| c.conn_id).collect();
    let known = conn_infos(shard, &conn_ids).await?;
    let mut connection_set: Vec<ConnectionBody> = info
        .clients
        .iter()
        .map(|(client_id, channel)| {
            let conn = known.get(&channel.conn_id).cloned().unwrap_or_default();
            ConnectionBody {
                client_id: client_id.clone(),
                client_addr: conn.addr,
                language: if conn.language.is_empty() {
                    "OTHER".into()
                } else {
                    conn.language
                },
                version: conn.version,
            }
        })
        .collect();
    connection_set.sort();
    let body = ConsumerConnectionBody {
        connection_set,
        subscription_table: info.subscriptions.clone(),
        consume_type: info.consume_type.java_name(),
        message_model: info.message_model.java_name(),
        consume_from_where: info.consume_from_where.java_name(),
    };
    Ok(ok(request).with_body(encode_json(&body)))
}

/// GET_ALL_CONSUMER_OFFSET's body (`ConsumerOffsetSerializeWrapper`): the
/// consumerOffset.json table with a data version. A Java slave syncing
/// from this broker assigns the version to its own
/// (`SlaveSynchronize.syncConsumerOffset`) and fails without one.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct OffsetsWithVersion {
    offset_table: OffsetMap,
    data_version: DataVersion,
}

/// GET_ALL_CONSUMER_OFFSET: the consumerOffset.json view of every group's
/// committed offsets, current rather than as last persisted, versioned by
/// the time of the answer (offsets change with every commit).
pub(crate) async fn all_consumer_offsets(
    shard: &Rc<Shard>,
    request: &RemotingCommand,
) -> Result<RemotingCommand, Reject> {
    let answer = OffsetsWithVersion {
        offset_table: all_offsets(shard).await?,
        data_version: DataVersion {
            timestamp: now_ms(),
            ..DataVersion::default()
        },
    };
    Ok(ok(request).with_body(encode_json(&answer)))
}

/// GET_CONSUME_STATS (header consumerGroup, optional topic): per queue of
/// each topic the group consumes, the queue's max offset, the group's
/// committed offset and the store time of the last consumed message.
pub(crate) async fn consume_stats(
    shard: &Rc<Shard>,
    request: &RemotingCommand,
) -> Result<RemotingCommand, Reject> {
    let group = request.ext_fields.required("consumerGroup")?.to_string();
    let asked = request
        .ext_fields
        .get("topic")
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(str::to_string);
    let mut topics: BTreeSet<String> = match asked {
        Some(topic) => [topic].into(),
        None => {
            let suffix = format!("@{group}");
            all_offsets(shard)
                .await?
                .keys()
                .filter(|key| key.ends_with(&suffix))
                .map(|key| key_topic(key).to_string())
                .collect()
        }
    };
    // Java keeps only topics the online group subscribes to, if any.
    let subscribed: BTreeSet<String> = shard.clients().with(|clients| {
        clients
            .consumers
            .get(&group)
            .map(|g| g.subscriptions.keys().cloned().collect())
            .unwrap_or_default()
    });
    if !subscribed.is_empty() {
        topics.retain(|t| subscribed.contains(t));
    }
    let queues = topics.iter().filter_map(|topic| {
        let config = shard.topic(topic)?;
        Some((topic.clone(), config.read_queue_nums))
    });
    let stats = group_queue_stats(shard, &group, queues).await?;
    let tps = crate::shard::stats::group_get_tps(shard, &group, topics.iter()).await;
    let body = consume_stats_body(&shard.config().broker_name, &stats, tps);
    Ok(ok(request).with_body(body))
}
