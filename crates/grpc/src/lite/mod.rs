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

use std::collections::{BTreeSet, HashMap};
use std::sync::{Mutex, MutexGuard};

use ferrocket_protocol::limits::TOPIC_NAME_BYTES_MAX;
use ferrocket_protocol::lite::check_lite_topic;

use crate::pb::{Code, LiteSubscriptionAction, Status};
use crate::status::status;

/// Lite topics one client may subscribe (the group attribute
/// `lite.sub.client.quota`'s default, sent to the client in its settings).
pub const LITE_SUBSCRIPTION_QUOTA: usize = 2000;
/// Lite subscriptions the endpoint holds in all (the broker's
/// `maxLiteSubscriptionCount`).
pub const LITE_SUBSCRIPTIONS_MAX: usize = 100_000;
pub use ferrocket_protocol::lite::lite_group;
use ferrocket_protocol::lite::{
    LITE_GROUP_HASH_HEX as HASH_HEX, LITE_GROUP_SEPARATOR as SEPARATOR, RETRY_WRAPPING,
};

/// The group an ack, change or dead-lettering of a message of `topic`
/// goes to: the lite group when the message came from a lite topic.
pub fn entry_group(group: &str, topic: &str, lite_topic: Option<&str>) -> String {
    match lite_topic.filter(|l| !l.is_empty()) {
        Some(lite) => lite_group(group, topic, lite),
        None => group.to_string(),
    }
}

/// One client's lite subscription in one group.
struct Entry {
    /// The parent topic it binds.
    topic: String,
    lite_topics: BTreeSet<String>,
    /// Where the next receive starts in `lite_topics`.
    cursor: usize,
}

/// Every client's lite subscriptions, by (group, client id).
#[derive(Default)]
pub struct LiteSubscriptions {
    inner: Mutex<Inner>,
    /// Told of every lite message this endpoint sent: waiting lite
    /// receives look again at once.
    sent: tokio::sync::Notify,
}

#[derive(Default)]
struct Inner {
    clients: HashMap<(String, String), Entry>,
    /// Lite topics over every entry.
    total: usize,
}

/// One SyncLiteSubscription, checked.
pub struct Sync<'a> {
    pub client: &'a str,
    pub group: &'a str,
    pub topic: &'a str,
    pub action: LiteSubscriptionAction,
    pub lite_topics: &'a [String],
}

fn quota(why: String) -> Status {
    status(Code::LiteSubscriptionQuotaExceeded, why)
}

impl LiteSubscriptions {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Applies one sync: adds, removes, or replaces the client's set.
    pub fn sync(&self, sync: &Sync<'_>) -> Result<(), Status> {
        check_names(sync)?;
        let mut inner = self.lock();
        let key = (sync.group.to_string(), sync.client.to_string());
        let old: BTreeSet<String> = match inner.clients.get(&key) {
            Some(entry) if entry.topic == sync.topic => entry.lite_topics.clone(),
            _ => BTreeSet::new(),
        };
        let given = sync.lite_topics.iter().cloned();
        let new: BTreeSet<String> = match sync.action {
            LiteSubscriptionAction::PartialAdd => old.iter().cloned().chain(given).collect(),
            LiteSubscriptionAction::PartialRemove => {
                let gone: BTreeSet<String> = given.collect();
                old.difference(&gone).cloned().collect()
            }
            LiteSubscriptionAction::CompleteAdd => given.collect(),
            LiteSubscriptionAction::CompleteRemove => BTreeSet::new(),
        };
        if new.len() > old.len() && new.len() > LITE_SUBSCRIPTION_QUOTA {
            return Err(quota(format!(
                "lite subscription quota exceeded {LITE_SUBSCRIPTION_QUOTA}"
            )));
        }
        let held = inner.clients.get(&key).map_or(0, |e| e.lite_topics.len());
        let total = inner.total - held + new.len();
        if new.len() > held && total > LITE_SUBSCRIPTIONS_MAX {
            return Err(quota(format!(
                "the endpoint holds its maximum of {LITE_SUBSCRIPTIONS_MAX} lite subscriptions"
            )));
        }
        inner.total = total;
        if new.is_empty() {
            inner.clients.remove(&key);
            return Ok(());
        }
        let entry = Entry {
            topic: sync.topic.to_string(),
            lite_topics: new,
            cursor: 0,
        };
        inner.clients.insert(key, entry);
        Ok(())
    }

    /// Up to `count` of the client's lite topics of `topic`, starting
    /// where the last round stopped (so that every lite topic gets its
    /// turn).
    pub fn round(&self, client: &str, group: &str, topic: &str, count: usize) -> Vec<String> {
        let mut inner = self.lock();
        let key = (group.to_string(), client.to_string());
        let Some(entry) = inner.clients.get_mut(&key) else {
            return Vec::new();
        };
        if entry.topic != topic || entry.lite_topics.is_empty() {
            return Vec::new();
        }
        let n = entry.lite_topics.len();
        let start = entry.cursor % n;
        let take = count.min(n);
        entry.cursor = (start + take) % n;
        entry
            .lite_topics
            .iter()
            .cycle()
            .skip(start)
            .take(take)
            .cloned()
            .collect()
    }

    /// Forgets every subscription of a client that ended.
    pub fn forget_client(&self, client: &str) {
        let mut inner = self.lock();
        let mut dropped = 0;
        inner.clients.retain(|(_, c), entry| {
            let keep = c != client;
            if !keep {
                dropped += entry.lite_topics.len();
            }
            keep
        });
        inner.total -= dropped;
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
        self.lock().total
    }
}

/// The sync's names: a group, a topic short enough for the lite groups'
/// pop retry topics, and legal lite topics (ILLEGAL_LITE_TOPIC).
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
    for lite in sync.lite_topics {
        check_lite_topic(lite).map_err(|why| status(Code::IllegalLiteTopic, why))?;
    }
    Ok(())
}
