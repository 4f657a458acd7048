//! Where this broker's CommitLog ends and how far each replica that copies
//! it over an AutoSwitch HA link has acked: shard 0 (which runs the HA
//! links, `tasks::ha::progress`) publishes it, the supervisor reads it for
//! its heartbeats, its in-sync set and its role changes, in process.

use std::sync::Arc;
use std::time::{Duration, Instant};

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

/// One published snapshot and when it was published.
#[derive(Debug)]
struct Stamped {
    at: Instant,
    progress: Arc<Progress>,
}

/// The newest snapshot; none while no run serves (between runs, before
/// the first publication), so nothing stale is reported after a cut.
#[derive(Debug, Clone, Default)]
pub struct HaProgress(Arc<ArcSwapOption<Stamped>>);

impl HaProgress {
    pub fn publish(&self, progress: Progress) {
        let at = Instant::now();
        let progress = Arc::new(progress);
        self.0.store(Some(Arc::new(Stamped { at, progress })));
    }

    pub fn clear(&self) {
        self.0.store(None);
    }

    pub fn get(&self) -> Option<Arc<Progress>> {
        self.0.load_full().map(|s| Arc::clone(&s.progress))
    }

    /// The newest snapshot if published within `max_age`: a shard 0 that
    /// stalled (or a run that ended without withdrawing it) must not keep
    /// a replica that stopped copying counted as caught up.
    pub fn fresh(&self, max_age: Duration) -> Option<Arc<Progress>> {
        let stamped = self.0.load_full()?;
        (stamped.at.elapsed() <= max_age).then(|| Arc::clone(&stamped.progress))
    }

    /// The CommitLog's end, if a run serves.
    pub fn written(&self) -> Option<i64> {
        self.get().map(|p| p.written)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_snapshot_older_than_the_limit_is_not_fresh() {
        let progress = HaProgress::default();
        assert!(progress.fresh(Duration::from_secs(1)).is_none());
        progress.publish(Progress {
            written: 42,
            followers: vec![],
        });
        assert_eq!(
            progress.fresh(Duration::from_secs(60)).map(|p| p.written),
            Some(42)
        );
        std::thread::sleep(Duration::from_millis(20));
        assert!(progress.fresh(Duration::from_millis(10)).is_none());
        assert_eq!(progress.written(), Some(42));
        progress.clear();
        assert!(progress.get().is_none());
    }
}
