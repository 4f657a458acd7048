//! Applying the appender's dispatches to this shard's ConsumeQueues, in
//! CommitLog order. A dispatch that finds no disk space for its queue file
//! is deferred, with every later one behind it (order is kept across
//! queues), and retried with the next batch and every ConsumeQueue flush
//! tick; the store is marked disk full meanwhile, so appends stop and the
//! backlog is bounded. Dispatches of records past the dispatch gate
//! (controller mode's confirm offset) wait the same way until it moves.
//! `applied` (what the checkpoint may claim) stops at the first deferred
//! record, so a crash re-dispatches it in recovery.

use super::{Listener, ShardInner};
use crate::consume_queue::CqEntry;
use crate::error::StoreError;
use crate::messages::DispatchEntry;

impl ShardInner {
    /// Applies a batch's dispatches in order, behind any deferred ones.
    pub(super) fn dispatch_batch(
        &self,
        dispatches: &[DispatchEntry],
        replica: bool,
        watermark: i64,
        written: i64,
    ) {
        self.retry_deferred();
        let listener = self.listener.borrow().clone();
        for entry in dispatches {
            self.check_dispatch(entry, written);
            if !self.deferred.borrow().is_empty() || self.gated(entry) {
                self.deferred
                    .borrow_mut()
                    .push_back((entry.clone(), replica));
                continue;
            }
            if let Err(e) = self.dispatch_one(entry, replica, listener.as_ref()) {
                self.dispatch_failed(entry, replica, &e);
            }
        }
        if watermark > self.watermark.get() {
            self.watermark.set(watermark);
        }
        self.advance_applied();
    }

    /// The record ends past the dispatch gate.
    fn gated(&self, entry: &DispatchEntry) -> bool {
        entry.physical_offset + i64::from(entry.size) > self.gate.get()
    }

    /// Retries the deferred dispatches in order, up to the first that still
    /// finds no room or waits behind the gate.
    pub(super) fn retry_deferred(&self) {
        if self.deferred.borrow().is_empty() {
            return;
        }
        let listener = self.listener.borrow().clone();
        loop {
            let Some((entry, replica)) = self.deferred.borrow().front().cloned() else {
                break;
            };
            if self.gated(&entry) {
                break;
            }
            match self.dispatch_one(&entry, replica, listener.as_ref()) {
                Err(e) if e.is_disk_full() => break,
                Err(e) => self.dispatch_broken(&entry, &e),
                Ok(()) => {}
            }
            self.deferred.borrow_mut().pop_front();
        }
        if self.deferred.borrow().is_empty() && self.disk_deferred.replace(false) {
            tracing::info!(
                shard = self.shard_id,
                "deferred ConsumeQueue dispatches applied"
            );
        }
        self.advance_applied();
    }

    fn dispatch_failed(&self, entry: &DispatchEntry, replica: bool, error: &StoreError) {
        if !error.is_disk_full() {
            self.dispatch_broken(entry, error);
            return;
        }
        tracing::warn!(shard = self.shard_id, %error, topic = %entry.topic,
            queue_id = entry.queue_id, "no disk space for a ConsumeQueue entry; deferring dispatches");
        self.ctx.shared.disk.mark_full(&error.to_string());
        self.disk_deferred.set(true);
        self.deferred
            .borrow_mut()
            .push_back((entry.clone(), replica));
    }

    fn dispatch_broken(&self, entry: &DispatchEntry, error: &StoreError) {
        tracing::error!(%error, topic = %entry.topic, queue_id = entry.queue_id,
            "ConsumeQueue dispatch failed");
        self.cq_broken.set(true);
    }

    /// `applied` moves to the latest watermark, or to the first deferred
    /// record while any is deferred (every dispatch below it is applied).
    fn advance_applied(&self) {
        let watermark = self.watermark.get();
        let before = self.applied.get();
        assert!(
            before <= watermark,
            "applied {before} past the watermark {watermark}"
        );
        let upto = match self.deferred.borrow().front() {
            Some((entry, _)) => entry.physical_offset.min(watermark),
            None => watermark,
        };
        if upto > before {
            self.applied.set(upto);
        }
        debug_assert!(self.applied.get() >= before, "applied went back");
    }

