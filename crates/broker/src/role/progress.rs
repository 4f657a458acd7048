//! Where this broker's CommitLog ends and how far each replica that copies
//! it over an AutoSwitch HA link has acked: shard 0 (which runs the HA
//! links, `tasks::ha::progress`) publishes it, the supervisor reads it for
//! its heartbeats, its in-sync set and its role changes, in process.

use std::sync::Arc;

use arc_swap::ArcSwapOption;

/// A replica linked to this master by the AutoSwitch HA stream that has
/// reported where its log ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Follower {
    pub broker_id: i64,
    /// Its CommitLog end, as it last reported.
    pub acked: i64,
}

/// One snapshot of the running broker.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Progress {
    /// The CommitLog's written end.
    pub written: i64,
    /// The replicas that follow this broker as master (none on a slave).
    pub followers: Vec<Follower>,
}

/// The newest snapshot; none while no run serves (between runs, before
/// the first publication), so nothing stale is reported after a cut.
#[derive(Debug, Clone, Default)]
pub struct HaProgress(Arc<ArcSwapOption<Progress>>);

impl HaProgress {
    pub fn publish(&self, progress: Progress) {
        self.0.store(Some(Arc::new(progress)));
    }

    pub fn clear(&self) {
        self.0.store(None);
    }

    pub fn get(&self) -> Option<Arc<Progress>> {
        self.0.load_full()
    }

    /// The CommitLog's end, if a run serves.
    pub fn written(&self) -> Option<i64> {
        self.get().map(|p| p.written)
    }
}
