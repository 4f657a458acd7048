//! The broker's lite subscriptions (RocketMQ 5.5), as a proxy in cluster
//! mode keeps them here with LITE_SUBSCRIPTION_CTL: per consumer group and
//! client, the parent topic it binds and its lite topics. POP_LITE_MESSAGE
//! pops a client's lite topics in turns from this set. Kept in memory, as
//! Java's `LiteSubscriptionRegistry` is: a proxy sends a client's whole set
//! again (COMPLETE_ADD) when it reconnects. `Send + Sync`: every shard
//! reads and writes the one set.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Mutex, MutexGuard};

use ferrocket_protocol::lite::check_lite_topic;

/// Lite topics one client may subscribe (Java's group attribute
/// `lite.sub.client.quota`, 2000 by default).
pub const LITE_SUBSCRIPTION_QUOTA: usize = 2000;
/// Lite subscriptions the broker holds in all (`maxLiteSubscriptionCount`).
pub const LITE_SUBSCRIPTIONS_MAX: usize = 100_000;
/// A client that neither changed nor popped for this long (Java's channel
/// expiry, 120 s) is forgotten when the broker's maximum would refuse a
/// live client: a proxy that crashed never sends its COMPLETE_REMOVE.
pub const LITE_CLIENT_IDLE_MS: i64 = 120_000;

/// LiteSubscriptionAction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    PartialAdd,
    PartialRemove,
    CompleteAdd,
    CompleteRemove,
}

impl Action {
    /// Java's enum name.
    pub fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "PARTIAL_ADD" => Action::PartialAdd,
            "PARTIAL_REMOVE" => Action::PartialRemove,
            "COMPLETE_ADD" => Action::CompleteAdd,
            "COMPLETE_REMOVE" => Action::CompleteRemove,
            _ => return None,
        })
    }
}

/// Why a change was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    /// LITE_SUBSCRIPTION_QUOTA_EXCEEDED.
    Quota(String),
    /// ILLEGAL_OPERATION: a lite topic name no lite topic has.
    Illegal(String),
}

/// One client's subscription in one group.
#[derive(Debug, Clone)]
pub struct Entry {
    pub topic: String,
    pub lite_topics: BTreeSet<String>,
    /// Where the next pop starts in `lite_topics`.
    cursor: usize,
    /// When the client last changed or popped (ms).
    pub last_access_ms: i64,
}

/// One change (a `LiteSubscriptionDTO`).
pub struct Change<'a> {
    pub action: Action,
    pub client: &'a str,
    pub group: &'a str,
    pub topic: &'a str,
    pub lite_topics: &'a [String],
    pub now_ms: i64,
}

#[derive(Default)]
struct Inner {
    /// By (group, client id).
    clients: HashMap<(String, String), Entry>,
    /// Lite topics over every entry.
    total: usize,
}

impl Inner {
    /// Forgets every entry but `keep` untouched since `before_ms`; answers
    /// how many lite topics went.
    fn forget_idle(&mut self, before_ms: i64, keep: &(String, String)) -> usize {
        let mut freed = 0;
        self.clients.retain(|key, entry| {
            let idle = entry.last_access_ms < before_ms && key != keep;
            if idle {
                freed += entry.lite_topics.len();
            }
            !idle
        });
        self.total -= freed;
        if freed > 0 {
            tracing::info!(
                lite_topics = freed,
                "forgot lite subscriptions of idle clients"
            );
        }
        freed
    }
}

/// Every client's lite subscriptions.
#[derive(Default)]
pub struct LiteRegistry {
    inner: Mutex<Inner>,
}

