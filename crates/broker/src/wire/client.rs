//! HEART_BEAT (34), UNREGISTER_CLIENT (35), GET_CONSUMER_LIST_BY_GROUP
//! (38) and CHECK_CLIENT_CONFIG (46) (`ClientManageProcessor`,
//! `ConsumerManageProcessor`). Registry changes go to shard 0; the consumer
//! list is read from this shard's copy.

use std::rc::Rc;

use ferrocket_protocol::body::{
    decode_json, encode_json, CheckClientRequestBody, ConsumerIdList, HeartbeatData,
};
use ferrocket_protocol::codes::response_code;
use ferrocket_protocol::header::{ConsumerGroupRequestHeader, UnregisterClientRequestHeader};
use ferrocket_protocol::RemotingCommand;
use ferrocket_runtime::server::Connection;

use crate::services::clients::ConnInfo;

use ferrocket_protocol::limits::validate_topic;

use crate::error::Reject;
use crate::services::clients::ClientTable;
use crate::services::groups::validate_group;
use crate::shard::clients::{ConnectionClosed, Heartbeat, Unregister};
use crate::shard::Shard;

fn done(request: &RemotingCommand) -> RemotingCommand {
    RemotingCommand::response_to(request, response_code::SUCCESS, None)
}

/// Longest client id accepted (Java's are `ip@pid#...`, well under this).
pub const CLIENT_ID_BYTES_MAX: usize = 255;
/// Most subscriptions one consumer group may declare in a heartbeat.
pub const SUBSCRIPTIONS_PER_GROUP_MAX: usize = 1_024;

/// The names in a heartbeat are what Java accepts: a client id, group names
/// as `validateGroup` wants them, legal topic names, bounded counts.
fn check_heartbeat(data: &HeartbeatData) -> Result<(), String> {
    if data.client_id.is_empty() || data.client_id.len() > CLIENT_ID_BYTES_MAX {
        return Err(format!(
            "the heartbeat's clientID must have 1 to {CLIENT_ID_BYTES_MAX} bytes"
        ));
    }
    let groups = data
        .consumer_data_set
        .iter()
        .map(|c| c.group_name.as_str())
        .chain(data.producer_data_set.iter().map(|p| p.group_name.as_str()));
    for group in groups.filter(|g| !g.is_empty()) {
        validate_group(group)?;
    }
    for consumer in &data.consumer_data_set {
        if consumer.subscription_data_set.len() > SUBSCRIPTIONS_PER_GROUP_MAX {
            return Err(format!(
                "group {} subscribes to {} topics, more than {SUBSCRIPTIONS_PER_GROUP_MAX}",
                consumer.group_name,
                consumer.subscription_data_set.len()
            ));
        }
        // Empty topics are ignored when the subscriptions are recorded.
        let topics = consumer
            .subscription_data_set
            .iter()
            .map(|s| s.topic.as_str());
        for topic in topics.filter(|t| !t.is_empty()) {
            validate_topic(topic).map_err(|e| e.to_string())?;
        }
    }
    Ok(())
}

/// HEART_BEAT: registers the client's producer and consumer groups on this
/// connection (and creates the retry topic of each clustering group).
pub(crate) async fn heartbeat(
    shard: &Rc<Shard>,
    conn: &Rc<Connection>,
    request: &RemotingCommand,
) -> Result<RemotingCommand, Reject> {
    let data: HeartbeatData = decode_json(&request.body)?;
    check_heartbeat(&data).map_err(|e| Reject::new(response_code::INVALID_PARAMETER, e))?;
    for group in ClientTable::clustering_groups(&data) {
        // Creates the group when autoCreateSubscriptionGroup allows; a
        // group that does not exist still registers, without a retry topic.
        match shard.find_or_create_group(group).await {
            Ok(_) => {}
            Err(reject) if reject.code == response_code::SUBSCRIPTION_GROUP_NOT_EXIST => {}
            Err(reject) => return Err(reject),
        }
    }
    let conn_id = conn.id();
    shard.call(0, Heartbeat { conn_id, data }).await??;
    Ok(done(request))
}

/// UNREGISTER_CLIENT.
pub(crate) async fn unregister_client(
    shard: &Rc<Shard>,
    request: &RemotingCommand,
) -> Result<RemotingCommand, Reject> {
    let header = UnregisterClientRequestHeader::from_ext(&request.ext_fields)?;
    let leave = Unregister {
        client_id: header.client_id,
        producer_group: header.producer_group.filter(|g| !g.is_empty()),
        consumer_group: header.consumer_group.filter(|g| !g.is_empty()),
    };
    shard.call(0, leave).await??;
    Ok(done(request))
}

