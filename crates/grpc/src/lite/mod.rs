//! Lite topics (RocketMQ 5.5, RIP-83) at the gRPC endpoint. A lite push
//! consumer binds one parent topic (`message.type=LITE`) and keeps a set
//! of its lite topics with SyncLiteSubscription; its receives deliver only
//! the messages of those lite topics.
//!
//! Ferrocket keeps each client's set here, in the endpoint's memory, and
//! pops each lite topic as its own consumer group, `{group}%LITE%{lite}`
//! (a lite topic has no `%`), or `%LITE%{hash}` where the group's pop
//! retry topic would not fit a topic name, with the broker's `LITE` pop
//! filter: each
//! group and lite topic has its own progress over the parent topic's
//! queues, so what one lite topic's consumer skips stays for the others.
//! Java keeps one queue per lite topic in the broker instead.

pub(crate) mod calls;
mod start;
#[cfg(test)]
mod tests;

use std::sync::{Mutex, MutexGuard};

use ferrocket_protocol::limits::TOPIC_NAME_BYTES_MAX;
pub use ferrocket_protocol::lite::lite_group;
pub use ferrocket_protocol::lite::subscriptions::LITE_SUBSCRIPTION_QUOTA;
use ferrocket_protocol::lite::subscriptions::{Action, Change, LiteSubscriptionTable, Refused};
use ferrocket_protocol::lite::{
    LITE_GROUP_HASH_HEX as HASH_HEX, LITE_GROUP_SEPARATOR as SEPARATOR, RETRY_WRAPPING,
};

use crate::convert::now_ms;
use crate::pb::{Code, LiteSubscriptionAction, Status};
use crate::status::status;

/// The group an ack, change or dead-lettering of a message of `topic`
/// goes to: the lite group when the message came from a lite topic.
pub fn entry_group(group: &str, topic: &str, lite_topic: Option<&str>) -> String {
    match lite_topic.filter(|l| !l.is_empty()) {
        Some(lite) => lite_group(group, topic, lite),
        None => group.to_string(),
    }
}

/// Every client's lite subscriptions, by (group, client id), under the
/// rules the broker keeps a proxy's by (quotas; idle clients give way when
/// the endpoint is full).
#[derive(Default)]
pub struct LiteSubscriptions {
    table: Mutex<LiteSubscriptionTable>,
    /// Told of every lite message this endpoint sent: waiting lite
    /// receives look again at once.
    sent: tokio::sync::Notify,
}

/// One SyncLiteSubscription, checked.
pub struct Sync<'a> {
    pub client: &'a str,
    pub group: &'a str,
    pub topic: &'a str,
    pub action: LiteSubscriptionAction,
    pub lite_topics: &'a [String],
}

impl LiteSubscriptions {
    fn lock(&self) -> MutexGuard<'_, LiteSubscriptionTable> {
        self.table.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Applies one sync: adds, removes, or replaces the client's set.
    pub fn sync(&self, sync: &Sync<'_>) -> Result<(), Status> {
        check_names(sync)?;
        let change = Change {
            action: action(sync.action),
            client: sync.client,
            group: sync.group,
            topic: sync.topic,
            lite_topics: sync.lite_topics,
            now_ms: now_ms(),
        };
        let mut table = self.lock();
        let applied = table.apply(&change);
        let forgotten = table.take_forgotten();
        if forgotten > 0 {
            tracing::info!(
                lite_topics = forgotten,
                "forgot lite subscriptions of idle clients"
            );
        }
        applied.map_err(|refused| match refused {
            Refused::Illegal(why) => status(Code::IllegalLiteTopic, why),
            full => status(Code::LiteSubscriptionQuotaExceeded, full.why("endpoint")),
        })
    }

    /// Up to `count` of the client's lite topics of `topic`, starting
    /// where the last round stopped (so that every lite topic gets its
    /// turn).
    pub fn round(&self, client: &str, group: &str, topic: &str, count: usize) -> Vec<String> {
        self.lock().round(group, client, topic, count, now_ms())
    }

    /// Forgets every subscription of a client that ended.
    pub fn forget_client(&self, client: &str) {
        self.lock().remove_client(client);
    }

    /// Wakes every lite receive waiting between rounds.
    pub fn wake(&self) {
        self.sent.notify_waiters();
    }

    /// Completes at the next [`LiteSubscriptions::wake`].
    pub fn woken(&self) -> tokio::sync::futures::Notified<'_> {
        self.sent.notified()
    }

    /// Lite subscriptions held in all.
    pub fn total(&self) -> usize {
        self.lock().total()
    }
}

fn action(action: LiteSubscriptionAction) -> Action {
    match action {
        LiteSubscriptionAction::PartialAdd => Action::PartialAdd,
        LiteSubscriptionAction::PartialRemove => Action::PartialRemove,
        LiteSubscriptionAction::CompleteAdd => Action::CompleteAdd,
        LiteSubscriptionAction::CompleteRemove => Action::CompleteRemove,
    }
}

/// The sync's names: a group and a topic short enough for the lite groups'
/// pop retry topics (the table checks the lite topics).
fn check_names(sync: &Sync<'_>) -> Result<(), Status> {
    if sync.group.is_empty() {
        return Err(status(Code::IllegalConsumerGroup, "no consumer group"));
    }
    let topic_max = TOPIC_NAME_BYTES_MAX - RETRY_WRAPPING - SEPARATOR.len() - HASH_HEX;
    if sync.topic.is_empty() || sync.topic.len() > topic_max {
        return Err(status(
            Code::IllegalTopic,
            format!("a lite parent topic is 1 to {topic_max} characters"),
        ));
    }
    Ok(())
}
