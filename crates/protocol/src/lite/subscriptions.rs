//! Lite subscriptions (RocketMQ 5.5): per consumer group and client, the
//! parent topic it binds and its lite topics, changed by adds, removes and
//! replacements under Java's quotas. The gRPC endpoint keeps one table for
//! SyncLiteSubscription, the broker one for LITE_SUBSCRIPTION_CTL (a proxy
//! in cluster mode); each behind its own lock. Plain data: the caller
//! passes the time and logs what [`LiteSubscriptionTable::take_forgotten`]
//! tells.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::check_lite_topic;

/// Lite topics one client may subscribe (Java's group attribute
/// `lite.sub.client.quota`, 2000 by default).
pub const LITE_SUBSCRIPTION_QUOTA: usize = 2000;
/// Lite subscriptions one table holds in all (`maxLiteSubscriptionCount`).
pub const LITE_SUBSCRIPTIONS_MAX: usize = 100_000;
/// A client that neither changed nor popped for this long (Java's channel
/// expiry, 120 s) is forgotten when the table's maximum would refuse a
/// live client: a crashed proxy or client never says it is gone.
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

    /// The set `held` becomes with `given`.
    fn applied(self, held: &BTreeSet<String>, given: &[String]) -> BTreeSet<String> {
        let given = given.iter().cloned();
        match self {
            Action::PartialAdd => held.iter().cloned().chain(given).collect(),
            Action::PartialRemove => {
                let gone: BTreeSet<String> = given.collect();
                held.difference(&gone).cloned().collect()
            }
            Action::CompleteAdd => given.collect(),
            Action::CompleteRemove => BTreeSet::new(),
        }
    }
}

/// Why a change was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    /// The client would hold more than [`LITE_SUBSCRIPTION_QUOTA`]
    /// (LITE_SUBSCRIPTION_QUOTA_EXCEEDED).
    ClientQuota,
    /// The table would hold more than [`LITE_SUBSCRIPTIONS_MAX`], idle
    /// clients forgotten (LITE_SUBSCRIPTION_QUOTA_EXCEEDED).
    Full,
    /// A name no lite topic has.
    Illegal(String),
}

impl Refused {
    /// The words of the answer; `holder` names who keeps the table
    /// ("broker", "endpoint").
    pub fn why(&self, holder: &str) -> String {
        match self {
            Refused::ClientQuota => {
                format!("lite subscription quota exceeded {LITE_SUBSCRIPTION_QUOTA}")
            }
            Refused::Full => format!(
                "the {holder} holds its maximum of {LITE_SUBSCRIPTIONS_MAX} lite subscriptions"
            ),
            Refused::Illegal(why) => why.clone(),
        }
    }
}

/// One client's subscription in one group.
#[derive(Debug, Clone)]
pub struct Entry {
    /// The parent topic it binds.
    pub topic: String,
    pub lite_topics: BTreeSet<String>,
    /// Where the next round starts in `lite_topics`.
    cursor: usize,
    /// When the client last changed or popped (ms).
    pub last_access_ms: i64,
}

/// One change (a `LiteSubscriptionDTO`, a SyncLiteSubscription).
pub struct Change<'a> {
    pub action: Action,
    pub client: &'a str,
    pub group: &'a str,
    pub topic: &'a str,
    pub lite_topics: &'a [String],
    pub now_ms: i64,
}

/// Every client's lite subscriptions, by (group, client id).
#[derive(Debug, Default)]
pub struct LiteSubscriptionTable {
    clients: HashMap<(String, String), Entry>,
    /// Lite topics over every entry.
    total: usize,
    /// Lite topics of idle clients forgotten since the last
    /// [`LiteSubscriptionTable::take_forgotten`].
    forgotten: usize,
}

