//! Topic changes through shard 0, the topic table's one writer, and the
//! "find it here or have shard 0 create it" every send path uses.

use std::rc::Rc;

use ferrocket_protocol::body::TopicConfig;
use ferrocket_runtime::shard::ShardCall;

use super::Shard;
use crate::clock::now_ms;
use crate::error::Reject;
use crate::services::topics::{self, TopicChange, TopicTable};

/// On shard 0: a topic change.
struct ChangeTopic(TopicChange);

impl ShardCall<Shard> for ChangeTopic {
    type Reply = Result<Option<TopicConfig>, Reject>;

    async fn run(self, shard: Rc<Shard>) -> Self::Reply {
        shard.apply_topic_change(self.0).await
    }
}

impl Shard {
    /// Applies `change` on shard 0; answers the topic it concerns (see
    /// [`topics::apply`]) once every shard has the new table.
    pub async fn change_topic(&self, change: TopicChange) -> Result<Option<TopicConfig>, Reject> {
        self.call(0, ChangeTopic(change)).await?
    }

    /// The topic `name`: this shard's copy, or made by shard 0 as `create`
    /// when missing. `None` when the rules do not allow creating it.
    pub async fn ensure_topic(
        &self,
        name: &str,
        create: TopicChange,
    ) -> Result<Option<TopicConfig>, Reject> {
        match self.topic(name) {
            Some(found) => Ok(Some(found)),
            None => self.change_topic(create).await,
        }
    }

    /// On shard 0: applies a topic change, persists topics.json, installs
    /// the table on every shard and wakes the name server registration.
    pub async fn apply_topic_change(
        &self,
        change: TopicChange,
    ) -> Result<Option<TopicConfig>, Reject> {
        let config = self.config();
        let (topic, changed) = self
            .change_table::<TopicTable, _>(|table| {
                let (topic, changed) = topics::apply(table, change, &config, now_ms())?;
                Ok(((topic, changed), changed))
            })
            .await?;
        if changed {
            self.control()?.register_now.notify();
        }
        Ok(topic)
    }
}
