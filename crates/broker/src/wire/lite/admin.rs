//! The lite admin requests mqadmin 5.5 sends (`getBrokerLiteInfo`,
//! `getParentTopicInfo`, `getLiteTopicInfo`, `getLiteClientInfo`,
//! `getLiteGroupInfo`, `triggerLiteDispatch`), answered from the broker's
//! lite subscriptions. Ferrocket keeps no light queue per lite topic, so
//! what Java counts of its light queues (`maxLmqNum`, `currentLmqNum`, a
//! lite topic's offsets) is 0 or left out, and lag is -1 (unknown).

use std::collections::{BTreeMap, BTreeSet};

use ferrocket_protocol::body::encode_json;
use ferrocket_protocol::codes::response_code;
use ferrocket_protocol::header::{
    GetLiteClientInfoRequestHeader, GetLiteGroupInfoRequestHeader, GetLiteTopicInfoRequestHeader,
    TriggerLiteDispatchRequestHeader,
};
use ferrocket_protocol::RemotingCommand;
use serde::Serialize;

use crate::error::Reject;
use crate::services::priority::MESSAGE_TYPE_ATTRIBUTE;
use crate::shard::Shard;

/// The group attribute naming a lite group's parent topic (Java's
/// `SubscriptionGroupConfig.getLiteBindTopic` reads it).
const LITE_BIND_TOPIC: &str = "lite.bind.topic";
/// Most lite topics one GET_LITE_CLIENT_INFO lists (Java's `MAX_RETURN_COUNT`).
const LIST_MAX: usize = 10_000;

fn ok(request: &RemotingCommand, body: &impl Serialize) -> RemotingCommand {
    RemotingCommand::response_to(request, response_code::SUCCESS, None).with_body(encode_json(body))
}