impl LiteSubscriptionTable {
    /// Applies one change: adds, removes or replaces the client's set. A
    /// client bound to another parent topic starts from an empty set.
    pub fn apply(&mut self, change: &Change<'_>) -> Result<(), Refused> {
        for lite in change.lite_topics {
            check_lite_topic(lite).map_err(Refused::Illegal)?;
        }
        let key = (change.group.to_string(), change.client.to_string());
        let held = self.clients.get(&key);
        let held_len = held.map_or(0, |e| e.lite_topics.len());
        let old = match held {
            Some(entry) if entry.topic == change.topic => entry.lite_topics.clone(),
            _ => BTreeSet::new(),
        };
        let new = change.action.applied(&old, change.lite_topics);
        if new.len() > old.len() && new.len() > LITE_SUBSCRIPTION_QUOTA {
            return Err(Refused::ClientQuota);
        }
        let grows = new.len() > held_len;
        let over = |table: &Self| table.total - held_len + new.len() > LITE_SUBSCRIPTIONS_MAX;
        if grows && over(self) {
            self.forget_idle(change.now_ms - LITE_CLIENT_IDLE_MS, &key);
        }
        if grows && over(self) {
            return Err(Refused::Full);
        }
        self.total = self.total - held_len + new.len();
        if new.is_empty() {
            self.clients.remove(&key);
            return Ok(());
        }
        let entry = Entry {
            topic: change.topic.to_string(),
            lite_topics: new,
            cursor: 0,
            last_access_ms: change.now_ms,
        };
        self.clients.insert(key, entry);
        Ok(())
    }

    /// Forgets every entry but `keep` untouched since `before_ms`.
    fn forget_idle(&mut self, before_ms: i64, keep: &(String, String)) {
        let mut freed = 0;
        self.clients.retain(|key, entry| {
            let idle = entry.last_access_ms < before_ms && key != keep;
            if idle {
                freed += entry.lite_topics.len();
            }
            !idle
        });
        self.total -= freed;
        self.forgotten += freed;
    }

    /// Lite topics of idle clients forgotten to make room since the last
    /// call (for the caller's log).
    pub fn take_forgotten(&mut self) -> usize {
        std::mem::take(&mut self.forgotten)
    }

    /// Forgets every subscription of `client`, in every group.
    pub fn remove_client(&mut self, client: &str) {
        let mut dropped = 0;
        self.clients.retain(|(_, c), entry| {
            let keep = c != client;
            if !keep {
                dropped += entry.lite_topics.len();
            }
            keep
        });
        self.total -= dropped;
    }

    /// Up to `count` of the client's lite topics of `topic`, from where the
    /// last round stopped, so every lite topic gets its turn. A round is an
    /// access: the client is not idle.
    pub fn round(
        &mut self,
        group: &str,
        client: &str,
        topic: &str,
        count: usize,
        now_ms: i64,
    ) -> Vec<String> {
        let key = (group.to_string(), client.to_string());
        let Some(entry) = self.clients.get_mut(&key) else {
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
        self.clients
            .iter()
            .filter(|((g, c), _)| c == client && group.is_none_or(|want| want == g))
            .map(|((g, _), e)| (g.clone(), e.clone()))
            .next()
    }

    /// (group, client) of every subscriber of `lite` in parent `topic`.
    pub fn subscribers(&self, topic: &str, lite: &str) -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = self
            .clients
            .iter()
            .filter(|(_, e)| e.topic == topic && e.lite_topics.contains(lite))
            .map(|((g, c), _)| (g.clone(), c.clone()))
            .collect();
        out.sort();
        out
    }

    /// Lite subscriptions held in all.
    pub fn total(&self) -> usize {
        self.total
    }

