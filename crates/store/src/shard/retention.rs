//! The ConsumeQueue half of retention (`CleanConsumeQueueService`) and topic
//! deletion, on each shard for the queues it owns (single writer kept).
//!
//! Every `clean_interval_ms` the shard lets go of deleted CommitLog
//! segments (refreshes its cached segment list) and, when the CommitLog's
//! start moved since its last pass, drops the files of its queues whose
//! entries all point below it and moves their min offsets up.

use std::collections::{HashMap, HashSet};
use std::fs;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use super::{ShardInner, ShardStore};
use crate::error::{IoContext, IoFailure, StoreError};
use crate::messages::{DispatchEntry, Envelope, ResetDone};

/// Per-shard retention state.
#[derive(Default)]
pub(super) struct ShardRetention {
    /// CommitLog start at the last completed pass.
    pub(super) cleaned_min: std::cell::Cell<i64>,
    /// Deleted topics whose old dispatches may still arrive.
    pub(super) deleted: std::cell::RefCell<HashMap<Arc<str>, DeletedTopic>>,
    pub(super) stop: crate::stop::Stop,
    pub(super) task: std::cell::RefCell<Option<glommio::Task<()>>>,
}

/// A topic this shard deleted, until its old dispatches can no longer come.
#[derive(Default)]
pub(super) struct DeletedTopic {
    /// Resets sent to the appender and not yet answered.
    unanswered: u32,
    /// Where the last reset took effect, once every reset is answered:
    /// the topic's dispatches from here on are the new queues'.
    from: Option<i64>,
}

impl ShardInner {
    /// Starts the periodic pass on the current executor.
    pub(super) fn start_retention(self: &Rc<Self>) {
        let inner = Rc::clone(self);
        let task = glommio::spawn_local(async move {
            let interval = Duration::from_millis(inner.ctx.config.retention.clean_interval_ms);
            while !inner.retention.stop.sleep(interval).await {
                if let Err(e) = inner.retention_pass() {
                    tracing::error!(shard = inner.shard_id, error = %e, "ConsumeQueue retention failed");
                }
                if let Err(e) = inner.topic_retention_pass(crate::topic_retention::now_ms()) {
                    tracing::error!(shard = inner.shard_id, error = %e, "retention per topic failed");
                }
            }
        });
        *self.retention.task.borrow_mut() = Some(task);
    }

    /// Stops the periodic pass and waits for it.
    pub(super) async fn stop_retention(&self) {
        self.retention.stop.stop();
        let task = self.retention.task.borrow_mut().take();
        if let Some(task) = task {
            task.await;
        }
    }

    /// One pass; returns the ConsumeQueue files deleted.
    pub(super) fn retention_pass(&self) -> Result<usize, StoreError> {
        self.reader.refresh();
        self.forget_finished_resets();
        let commitlog_min = self.ctx.shared.logical_min();
        if commitlog_min <= self.retention.cleaned_min.get() {
            return Ok(0);
        }
        let mut deleted = 0;
        for (topic, queue_id) in self.owned_queues_on_disk()? {
            if self.retention.deleted.borrow().contains_key(topic.as_str()) {
                continue;
            }
            let queue = self.queue(&topic, queue_id)?;
            deleted += queue.delete_below(commitlog_min)?;
        }
        // Queues opened but without files yet need nothing.
        self.retention.cleaned_min.set(commitlog_min);
        if deleted > 0 {
            tracing::info!(
                shard = self.shard_id,
                deleted,
                commitlog_min,
                "ConsumeQueue retention deleted files"
            );
        }
        Ok(deleted)
    }

