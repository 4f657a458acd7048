//! A shard's named background tasks (Iggy's task registry): each loop is
//! spawned under a name, and at shutdown [`TaskSet::join`] waits for them
//! all, bounded, and names any that did not end in time instead of hanging
//! the shutdown.

use std::cell::RefCell;
use std::future::Future;
use std::time::Duration;

use futures_lite::future;
use glommio::Task;

/// The background tasks of one executor.
#[derive(Default)]
pub struct TaskSet {
    tasks: RefCell<Vec<(&'static str, Task<()>)>>,
}

impl TaskSet {
    pub fn new() -> Self {
        Self::default()
    }

    /// Starts `work` on this executor under `name`. The task must end by
    /// itself once its executor starts stopping (a `StopSignal`).
    pub fn spawn(&self, name: &'static str, work: impl Future<Output = ()> + 'static) {
        assert!(!name.is_empty(), "a background task needs a name");
        let task = glommio::spawn_local(work);
        self.tasks.borrow_mut().push((name, task));
    }

    /// How many tasks were started and not yet joined.
    pub fn len(&self) -> usize {
        self.tasks.borrow().len()
    }

    pub fn is_empty(&self) -> bool {
        self.tasks.borrow().is_empty()
    }

    /// Waits for every task, in start order, for at most `deadline` in all.
    /// Answers the names of the tasks still running at the deadline (they
    /// are cancelled when dropped).
    pub async fn join(&self, deadline: Duration) -> Vec<&'static str> {
        let tasks = std::mem::take(&mut *self.tasks.borrow_mut());
        let started = std::time::Instant::now();
        let mut late = Vec::new();
        for (name, task) in tasks {
            let left = deadline.saturating_sub(started.elapsed());
            let ended = future::or(
                async {
                    task.await;
                    true
                },
                async {
                    glommio::timer::sleep(left).await;
                    false
                },
            )
            .await;
            if !ended {
                late.push(name);
            }
        }
        late
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sync::StopSignal;

    #[test]
    fn join_waits_for_stopping_tasks_and_names_the_late_ones() {
        glommio::LocalExecutor::default().run(async {
            let stop = StopSignal::new();
            let set = TaskSet::new();
            let waiting = stop.clone();
            set.spawn("obedient", async move { waiting.wait().await });
            set.spawn("stubborn", glommio::timer::sleep(Duration::from_secs(60)));
            assert_eq!(set.len(), 2);
            stop.trigger();
            let late = set.join(Duration::from_millis(100)).await;
            assert_eq!(late, vec!["stubborn"]);
            assert!(set.is_empty());
        });
    }
}