    /// Per parent topic, how many lite topics are subscribed; per group,
    /// the parent topics it binds; and the subscriptions in all.
    pub fn summary(&self) -> Summary {
        let mut summary = Summary {
            subscriptions: self.total,
            ..Summary::default()
        };
        let mut lites: HashMap<String, BTreeSet<String>> = HashMap::new();
        for ((group, _), entry) in &self.clients {
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

/// What [`LiteSubscriptionTable::summary`] tells.
#[derive(Debug, Default)]
pub struct Summary {
    pub subscriptions: usize,
    pub topics: BTreeMap<String, usize>,
    pub groups: BTreeMap<String, BTreeSet<String>>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change<'a>(action: Action, client: &'a str, lites: &'a [String]) -> Change<'a> {
        Change {
            action,
            client,
            group: "G",
            topic: "P",
            lite_topics: lites,
            now_ms: 7,
        }
    }

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    /// Applies a change of group G, topic P at 7 ms.
    fn apply(
        table: &mut LiteSubscriptionTable,
        action: Action,
        client: &str,
        lites: &[&str],
    ) -> Result<(), Refused> {
        table.apply(&change(action, client, &names(lites)))
    }

    fn numbered(prefix: &str, count: usize) -> Vec<String> {
        (0..count).map(|i| format!("{prefix}{i}")).collect()
    }

    #[test]
    fn changes_add_remove_and_replace_a_clients_set() {
        let mut table = LiteSubscriptionTable::default();
        apply(&mut table, Action::PartialAdd, "c1", &["a", "b"]).unwrap();
        apply(&mut table, Action::PartialAdd, "c2", &["b"]).unwrap();
        apply(&mut table, Action::PartialRemove, "c1", &["a"]).unwrap();
        assert_eq!(
            table.subscribers("P", "b"),
            [("G".into(), "c1".into()), ("G".into(), "c2".into())]
        );
        assert!(table.subscribers("P", "a").is_empty());
        apply(&mut table, Action::CompleteAdd, "c1", &["x", "y", "z"]).unwrap();
        assert_eq!(table.summary().subscriptions, 4);
        assert_eq!(table.summary().topics["P"], 4);
        let q = names(&["q"]);
        let mut other_topic = change(Action::PartialAdd, "c2", &q);
        other_topic.topic = "Q";
        table.apply(&other_topic).unwrap();
        assert_eq!(table.total(), 4, "binding another topic drops the old set");
        table.apply(&other_topic).unwrap();
        assert_eq!(table.total(), 4, "adding what is held adds nothing");
        table.remove_client("c1");
        assert_eq!(table.total(), 1);
        assert!(table.client(None, "c1").is_none());
        assert_eq!(table.client(Some("G"), "c2").unwrap().1.last_access_ms, 7);
        let bad = apply(&mut table, Action::PartialAdd, "c2", &["a b"]);
        assert!(matches!(bad, Err(Refused::Illegal(_))), "{bad:?}");
        table
            .apply(&change(Action::CompleteRemove, "c2", &[]))
            .unwrap();
        assert_eq!((table.total(), table.summary().groups.len()), (0, 0));
    }

    #[test]
    fn rounds_take_turns_over_a_clients_lite_topics() {
        let mut table = LiteSubscriptionTable::default();
        apply(&mut table, Action::PartialAdd, "c1", &["a", "b", "c"]).unwrap();
        assert_eq!(table.round("G", "c1", "P", 2, 1), ["a", "b"]);
        assert_eq!(table.round("G", "c1", "P", 2, 1), ["c", "a"]);
        assert_eq!(table.round("G", "c1", "P", 9, 1), ["b", "c", "a"]);
        assert!(table.round("G", "c1", "other", 2, 1).is_empty(), "topic");
        assert!(table.round("G", "c9", "P", 2, 1).is_empty(), "client");
        assert!(table.round("H", "c1", "P", 2, 1).is_empty(), "group");
    }

    #[test]
    fn the_client_quota_refuses_growth_only() {
        let mut table = LiteSubscriptionTable::default();
        let many = numbered("t", LITE_SUBSCRIPTION_QUOTA + 1);
        let refused = table.apply(&change(Action::CompleteAdd, "c1", &many));
        assert_eq!(refused, Err(Refused::ClientQuota));
        assert_eq!(table.total(), 0, "nothing kept");
        let at_quota = &many[..LITE_SUBSCRIPTION_QUOTA];
        table
            .apply(&change(Action::CompleteAdd, "c1", at_quota))
            .unwrap();
        let one_more = table.apply(&change(
            Action::PartialAdd,
            "c1",
            &many[LITE_SUBSCRIPTION_QUOTA..],
        ));
        assert_eq!(one_more, Err(Refused::ClientQuota));
        table
            .apply(&change(Action::PartialRemove, "c1", &many[..1]))
            .unwrap();
        assert_eq!(table.total(), LITE_SUBSCRIPTION_QUOTA - 1);
        assert_eq!(
            Refused::ClientQuota.why("broker"),
            "lite subscription quota exceeded 2000"
        );
    }

    /// Fills the table with clients last seen at `at_ms`.
    fn full_table(at_ms: i64) -> LiteSubscriptionTable {
        let mut table = LiteSubscriptionTable::default();
        let set = numbered("t", LITE_SUBSCRIPTION_QUOTA);
        for n in 0..LITE_SUBSCRIPTIONS_MAX / LITE_SUBSCRIPTION_QUOTA {
            let client = format!("c{n}");
            let mut added = change(Action::CompleteAdd, &client, &set);
            added.now_ms = at_ms;
            table.apply(&added).unwrap();
        }
        assert_eq!(table.total(), LITE_SUBSCRIPTIONS_MAX);
        table
    }

    #[test]
    fn idle_clients_give_way_when_the_table_is_full() {
        let mut table = full_table(1_000);
        // c0 pops later: a round is an access.
        assert_eq!(table.round("G", "c0", "P", 1, 60_000).len(), 1);
        let one = names(&["a"]);
        let mut live = change(Action::PartialAdd, "live", &one);
        live.now_ms = 1_000 + LITE_CLIENT_IDLE_MS;
        assert_eq!(table.apply(&live), Err(Refused::Full), "none idle yet");
        assert_eq!(table.take_forgotten(), 0);
        assert_eq!(
            Refused::Full.why("endpoint"),
            "the endpoint holds its maximum of 100000 lite subscriptions"
        );
        // Shrinking is never refused, and a change is an access too.
        let t0 = names(&["t0"]);
        let mut shrink = change(Action::PartialRemove, "c1", &t0);
        shrink.now_ms = live.now_ms;
        table.apply(&shrink).unwrap();
        table.apply(&live).unwrap();
        assert_eq!(table.take_forgotten(), 0, "the freed one made room");
        // A moment later the others have been idle for the expiry.
        let two = names(&["b", "c"]);
        live.lite_topics = &two;
        live.now_ms += 1;
        table.apply(&live).unwrap();
        let idle = LITE_SUBSCRIPTIONS_MAX / LITE_SUBSCRIPTION_QUOTA - 2;
        assert_eq!(table.take_forgotten(), idle * LITE_SUBSCRIPTION_QUOTA);
        assert_eq!(table.take_forgotten(), 0, "told once");
        assert!(table.client(None, "c0").is_some(), "popped since");
        assert!(table.client(None, "c1").is_some(), "changed since");
        assert!(table.client(None, "c2").is_none());
        assert_eq!(table.total(), 2 * LITE_SUBSCRIPTION_QUOTA - 1 + 3);
    }

    #[test]
    fn the_changing_client_is_kept_though_idle() {
        let mut table = full_table(1_000);
        apply(&mut table, Action::PartialRemove, "c0", &["t0"]).unwrap();
        apply(&mut table, Action::PartialAdd, "other", &["a"]).unwrap();
        assert_eq!(table.total(), LITE_SUBSCRIPTIONS_MAX);
        let back = names(&["t0"]);
        let mut grow = change(Action::PartialAdd, "c0", &back);
        grow.now_ms = 1_001 + LITE_CLIENT_IDLE_MS;
        table.apply(&grow).unwrap();
        assert_eq!(
            table.take_forgotten(),
            LITE_SUBSCRIPTIONS_MAX - LITE_SUBSCRIPTION_QUOTA + 1
        );
        let (_, kept) = table.client(Some("G"), "c0").unwrap();
        assert_eq!(kept.lite_topics.len(), LITE_SUBSCRIPTION_QUOTA);
        assert_eq!(kept.last_access_ms, grow.now_ms);
        assert_eq!(table.total(), LITE_SUBSCRIPTION_QUOTA);
    }
}