/// A lite parent topic: it exists and its `message.type` is LITE.
fn check_parent(shard: &Shard, topic: &str) -> Result<(), Reject> {
    let kind = shard.with_topic(topic, |t| t.attributes.get(MESSAGE_TYPE_ATTRIBUTE).cloned());
    match kind {
        None => Err(Reject::new(
            response_code::TOPIC_NOT_EXIST,
            format!("Topic [{topic}] not exist."),
        )),
        Some(kind) if kind.as_deref() != Some("LITE") => Err(Reject::new(
            response_code::INVALID_PARAMETER,
            format!("Topic [{topic}] type not match."),
        )),
        Some(_) => Ok(()),
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct BrokerLiteInfo {
    store_type: &'static str,
    max_lmq_num: i32,
    current_lmq_num: i32,
    lite_subscription_count: usize,
    order_info_count: i32,
    cq_table_size: i32,
    offset_table_size: i32,
    event_map_size: i32,
    topic_meta: BTreeMap<String, i32>,
    group_meta: BTreeMap<String, BTreeSet<String>>,
}

/// GET_BROKER_LITE_INFO: the subscriptions held; per parent topic its lite
/// topics subscribed (`topicMeta`, where Java gives the lite topics' TTL)
/// and its groups (`groupMeta`).
pub(crate) fn broker_lite_info(shard: &Shard, request: &RemotingCommand) -> RemotingCommand {
    let summary = shard.env().lite.summary();
    let mut group_meta: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (group, topics) in &summary.groups {
        for topic in topics {
            group_meta
                .entry(topic.clone())
                .or_default()
                .insert(group.clone());
        }
    }
    let body = BrokerLiteInfo {
        store_type: "default",
        max_lmq_num: 0,
        current_lmq_num: 0,
        lite_subscription_count: summary.subscriptions,
        order_info_count: 0,
        cq_table_size: 0,
        offset_table_size: 0,
        event_map_size: 0,
        topic_meta: summary
            .topics
            .into_iter()
            .map(|(t, n)| (t, n as i32))
            .collect(),
        group_meta,
    };
    ok(request, &body)
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ParentTopicInfo {
    topic: String,
    ttl: i32,
    groups: BTreeSet<String>,
    lmq_num: i32,
    lite_topic_count: usize,
}

/// GET_PARENT_TOPIC_INFO: a lite parent topic's groups and lite topics
/// subscribed.
pub(crate) fn parent_topic_info(
    shard: &Shard,
    request: &RemotingCommand,
) -> Result<RemotingCommand, Reject> {
    let topic = request
        .ext_fields
        .get("topic")
        .unwrap_or_default()
        .to_string();
    check_parent(shard, &topic)?;
    let summary = shard.env().lite.summary();
    let groups = summary
        .groups
        .iter()
        .filter(|(_, topics)| topics.contains(&topic))
        .map(|(g, _)| g.clone())
        .collect();
    let body = ParentTopicInfo {
        lite_topic_count: summary.topics.get(&topic).copied().unwrap_or(0),
        topic,
        ttl: 0,
        groups,
        lmq_num: 0,
    };
    Ok(ok(request, &body))
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ClientGroup {
    client_id: String,
    group: String,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct LiteTopicInfo {
    parent_topic: String,
    lite_topic: String,
    subscriber: Vec<ClientGroup>,
    topic_offset: TopicOffset,
    sharding_to_broker: bool,
}

/// `TopicOffset` of a light queue Ferrocket does not have: all 0, what
/// Java sends for a lite topic whose light queue does not exist.
#[derive(Serialize, Default)]
#[serde(rename_all = "camelCase")]
struct TopicOffset {
    min_offset: i64,
    max_offset: i64,
    last_update_timestamp: i64,
}

/// GET_LITE_TOPIC_INFO: who subscribes a lite topic (its `topicOffset` is
/// all 0: the lite topic has no queue of its own here).
pub(crate) fn lite_topic_info(
    shard: &Shard,
    request: &RemotingCommand,
) -> Result<RemotingCommand, Reject> {
    let header = GetLiteTopicInfoRequestHeader::from_ext(&request.ext_fields)?;
    check_parent(shard, &header.parent_topic)?;
    let subscriber = shard
        .env()
        .lite
        .subscribers(&header.parent_topic, &header.lite_topic)
        .into_iter()
        .map(|(group, client_id)| ClientGroup { client_id, group })
        .collect();
    let body = LiteTopicInfo {
        parent_topic: header.parent_topic,
        lite_topic: header.lite_topic,
        subscriber,
        topic_offset: TopicOffset::default(),
        // Every broker of the parent holds all its lite topics' messages.
        sharding_to_broker: true,
    };
    Ok(ok(request, &body))
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct LiteClientInfo {
    parent_topic: Option<String>,
    group: Option<String>,
    client_id: String,
    last_access_time: i64,
    last_consume_time: i64,
    lite_topic_count: i64,
    lite_topic_set: Option<Vec<String>>,
}

/// GET_LITE_CLIENT_INFO: a client's lite topics (count -1: none known).
pub(crate) fn lite_client_info(
    shard: &Shard,
    request: &RemotingCommand,
) -> Result<RemotingCommand, Reject> {
    let header = GetLiteClientInfoRequestHeader::from_ext(&request.ext_fields)?;
    if let Some(topic) = header.parent_topic.as_deref() {
        check_parent(shard, topic)?;
    }
    let max = header
        .max_count
        .map_or(LIST_MAX, |m| (m.max(0) as usize).min(LIST_MAX));
    let found = shard
        .env()
        .lite
        .client(header.group.as_deref(), &header.client_id);
    let (count, set, access) = match &found {
        Some((_, entry)) => (
            entry.lite_topics.len() as i64,
            Some(entry.lite_topics.iter().take(max).cloned().collect()),
            entry.last_access_ms,
        ),
        None => (-1, None, 0),
    };
    let body = LiteClientInfo {
        parent_topic: header
            .parent_topic
            .or(found.as_ref().map(|(_, e)| e.topic.clone())),
        group: header.group.or(found.map(|(g, _)| g)),
        client_id: header.client_id,
        last_access_time: access,
        last_consume_time: access,
        lite_topic_count: count,
        lite_topic_set: set,
    };
    Ok(ok(request, &body))
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct LiteGroupInfo {
    group: String,
    parent_topic: Option<String>,
    lite_topic: Option<String>,
    earliest_unconsumed_timestamp: i64,
    total_lag_count: i64,
    lag_count_top_k: Vec<()>,
    lag_timestamp_top_k: Vec<()>,
}

/// GET_LITE_GROUP_INFO: the parent topic a lite group binds (its
/// attribute `lite.bind.topic`, as Java reads it); lag is not kept per lite topic:
/// -1 and empty lists.
pub(crate) fn lite_group_info(
    shard: &Shard,
    request: &RemotingCommand,
) -> Result<RemotingCommand, Reject> {
    let header = GetLiteGroupInfoRequestHeader::from_ext(&request.ext_fields)?;
    let group = &header.group;
    let bound = shard.groups().with(|t| {
        t.get(group)
            .map(|c| c.attributes.get(LITE_BIND_TOPIC).cloned())
    });
    let parent = match bound {
        None => {
            return Err(Reject::new(
                response_code::SUBSCRIPTION_GROUP_NOT_EXIST,
                format!("Group [{group}] not exist."),
            ))
        }
        Some(None) => {
            return Err(Reject::new(
                response_code::INVALID_PARAMETER,
                format!("Group [{group}] is not a LITE group."),
            ))
        }
        Some(Some(parent)) => parent,
    };
    let body = LiteGroupInfo {
        parent_topic: Some(parent),
        group: header.group,
        lite_topic: header.lite_topic,
        // Not kept: -1, unknown.
        earliest_unconsumed_timestamp: -1,
        total_lag_count: -1,
        lag_count_top_k: Vec::new(),
        lag_timestamp_top_k: Vec::new(),
    };
    Ok(ok(request, &body))
}

/// TRIGGER_LITE_DISPATCH: Java re-reads a group's lite topics for new
/// messages; every POP_LITE_MESSAGE here already looks at all of a
/// client's lite topics, so there is nothing to trigger: SUCCESS.
pub(crate) fn trigger_lite_dispatch(request: &RemotingCommand) -> Result<RemotingCommand, Reject> {
    TriggerLiteDispatchRequestHeader::from_ext(&request.ext_fields)?;
    Ok(RemotingCommand::response_to(
        request,
        response_code::SUCCESS,
        None,
    ))
}
