//! UPDATE_AND_CREATE_SUBSCRIPTIONGROUP (200), GET_ALL_SUBSCRIPTIONGROUP_CONFIG
//! (201), DELETE_SUBSCRIPTIONGROUP (207). The group checks other
//! processors make (`SubscriptionGroupManager.findSubscriptionGroupConfig`:
//! an unknown group is created on first use while
//! `autoCreateSubscriptionGroup` is on) live in `shard::groups`.

use std::rc::Rc;

use ferrocket_protocol::body::{decode_json, encode_json};
use ferrocket_protocol::codes::response_code;
use ferrocket_protocol::RemotingCommand;
use ferrocket_runtime::shard::ShardCall;

use crate::error::Reject;
use crate::services::groups::{GroupChange, SubscriptionGroupConfig};
use crate::shard::Shard;

fn ok(request: &RemotingCommand) -> RemotingCommand {
    RemotingCommand::response_to(request, response_code::SUCCESS, None)
}

/// UPDATE_AND_CREATE_SUBSCRIPTIONGROUP: the body is the group's config.
pub(crate) async fn update_and_create(
    shard: &Rc<Shard>,
    request: &RemotingCommand,
) -> Result<RemotingCommand, Reject> {
    let max = crate::config::CONFIG_ENTRY_BYTES_MAX;
    if request.body.len() > max {
        return Err(Reject::new(
            response_code::INVALID_PARAMETER,
            format!(
                "the group config takes {} bytes, more than {max}",
                request.body.len()
            ),
        ));
    }
    let config: SubscriptionGroupConfig = decode_json(&request.body)?;
    shard.change_group(GroupChange::Upsert(config)).await?;
    Ok(ok(request))
}

/// GET_ALL_SUBSCRIPTIONGROUP_CONFIG: the whole table with its version.
pub(crate) fn all_configs(shard: &Shard, request: &RemotingCommand) -> RemotingCommand {
    let body = shard.groups().with(encode_json);
    ok(request).with_body(body)
}

/// GET_SUBSCRIPTIONGROUP_CONFIG (352, header `group`): one group's
/// settings, as Apache RocketMQ's proxy in cluster mode reads them for each
/// consumer (a lite group's attribute `lite.bind.topic`, an ordered group's
/// `consumeMessageOrderly`). As Java's broker, a group not there is created
/// when `autoCreateSubscriptionGroup` is on.
pub(crate) async fn one_config(
    shard: &Rc<Shard>,
    request: &RemotingCommand,
) -> Result<RemotingCommand, Reject> {
    let group = request.ext_fields.required("group")?;
    let config = shard.find_or_create_group(group).await.map_err(|_| {
        Reject::new(
            response_code::SUBSCRIPTION_GROUP_NOT_EXIST,
            "No group in this broker",
        )
    })?;
    Ok(ok(request).with_body(encode_json(&config)))
}

/// DELETE_SUBSCRIPTIONGROUP (header groupName, cleanOffset): removes the
/// group's settings and, with cleanOffset, its committed offsets.
pub(crate) async fn delete(
    shard: &Rc<Shard>,
    request: &RemotingCommand,
) -> Result<RemotingCommand, Reject> {
    let group = request.ext_fields.required("groupName")?.to_string();
    let clean_offset = request.ext_fields.get_bool("cleanOffset").unwrap_or(false);
    shard
        .change_group(GroupChange::Delete(group.clone()))
        .await?;
    if clean_offset {
        for answer in shard.call_all(ForgetGroupOffsets(group.clone())).await {
            if let Err(reject) = answer {
                tracing::warn!(remark = %reject.remark, "a shard kept offsets of a deleted group");
            }
        }
    }
    Ok(ok(request))
}

/// On every shard: drop a deleted group's committed offsets.
#[derive(Clone)]
struct ForgetGroupOffsets(String);

impl ShardCall<Shard> for ForgetGroupOffsets {
    type Reply = ();

    async fn run(self, shard: Rc<Shard>) {
        shard.offsets().borrow_mut().forget_group(&self.0);
    }
}