    /// One dispatch: into its queue, then the broker's listener.
    fn dispatch_one(
        &self,
        entry: &DispatchEntry,
        replica: bool,
        listener: Option<&Listener>,
    ) -> Result<(), StoreError> {
        if self.is_stale_dispatch(entry) {
            return Ok(());
        }
        if replica {
            self.prepare_replica_queue(entry);
        }
        self.dispatch(entry)?;
        if let Some(listener) = listener {
            listener(entry);
        }
        Ok(())
    }

    /// What holds for every dispatch by construction: it is for a queue of
    /// this shard, and it points at one whole record below the written end
    /// (`written`, published before the dispatch was sent), within one
    /// segment (records never span segments).
    pub(super) fn check_dispatch(&self, entry: &DispatchEntry, written: i64) {
        debug_assert_eq!(
            (self.ctx.owner)(&entry.topic, entry.queue_id),
            self.shard_id
        );
        let end = entry.physical_offset + i64::from(entry.size);
        assert!(
            entry.physical_offset >= 0 && entry.size > 0,
            "dispatch of no record: {entry:?}"
        );
        assert!(
            end <= written,
            "dispatch beyond the written end {written}: {entry:?}"
        );
        let segment_bytes = self.ctx.shared.segment_bytes as i64;
        assert_eq!(
            entry.physical_offset / segment_bytes,
            (end - 1) / segment_bytes,
            "dispatch of a record across segments: {entry:?}"
        );
    }

    /// A slave's queue follows the master's numbering: a queue the slave
    /// never saw starts at the master's offset (a slave that began at the
    /// master's last segment), and one the master restarted at 0 (it
    /// deleted the topic) restarts here too.
    fn prepare_replica_queue(&self, entry: &DispatchEntry) {
        let Ok(queue) = self.queue(&entry.topic, entry.queue_id) else {
            return;
        };
        let max = queue.max_offset();
        if max == entry.queue_offset || (entry.queue_offset < max && entry.queue_offset != 0) {
            // In step, or a dispatch behind the queue, which `dispatch` refuses.
            return;
        }
        if queue.last_entry().is_some() {
            tracing::warn!(
                topic = %entry.topic,
                queue_id = entry.queue_id,
                from = max,
                to = entry.queue_offset,
                "the master renumbered this queue; the slave's copy restarts"
            );
        }
        if let Err(e) = self.drop_queue(&entry.topic, entry.queue_id) {
            tracing::error!(error = %e, "cannot restart a replica queue");
            return;
        }
        if let Ok(queue) = self.queue(&entry.topic, entry.queue_id) {
            if entry.queue_offset > 0 {
                queue.begin_at(entry.queue_offset);
            }
        }
    }

    /// Destroys one queue's ConsumeQueue; the next use opens it empty.
    fn drop_queue(&self, topic: &str, queue_id: i32) -> Result<(), StoreError> {
        let queue = self
            .queues
            .borrow_mut()
            .get_mut(topic)
            .and_then(|ids| ids.remove(&queue_id));
        match queue {
            Some(queue) => queue.destroy(),
            None => Ok(()),
        }
    }

    /// Adds a dispatched entry to its ConsumeQueue.
    fn dispatch(&self, entry: &DispatchEntry) -> Result<(), StoreError> {
        let queue = self.queue(&entry.topic, entry.queue_id)?;
        // Dense: the appender numbers a queue's records one after another
        // from where recovery (or a reset) left the queue, and a deleted
        // queue's stale dispatches never get here. Only an earlier failed
        // ConsumeQueue write can have left this queue behind.
        assert!(
            self.cq_broken.get() || entry.queue_offset == queue.max_offset(),
            "dispatch of queue offset {} to {}/{} whose next offset is {}",
            entry.queue_offset,
            entry.topic,
            entry.queue_id,
            queue.max_offset()
        );
        queue.append(
            entry.queue_offset,
            CqEntry {
                physical_offset: entry.physical_offset,
                size: entry.size,
                tags_code: entry.tags_code,
            },
        )
    }
}
