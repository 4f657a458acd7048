//! Cutting the CommitLog back while the store is closed: a replica in
//! controller mode whose log runs past the point where it agrees with its
//! new master (the fork point of the epoch lists) drops the rest before it
//! follows that master. The bytes from the cut to the end of its segment
//! are zeroed and later segments deleted; the checkpoint is lowered to the
//! cut, so the next open starts its scan there (or at the cut's segment),
//! finds the log's end at the cut, and brings the ConsumeQueues (and,
//! through the broker, the index and timer log) in line with it, as after
//! a torn tail.

use std::fs::{self, OpenOptions};

use crate::checkpoint::StoreCheckpoint;
use crate::config::StoreConfig;
use crate::error::{IoContext, StoreError};
use crate::files::{list_offset_files, zero_range};

/// The CommitLog's valid end, found by the same recovery an open runs (it
/// cuts a torn tail as an open would).
pub fn commitlog_end(config: &StoreConfig) -> Result<i64, StoreError> {
    Ok(crate::recovery::recover(config)?.end)
}

/// Cuts the CommitLog at `offset`, which must be a record boundary (an
/// epoch's start or end): everything from it on is gone after this returns.
/// The tier's manifest forgets the remote copies past it. Returns how many bytes were dropped (0 when the log ends at or before
/// `offset`).
pub fn truncate_commitlog(config: &StoreConfig, offset: i64) -> Result<i64, StoreError> {
    assert!(offset >= 0, "a cut below zero");
    let end = commitlog_end(config)?;
    if end <= offset {
        return Ok(0);
    }
    // First, durably: the remote copies of what is cut (a crash after this
    // re-uploads segments still local; none is read stale).
    crate::tier::forget_past(&config.root_dir, config.segment_bytes, offset)?;
    let seg = config.segment_bytes as i64;
    for (start, path) in list_offset_files(&config.commitlog_dir())? {
        if start + seg <= offset {
            continue;
        }
        if start >= offset {
            fs::remove_file(&path).io_context("delete segment", &path)?;
            continue;
        }
        let file = OpenOptions::new()
            .write(true)
            .open(&path)
            .io_context("open segment", &path)?;
        zero_range(&file, &path, (offset - start) as u64, seg as u64)?;
        file.sync_all().io_context("sync segment", &path)?;
    }
    lower_checkpoint(config, offset)?;
    tracing::warn!(offset, end, "CommitLog cut back to the fork point");
    assert!(end > offset, "a cut drops bytes");
    Ok(end - offset)
}

/// Lowers the checkpoint to `offset`: the recovery `commitlog_end` ran
/// left everything below the old one indexed and flushed, so below the cut
/// too. Without a checkpoint the next open scans the whole log.
fn lower_checkpoint(config: &StoreConfig, offset: i64) -> Result<(), StoreError> {
    let path = config.checkpoint_path();
    let Some(mut checkpoint) = StoreCheckpoint::load(&path)? else {
        return Ok(());
    };
    checkpoint.commitlog_flushed = checkpoint.commitlog_flushed.min(offset);
    checkpoint.consumequeue_flushed = checkpoint.consumequeue_flushed.min(offset);
    assert!(
        checkpoint.commitlog_flushed <= offset,
        "the checkpoint claims no cut bytes"
    );
    assert!(
        checkpoint.consumequeue_flushed <= offset,
        "the checkpoint claims no cut entries"
    );
    checkpoint.store(&path)
}
