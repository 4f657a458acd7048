//! Topics and subscription groups by the batch (`AdminBrokerProcessor`):
//! UPDATE_AND_CREATE_TOPIC_LIST (18, mqadmin's `updateTopicList`) and
//! UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST (225, `updateSubGroupList`).
//! Every entry is checked before any is applied, so a bad name changes
//! nothing; then each is applied as its single request would be.

use std::rc::Rc;

use ferrocket_protocol::body::{decode_json, SubscriptionGroupConfig, TopicConfig};
use ferrocket_protocol::codes::response_code;
use ferrocket_protocol::RemotingCommand;
use serde::Deserialize;

use crate::error::Reject;
use crate::services::groups::{validate_group, GroupChange};
use crate::services::topics::TopicChange;
use crate::shard::Shard;

/// Request codes this module answers (RocketMQ `RequestCode`).
pub(crate) const UPDATE_AND_CREATE_TOPIC_LIST: i32 = 18;
pub(crate) const UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST: i32 = 225;

/// Entries in one batch at most.
pub const BATCH_ENTRIES_MAX: usize = 1_024;

/// UPDATE_AND_CREATE_TOPIC_LIST body (`CreateTopicListRequestBody`).
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct TopicListBody {
    topic_config_list: Vec<TopicConfig>,
}

/// UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST body (`SubscriptionGroupList`).
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct GroupListBody {
    group_config_list: Vec<SubscriptionGroupConfig>,
}

fn invalid(remark: String) -> Reject {
    Reject::new(response_code::INVALID_PARAMETER, remark)
}

fn check_size(body: &[u8], entries: usize) -> Result<(), Reject> {
    let bytes_max = crate::config::CONFIG_ENTRY_BYTES_MAX * BATCH_ENTRIES_MAX;
    if body.len() > bytes_max {
        return Err(invalid(format!(
            "the batch takes {} bytes, more than {bytes_max}",
            body.len()
        )));
    }
    if entries > BATCH_ENTRIES_MAX {
        return Err(invalid(format!(
            "{entries} entries in one batch, at most {BATCH_ENTRIES_MAX}"
        )));
    }
    Ok(())
}

fn ok(request: &RemotingCommand) -> RemotingCommand {
    RemotingCommand::response_to(request, response_code::SUCCESS, None)
}

/// UPDATE_AND_CREATE_TOPIC_LIST: each topic as UPDATE_AND_CREATE_TOPIC.
pub(crate) async fn update_topics(
    shard: &Rc<Shard>,
    request: &RemotingCommand,
) -> Result<RemotingCommand, Reject> {
    check_size(&request.body, 0)?;
    let body: TopicListBody = decode_json(&request.body)?;
    check_size(&request.body, body.topic_config_list.len())?;
    for topic in &body.topic_config_list {
        crate::services::topics::check_admin_topic(&topic.topic_name)?;
    }
    for topic in body.topic_config_list {
        shard.change_topic(TopicChange::Upsert(topic)).await?;
    }
    Ok(ok(request))
}

/// UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST: each group as
/// UPDATE_AND_CREATE_SUBSCRIPTIONGROUP.
pub(crate) async fn update_groups(
    shard: &Rc<Shard>,
    request: &RemotingCommand,
) -> Result<RemotingCommand, Reject> {
    check_size(&request.body, 0)?;
    let body: GroupListBody = decode_json(&request.body)?;
    check_size(&request.body, body.group_config_list.len())?;
    for group in &body.group_config_list {
        validate_group(&group.group_name).map_err(invalid)?;
    }
    for group in body.group_config_list {
        shard.change_group(GroupChange::Upsert(group)).await?;
    }
    Ok(ok(request))
}
