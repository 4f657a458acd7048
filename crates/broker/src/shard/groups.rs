//! Subscription group changes through shard 0, the group table's one
//! writer, finding (or auto-creating) a group, and the group checks the
//! pull, pop and lite handlers make before reading.

use std::rc::Rc;

use ferrocket_protocol::body::MessageModel;
use ferrocket_protocol::codes::response_code;
use ferrocket_runtime::shard::ShardCall;

use super::Shard;
use crate::clock::now_ms;
use crate::error::Reject;
use crate::services::groups::{self, GroupChange, GroupTable, SubscriptionGroupConfig};

/// On shard 0: a group change.
struct ChangeGroup(GroupChange);

impl ShardCall<Shard> for ChangeGroup {
    type Reply = Result<Option<SubscriptionGroupConfig>, Reject>;

    async fn run(self, shard: Rc<Shard>) -> Self::Reply {
        let max = shard.config().subscription_group_count_max;
        let change = self.0;
        shard
            .change_table::<GroupTable, _>(|table| groups::apply(table, change, now_ms(), max))
            .await
    }
}

impl Shard {
    /// Sends a group change to shard 0 and waits until every shard has it.
    pub async fn change_group(
        &self,
        change: GroupChange,
    ) -> Result<Option<SubscriptionGroupConfig>, Reject> {
        self.call(0, ChangeGroup(change)).await?
    }

    /// The group's settings; an unknown group is created when
    /// `autoCreateSubscriptionGroup` is on, else SUBSCRIPTION_GROUP_NOT_EXIST.
    pub async fn find_or_create_group(
        &self,
        group: &str,
    ) -> Result<SubscriptionGroupConfig, Reject> {
        if let Some(found) = self.groups().with(|t| t.get(group).cloned()) {
            return Ok(found);
        }
        let missing = || {
            Reject::new(
                response_code::SUBSCRIPTION_GROUP_NOT_EXIST,
                format!("subscription group [{group}] does not exist"),
            )
        };
        if !self.config().auto_create_subscription_group {
            return Err(missing());
        }
        self.change_group(GroupChange::AutoCreate(group.to_string()))
            .await?
            .ok_or_else(missing)
    }
}

/// A broker whose brokerPermission lacks read takes no pulls, pops,
/// peeks, notifications or polling-info requests (Java's words).
pub(crate) fn check_readable(shard: &Shard) -> Result<(), Reject> {
    if ferrocket_protocol::body::perm::is_readable(shard.config().broker_permission) {
        return Ok(());
    }
    let ip = shard.env().store_host.ip();
    Err(Reject::new(
        response_code::NO_PERMISSION,
        format!("the broker[{ip}] pulling message is forbidden"),
    ))
}

/// The checks of `PullMessageProcessor`: the group exists (or is created)
/// and may consume, and a broadcasting group may consume by broadcast.
pub(crate) async fn check_pull(shard: &Rc<Shard>, group: &str) -> Result<(), Reject> {
    check_readable(shard)?;
    // The common case reads two flags of this shard's copy, no clone.
    let flags = |c: &SubscriptionGroupConfig| (c.consume_enable, c.consume_broadcast_enable);
    let (consume_enable, broadcast_enable) = match shard.groups().with(|t| t.get(group).map(flags))
    {
        Some(found) => found,
        None => flags(&shard.find_or_create_group(group).await?),
    };
    if !consume_enable {
        return Err(Reject::new(
            response_code::NO_PERMISSION,
            format!("subscription group no permission, {group}"),
        ));
    }
    if !broadcast_enable {
        let broadcasting = shard.clients().with(|clients| {
            clients
                .consumers
                .get(group)
                .is_some_and(|g| g.message_model == MessageModel::Broadcasting)
        });
        if broadcasting {
            return Err(Reject::new(
                response_code::NO_PERMISSION,
                format!("the consumer group[{group}] can not consume by broadcast way"),
            ));
        }
    }
    Ok(())
}