/// GET_CONSUMER_LIST_BY_GROUP.
pub(crate) fn consumer_list(
    shard: &Shard,
    request: &RemotingCommand,
) -> Result<RemotingCommand, Reject> {
    let header = ConsumerGroupRequestHeader::from_ext(&request.ext_fields)?;
    let clients = shard.clients().get();
    let ids: Vec<String> = clients
        .consumers
        .get(&header.consumer_group)
        .map(|group| group.clients.keys().cloned().collect())
        .unwrap_or_default();
    if ids.is_empty() {
        return Err(Reject::system(format!(
            "no consumer for this group, {}",
            header.consumer_group
        )));
    }
    let body = encode_json(&ConsumerIdList {
        consumer_id_list: ids,
    });
    Ok(RemotingCommand::response_to(request, response_code::SUCCESS, None).with_body(body))
}

/// CHECK_CLIENT_CONFIG: whether this broker can filter by the subscription
/// a consumer is about to use (Java clients ask at start for every
/// subscription that is not by tag, and refuse to start on an error). A
/// tag subscription always passes; any other needs `enablePropertyFilter`
/// (SYSTEM_ERROR otherwise) and must compile (SUBSCRIPTION_PARSE_FAILED).
pub(crate) fn check_client_config(
    shard: &Shard,
    request: &RemotingCommand,
) -> Result<RemotingCommand, Reject> {
    let body: CheckClientRequestBody = decode_json(&request.body)?;
    let Some(subscription) = body.subscription_data else {
        return Ok(done(request));
    };
    // Java's `ExpressionType.isTagType`: absent, empty or exactly "TAG".
    let kind = subscription.expression_type.as_deref();
    if matches!(kind, None | Some("") | Some("TAG")) {
        return Ok(done(request));
    }
    crate::services::filter::sql::pull_filter(
        &subscription.sub_string,
        kind,
        shard.config().enable_property_filter,
    )
    .inspect_err(|reject| {
        tracing::debug!(client = %body.client_id, group = %body.group,
            topic = %subscription.topic, remark = %reject.remark,
            "a consumer's subscription is refused");
    })?;
    Ok(done(request))
}

/// A connection closed: its clients leave the registry (only asks shard 0
/// when this shard's copy knows a client on it).
pub(crate) fn connection_closed(shard: &Shard, conn_id: u64) {
    if !shard
        .clients()
        .with(|clients| clients.has_connection(conn_id))
    {
        return;
    }
    let Some(mesh) = shard.mesh() else {
        return;
    };
    glommio::spawn_local(async move {
        match mesh.call(0, ConnectionClosed { conn_id }).await {
            Ok(Ok(())) => {}
            Ok(Err(reject)) => {
                tracing::debug!(conn_id, remark = %reject.remark, "closed connection not removed")
            }
            Err(err) => tracing::debug!(conn_id, %err, "could not report a closed connection"),
        }
    })
    .detach();
}

/// HEART_BEAT hook (before the registry sees it): remembers who is on this
/// connection for GET_CONSUMER_CONNECTION_LIST and creates unknown
/// consumer groups. Never fails the heartbeat.
pub(crate) async fn on_heartbeat(
    shard: &Rc<Shard>,
    conn: &Rc<Connection>,
    request: &RemotingCommand,
) {
    shard.conn_infos().borrow_mut().insert(
        conn.id(),
        ConnInfo {
            addr: conn.peer_addr().to_string(),
            language: request.language.name().to_string(),
            version: request.version,
        },
    );
    let Ok(data) = decode_json::<HeartbeatData>(&request.body) else {
        return;
    };
    for consumer in &data.consumer_data_set {
        if consumer.group_name.is_empty() {
            continue;
        }
        if let Err(reject) = shard.find_or_create_group(&consumer.group_name).await {
            tracing::debug!(group = %consumer.group_name, remark = %reject.remark,
                "heartbeat of a group that cannot be created");
        }
    }
}

/// A connection closed: forget what it said about itself.
pub(crate) fn forget_conn_info(shard: &Shard, conn_id: u64) {
    shard.conn_infos().borrow_mut().remove(&conn_id);
}
