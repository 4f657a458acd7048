//! The broker's lite subscriptions (RocketMQ 5.5), as a proxy in cluster
//! mode keeps them here with LITE_SUBSCRIPTION_CTL: per consumer group and
//! client, the parent topic it binds and its lite topics. POP_LITE_MESSAGE
//! pops a client's lite topics in turns from this set. Kept in memory, as
//! Java's `LiteSubscriptionRegistry` is: a proxy sends a client's whole set
//! again (COMPLETE_ADD) when it reconnects. The rules (quotas, idle
//! clients) are the table's the gRPC endpoint keeps too. `Send + Sync`:
//! every shard reads and writes the one set.

use std::sync::{Mutex, MutexGuard};

use ferrocket_protocol::lite::subscriptions::LiteSubscriptionTable;
pub use ferrocket_protocol::lite::subscriptions::{Action, Change, Entry, Refused, Summary};

/// Every client's lite subscriptions.
#[derive(Default)]
pub struct LiteRegistry {
    table: Mutex<LiteSubscriptionTable>,
}

impl LiteRegistry {
    fn lock(&self) -> MutexGuard<'_, LiteSubscriptionTable> {
        self.table.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Applies one change: adds, removes or replaces the client's set.
    pub fn apply(&self, change: &Change<'_>) -> Result<(), Refused> {
        let mut table = self.lock();
        let applied = table.apply(change);
        let forgotten = table.take_forgotten();
        if forgotten > 0 {
            tracing::info!(
                lite_topics = forgotten,
                "forgot lite subscriptions of idle clients"
            );
        }
        applied
    }

    /// Forgets every subscription of `client` (COMPLETE_REMOVE: in every group).
    pub fn remove_client(&self, client: &str) {
        self.lock().remove_client(client);
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
        self.lock().round(group, client, topic, count, now_ms)
    }

    /// The client's entry in `group`, or in any group when none is given.
    pub fn client(&self, group: Option<&str>, client: &str) -> Option<(String, Entry)> {
        self.lock().client(group, client)
    }

    /// (group, client) of every subscriber of `lite` in parent `topic`.
    pub fn subscribers(&self, topic: &str, lite: &str) -> Vec<(String, String)> {
        self.lock().subscribers(topic, lite)
    }

    /// Per parent topic, how many lite topics are subscribed; per group,
    /// the parent topics it binds; and the subscriptions in all.
    pub fn summary(&self) -> Summary {
        self.lock().summary()
    }
}
