//! A slave's appends: the master's CommitLog bytes, written at exactly the
//! master's offsets, then dispatched to the ConsumeQueues as if the slave
//! had numbered them itself (queue offsets come from the records).
//!
//! A chunk must start where the slave's CommitLog ends. The one exception
//! is an empty CommitLog: a new slave starts at the first chunk the master
//! sends (the start of the master's last segment), so the empty first
//! segment is replaced by one at that offset.

use bytes::BytesMut;
use ferrocket_protocol::properties::tags_code;
use ferrocket_protocol::record::{self, RecordPeek};
use std::sync::Arc;

use super::batch::{per_shard, Appender, Dispatches, Replica, Results};
use crate::config::FlushMode;
use crate::error::StoreError;
use crate::messages::{AppendResult, AppendStatus, DispatchEntry, ReplicaChunk};

impl Appender {
    /// Writes the batch's replica chunks in order, flushes them in sync
    /// flush mode, and answers them with their dispatches.
    pub(super) async fn replicate(&mut self, replicas: Vec<Replica>) {
        let mut results: Results = per_shard(self.shard_count());
        let mut dispatches: Dispatches = per_shard(self.shard_count());
        let mut written = Vec::with_capacity(replicas.len());
        for replica in replicas {
            let outcome = match self.common.failure() {
                Some(error) => Err(error),
                None => self.write_chunk(replica.chunk, &mut dispatches).await,
            };
            match outcome {
                Ok(result) => written.push((replica.shard, replica.seq, result)),
                Err(error) => results[replica.shard].push((replica.seq, Err(error))),
            }
        }
        if written.is_empty() {
            self.answer(results, Vec::new(), None).await;
            return;
        }
        let end = self.pos;
        self.common.shared.publish_written(end);
        if let FlushMode::Sync { .. } = self.config.flush_mode {
            let file = std::rc::Rc::clone(&self.writer.current().file);
            if let Err(e) = file.sync_data().await {
                let reason = format!("fdatasync: {e}");
                self.common.fail(reason.clone());
                for (shard, seq, _) in written {
                    results[shard].push((seq, Err(StoreError::FlushFailed(reason.clone()))));
                }
                self.answer(results, Vec::new(), None).await;
                return;
            }
            self.common.shared.publish_durable(end);
        }
        for (shard, seq, result) in written {
            results[shard].push((seq, Ok(result)));
        }
        self.answer(results, dispatches, Some(end)).await;
    }

    /// Writes one chunk at the CommitLog's end and queues its dispatches;
    /// a chunk that ends its segment rolls to the next one.
    async fn write_chunk(
        &mut self,
        chunk: ReplicaChunk,
        dispatches: &mut Dispatches,
    ) -> Result<AppendResult, StoreError> {
        if chunk.start != self.pos && self.is_empty_log() {
            self.rebase(chunk.start).await?;
        }
        if chunk.start != self.pos {
            return Err(StoreError::InvalidRecord(format!(
                "replica chunk starts at {}, the CommitLog ends at {}",
                chunk.start, self.pos
            )));
        }
        let start = chunk.start;
        let end = start + chunk.bytes.len() as i64;
        let segment_end = self.writer.segment_start() + self.seg_bytes;
        assert!(
            end <= segment_end,
            "validated: a chunk stays in its segment"
        );
        // Before anything changes: the disk may have no room for it.
        let next = match end == segment_end {
            true => Some(self.writer.create_next().await?),
            false => None,
        };
        let count = self.number_replica(&chunk.bytes, start, dispatches)?;
        assert!(end > start, "validated: a chunk is not empty");
        self.pos = end;
        let outcome = match next {
            Some(next) => self.writer.roll(start, chunk.bytes.freeze(), next).await,
            None => self.writer.write(start, chunk.bytes.freeze()).await,
        };
        if let Err(error) = outcome {
            self.common.fail(error.to_string());
            return Err(error);
        }
        Ok(AppendResult {
            physical_offset: start,
            queue_offset: -1,
            record_count: count as u32,
            total_bytes: (end - start) as u32,
            status: AppendStatus::Ok,
        })
    }

    /// Nothing was ever written: the first segment is empty.
    fn is_empty_log(&self) -> bool {
        self.pos == self.writer.segment_start()
            && self.common.shared.written() == self.pos
            && self.common.shared.segment_list().len() == 1
    }

    /// Moves an empty CommitLog to `start`, a segment boundary.
    async fn rebase(&mut self, start: i64) -> Result<(), StoreError> {
        if start.rem_euclid(self.seg_bytes) != 0 || start < self.pos {
            return Err(StoreError::InvalidRecord(format!(
                "a new slave's first chunk must start a segment, not {start}"
            )));
        }
        tracing::info!(
            from = self.pos,
            to = start,
            "empty CommitLog starts at the master's offset"
        );
        self.writer.restart_at(start).await?;
        assert_eq!(
            self.writer.segment_start(),
            start,
            "the log restarts at a segment"
        );
        self.common.shared.publish_written(start);
        self.common.shared.publish_durable(start);
        self.common.dispatched_upto.set(start);
        self.pos = start;
        debug_assert!(self.is_empty_log(), "a rebased log is empty");
        Ok(())
    }

    /// Checks each message record's stored physical offset against where it
    /// lands and queues its dispatch; returns the message count.
    fn number_replica(
        &mut self,
        bytes: &BytesMut,
        start: i64,
        dispatches: &mut Dispatches,
    ) -> Result<usize, StoreError> {
        let mut at = 0;
        let mut count = 0;
        while at < bytes.len() {
            let rest = &bytes[at..];
            let size = match record::peek_record(rest) {
                Ok(RecordPeek::Message { total_size, .. }) => total_size,
                // Validated: the blank is last and ends the segment.
                Ok(RecordPeek::Blank { .. }) => break,
                other => unreachable!("validated chunk holds {other:?} at {at}"),
            };
            let view = record::decode_record(&rest[..size], false).map_err(|e| {
                StoreError::InvalidRecord(format!("replica record at {}: {e}", start + at as i64))
            })?;
            let position = start + at as i64;
            if view.physical_offset != position {
                return Err(StoreError::InvalidRecord(format!(
                    "replica record at {position} says it was stored at {}",
                    view.physical_offset
                )));
            }
            let topic = self.intern(view.topic);
            let owner = (self.owner)(&topic, view.queue_id);
            let next = self
                .table
                .entry((Arc::clone(&topic), view.queue_id))
                .or_insert(0);
            *next = view.queue_offset + 1;
            let tags = view
                .properties()
                .tags()
                .filter(|t| !t.is_empty())
                .map_or(0, tags_code);
            dispatches[owner].push(DispatchEntry {
                topic,
                queue_id: view.queue_id,
                queue_offset: view.queue_offset,
                physical_offset: position,
                size: size as i32,
                tags_code: tags,
                store_timestamp_ms: view.store_timestamp_ms,
            });
            at += size;
            count += 1;
        }
        Ok(count)
    }
}