impl LiteRegistry {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Applies one change: adds, removes or replaces the client's set.
    pub fn apply(&self, change: &Change<'_>) -> Result<(), Refused> {
        for lite in change.lite_topics {
            check_lite_topic(lite).map_err(Refused::Illegal)?;
        }
        let mut inner = self.lock();
        let key = (change.group.to_string(), change.client.to_string());
        let held = inner.clients.get(&key);
        let held_len = held.map_or(0, |e| e.lite_topics.len());
        let old: BTreeSet<String> = match held {
            Some(entry) if entry.topic == change.topic => entry.lite_topics.clone(),
            _ => BTreeSet::new(),
        };
        let given = change.lite_topics.iter().cloned();
        let new: BTreeSet<String> = match change.action {
            Action::PartialAdd => old.iter().cloned().chain(given).collect(),
            Action::PartialRemove => {
                let gone: BTreeSet<String> = given.collect();
                old.difference(&gone).cloned().collect()
            }
            Action::CompleteAdd => given.collect(),
            Action::CompleteRemove => BTreeSet::new(),
        };
        if new.len() > old.len() && new.len() > LITE_SUBSCRIPTION_QUOTA {
            return Err(Refused::Quota(format!(
                "lite subscription quota exceeded {LITE_SUBSCRIPTION_QUOTA}"
            )));
        }
        let mut total = inner.total - held_len + new.len();
        if new.len() > held_len && total > LITE_SUBSCRIPTIONS_MAX {
            let freed = inner.forget_idle(change.now_ms - LITE_CLIENT_IDLE_MS, &key);
            total -= freed;
        }
        if new.len() > held_len && total > LITE_SUBSCRIPTIONS_MAX {
            return Err(Refused::Quota(format!(
                "the broker holds its maximum of {LITE_SUBSCRIPTIONS_MAX} lite subscriptions"
            )));
        }
        inner.total = total;
        if new.is_empty() {
            inner.clients.remove(&key);
            return Ok(());
        }
        let entry = Entry {
            topic: change.topic.to_string(),
            lite_topics: new,
            cursor: 0,
            last_access_ms: change.now_ms,
        };
        inner.clients.insert(key, entry);
        Ok(())
    }

    /// Forgets every subscription of `client` (COMPLETE_REMOVE: in every group).
    pub fn remove_client(&self, client: &str) {
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

    /// Up to `count` of the client's lite topics of `topic`, from where the
    /// last round stopped, so every lite topic gets its turn.
    pub fn round(
        &self,
        group: &str,
        client: &str,
        topic: &str,
        count: usize,
        now_ms: i64,
    ) -> Vec<String> {
        let mut inner = self.lock();
        let Some(entry) = inner
            .clients
            .get_mut(&(group.to_string(), client.to_string()))
        else {
            return Vec::new();
        };
        if entry.topic != topic || entry.lite_topics.is_empty() {
            return Vec::new();
        }
        entry.last_access_ms = now_ms;
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

    /// The client's entry in `group`, or in any group when none is given.
    pub fn client(&self, group: Option<&str>, client: &str) -> Option<(String, Entry)> {
        let inner = self.lock();
        inner
            .clients
            .iter()
            .filter(|((g, c), _)| c == client && group.is_none_or(|want| want == g))
            .map(|((g, _), e)| (g.clone(), e.clone()))
            .next()
    }

    /// (group, client) of every subscriber of `lite` in parent `topic`.
    pub fn subscribers(&self, topic: &str, lite: &str) -> Vec<(String, String)> {
        let inner = self.lock();
        let mut out: Vec<(String, String)> = inner
            .clients
            .iter()
            .filter(|(_, e)| e.topic == topic && e.lite_topics.contains(lite))
            .map(|((g, c), _)| (g.clone(), c.clone()))
            .collect();
        out.sort();
        out
    }

    /// Per parent topic, how many lite topics are subscribed; per group,
    /// the parent topics it binds; and the subscriptions in all.
    pub fn summary(&self) -> Summary {
        let inner = self.lock();
        let mut summary = Summary {
            subscriptions: inner.total,
            ..Summary::default()
        };
        let mut lites: HashMap<String, BTreeSet<String>> = HashMap::new();
        for ((group, _), entry) in &inner.clients {
            lites
                .entry(entry.topic.clone())
                .or_default()
                .extend(entry.lite_topics.iter().cloned());
            summary
                .groups
                .entry(group.clone())
                .or_default()
                .insert(entry.topic.clone());
        }
        summary.topics = lites.into_iter().map(|(t, l)| (t, l.len())).collect();
        summary
    }
}

/// What [`LiteRegistry::summary`] tells.
#[derive(Debug, Default)]
pub struct Summary {
    pub subscriptions: usize,
    pub topics: std::collections::BTreeMap<String, usize>,
    pub groups: std::collections::BTreeMap<String, BTreeSet<String>>,
}