    /// `(topic, queue id)` of every queue directory this shard owns.
    pub(super) fn owned_queues_on_disk(&self) -> Result<Vec<(String, i32)>, StoreError> {
        let root = self.ctx.config.consumequeue_dir();
        let mut out = Vec::new();
        let topics = match fs::read_dir(&root) {
            Ok(topics) => topics,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out),
            Err(e) => return Err(IoFailure::new("list dir", &root, e).into()),
        };
        for topic in topics {
            let topic = topic.io_context("list dir", &root)?;
            let Some(name) = topic.file_name().to_str().map(str::to_owned) else {
                continue;
            };
            let Ok(ids) = fs::read_dir(topic.path()) else {
                continue;
            };
            for id in ids.flatten() {
                let Some(queue_id) = id.file_name().to_str().and_then(|s| s.parse::<i32>().ok())
                else {
                    continue;
                };
                if (self.ctx.owner)(&name, queue_id) == self.shard_id {
                    out.push((name.clone(), queue_id));
                }
            }
        }
        Ok(out)
    }

    /// Deletes this shard's ConsumeQueues of `topic` (open or only on disk)
    /// and has the appender restart their offsets at 0. Returns how many
    /// queues went.
    pub(super) fn delete_topic(&self, topic: &str) -> Result<usize, StoreError> {
        let mut ids: HashSet<i32> = self
            .owned_queues_on_disk()?
            .into_iter()
            .filter(|(name, _)| name == topic)
            .map(|(_, id)| id)
            .collect();
        self.topic_retention.forget_topic(topic);
        let opened = self.queues.borrow_mut().remove(topic);
        if let Some(opened) = &opened {
            ids.extend(opened.keys().copied());
        }
        for queue_id in &ids {
            let queue = opened
                .as_ref()
                .and_then(|queues| queues.get(queue_id))
                .map(Rc::clone);
            match queue {
                Some(queue) => queue.destroy()?,
                None => {
                    let dir =
                        super::queue_dir(&self.ctx.config.consumequeue_dir(), topic, *queue_id)?;
                    match fs::remove_dir_all(&dir) {
                        Ok(()) => {}
                        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                        Err(e) => {
                            return Err(IoFailure::new("remove ConsumeQueue dir", &dir, e).into())
                        }
                    }
                }
            }
        }
        // Other shards may still hold queue dirs of the topic: only an
        // empty topic dir goes.
        let _ = fs::remove_dir(crate::names::topic_dir(
            &self.ctx.config.consumequeue_dir(),
            topic,
        )?);
        let topic: Arc<str> = Arc::from(topic);
        let mut deleted = self.retention.deleted.borrow_mut();
        let marker = deleted.entry(Arc::clone(&topic)).or_default();
        marker.unanswered += 1;
        marker.from = None;
        drop(deleted);
        self.outbox.post(Envelope::ResetTopic { topic });
        Ok(ids.len())
    }

    /// The appender applied a reset this shard asked for.
    pub(super) fn reset_done(&self, done: &ResetDone) {
        let mut deleted = self.retention.deleted.borrow_mut();
        // A marker stays while its resets are unanswered (`from` is None).
        let Some(marker) = deleted.get_mut(&done.topic) else {
            panic!("reset of {} answered, but none was asked for", done.topic);
        };
        assert!(
            marker.unanswered > 0,
            "a reset of {} answered twice",
            done.topic
        );
        marker.unanswered -= 1;
        if marker.unanswered == 0 {
            marker.from = Some(done.position);
        }
    }

    /// True when `entry` belongs to a deleted topic and was numbered before
    /// its offsets were reset: it must not enter the new, empty queue.
    pub(super) fn is_stale_dispatch(&self, entry: &DispatchEntry) -> bool {
        let mut deleted = self.retention.deleted.borrow_mut();
        let Some(marker) = deleted.get(&*entry.topic) else {
            return false;
        };
        match marker.from {
            Some(from) if entry.physical_offset >= from => {
                // Dispatches come in CommitLog order: all later ones are new.
                deleted.remove(&*entry.topic);
                false
            }
            _ => true,
        }
    }

    /// Drops deleted-topic markers once every older dispatch has arrived.
    fn forget_finished_resets(&self) {
        let applied = self.applied.get();
        self.retention
            .deleted
            .borrow_mut()
            .retain(|_, marker| !marker.from.is_some_and(|from| applied >= from));
    }
}

impl ShardStore {
    /// DELETE_TOPIC_IN_BROKER: deletes the ConsumeQueues of `topic` that
    /// this shard owns (their files and directories) and restarts their
    /// offsets at 0, so a topic re-created with the name starts empty.
    /// Call it on every shard. The CommitLog records age out by retention.
    pub fn delete_topic_queues(&self, topic: &str) -> Result<usize, StoreError> {
        self.inner.delete_topic(topic)
    }

    /// Runs this shard's ConsumeQueue retention pass now (it also runs every
    /// `cleanResourceInterval`); returns the files deleted.
    pub fn run_queue_retention(&self) -> Result<usize, StoreError> {
        self.inner.retention_pass()
    }
}
