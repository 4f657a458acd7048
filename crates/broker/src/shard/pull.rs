//! A pull travels to its queue's owner shard as itself.

use std::rc::Rc;

use ferrocket_runtime::shard::ShardCall;

use super::Shard;
use crate::services::pull::{execute, PullAnswer, PullQuery};

impl ShardCall<Shard> for PullQuery {
    type Reply = PullAnswer;

    async fn run(self, shard: Rc<Shard>) -> PullAnswer {
        shard.assert_owns(&self.topic, self.queue_id);
        let (topic, queue_id) = (self.topic.clone(), self.queue_id);
        let compacted = || shard.compacted_file(&topic, queue_id);
        execute(
            shard.offsets(),
            shard.polls(),
            &shard.store,
            self,
            compacted,
        )
        .await
    }
}
