//! Subscription group changes through shard 0, the group table's one
//! writer, and finding (or auto-creating) a group.

use std::rc::Rc;

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
