//! Leader epochs of the CommitLog, for controller mode (RocketMQ's
//! `EpochFileCache` and `EpochEntry`).
//!
//! Each time the controller elects a master it raises the broker set's
//! master epoch; the new master records `(epoch, start offset)`: the
//! CommitLog position where its epoch's bytes begin. An epoch ends where the
//! next one starts, and the newest ends at the CommitLog's end. A slave that
//! reconnects compares its list with the master's to find where their logs
//! forked ([`fork_point`]) and cuts its CommitLog there before copying
//! again, so a returning old master drops the tail the new master never had.
//!
//! The list lives in memory ([`EpochCache`]) and, after every change, in the
//! `epochFileCheckpoint` file ([`file`]).

pub mod file;

use thiserror::Error;

pub use ferrocket_protocol::ha::autoswitch::EpochEntry;

/// Why a change to the epoch list was refused.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum EpochError {
    /// Epochs and start offsets must both grow (Java refuses the same).
    #[error("epoch entry {new:?} does not come after the last one {last:?}")]
    NotAfterLast { last: EpochEntry, new: EpochEntry },
    #[error("epoch entry {0:?} has a negative epoch or start offset")]
    Negative(EpochEntry),
}

/// Where a slave's log and its master's agree, from their epoch lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ForkPoint {
    /// The slave has no epochs (a new replica): it copies from the start and
    /// cuts nothing.
    NoLocalEpochs,
    /// Both logs hold the same bytes below this CommitLog position: the
    /// slave truncates here and copies from here.
    At(i64),
    /// No epoch of the slave's starts where the master's does: nothing can
    /// be trusted. Java waits and tries again; so does the caller.
    NoCommonEpoch,
}

/// The epoch list, oldest first. Invariant: epochs and start offsets both
/// strictly increase, and none is negative.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EpochCache {
    entries: Vec<EpochEntry>,
}

impl EpochCache {
    pub fn new() -> Self {
        Self::default()
    }

    /// A list from entries in order (a file's, or a master's handshake).
    pub fn from_entries(entries: &[EpochEntry]) -> Result<Self, EpochError> {
        let mut cache = Self::new();
        for entry in entries {
            cache.append(*entry)?;
        }
        Ok(cache)
    }

    pub fn entries(&self) -> &[EpochEntry] {
        &self.entries
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn first(&self) -> Option<EpochEntry> {
        self.entries.first().copied()
    }

    pub fn last(&self) -> Option<EpochEntry> {
        self.entries.last().copied()
    }

    /// The newest epoch, -1 when there is none (`lastEpoch`).
    pub fn last_epoch(&self) -> i32 {
        self.last().map_or(-1, |entry| entry.epoch)
    }

    /// The entry of `epoch`, if recorded.
    pub fn get(&self, epoch: i32) -> Option<EpochEntry> {
        self.position(epoch).map(|index| self.entries[index])
    }

    fn position(&self, epoch: i32) -> Option<usize> {
        self.entries
            .binary_search_by_key(&epoch, |entry| entry.epoch)
            .ok()
    }

    /// Where the entry at `index` ends: the next one's start, or `end` (the
    /// CommitLog's end) for the newest.
    fn end_of(&self, index: usize, end: i64) -> i64 {
        self.entries
            .get(index + 1)
            .map_or(end, |next| next.start_offset)
    }

    /// The first entry after `epoch` (`nextEntry`).
    pub fn next_after(&self, epoch: i32) -> Option<EpochEntry> {
        self.entries
            .iter()
            .find(|entry| entry.epoch > epoch)
            .copied()
    }

    /// The epoch whose bytes hold CommitLog position `offset`, given the
    /// CommitLog's `end` (`findEpochEntryByOffset`).
    pub fn entry_at(&self, offset: i64, end: i64) -> Option<EpochEntry> {
        (0..self.entries.len())
            .find(|&index| {
                self.entries[index].start_offset <= offset && offset < self.end_of(index, end)
            })
            .map(|index| self.entries[index])
    }

    /// Records a new epoch. Refused unless both its epoch and its start come
    /// after the newest entry's (`appendEntry`).
    pub fn append(&mut self, entry: EpochEntry) -> Result<(), EpochError> {
        if entry.epoch < 0 || entry.start_offset < 0 {
            return Err(EpochError::Negative(entry));
        }
        if let Some(last) = self.last() {
            if last.epoch >= entry.epoch || last.start_offset >= entry.start_offset {
                return Err(EpochError::NotAfterLast { last, new: entry });
            }
        }
        self.entries.push(entry);
        assert_eq!(self.last(), Some(entry), "the new epoch is the newest");
        self.assert_ordered();
        Ok(())
    }

    /// Drops every entry of epoch `epoch` or newer (`truncateSuffixByEpoch`).
    pub fn truncate_from_epoch(&mut self, epoch: i32) {
        let before = self.entries.len();
        self.entries.retain(|entry| entry.epoch < epoch);
        assert!(self.entries.len() <= before, "a truncation only drops");
        assert!(
            self.last().map_or(true, |last| last.epoch < epoch),
            "no entry of epoch {epoch} or newer stays"
        );
    }

    /// Drops every entry starting at `offset` or later
    /// (`truncateSuffixByOffset`): after the CommitLog was cut there.
    pub fn truncate_from_offset(&mut self, offset: i64) {
        let before = self.entries.len();
        self.entries.retain(|entry| entry.start_offset < offset);
        assert!(self.entries.len() <= before, "a truncation only drops");
        assert!(
            self.last().map_or(true, |last| last.start_offset < offset),
            "no entry starting at {offset} or later stays"
        );
    }

    /// Drops every entry that ends at or before `offset`, and moves the
    /// first survivor's start up to `offset` when it began earlier
    /// (`truncatePrefixByOffset`): after retention deleted the CommitLog
    /// below `offset`. `end` is the CommitLog's end.
    pub fn truncate_before_offset(&mut self, offset: i64, end: i64) {
        let keep_from = (0..self.entries.len())
            .find(|&index| self.end_of(index, end) > offset)
            .unwrap_or(self.entries.len());
        self.entries.drain(..keep_from);
        if let Some(first) = self.entries.first_mut() {
            if first.start_offset < offset {
                first.start_offset = offset;
            }
        }
        assert!(
            self.entries
                .first()
                .map_or(true, |first| first.start_offset >= offset),
            "no entry starts below {offset}"
        );
        self.assert_ordered();
    }

    fn assert_ordered(&self) {
        for pair in self.entries.windows(2) {
            assert!(
                pair[0].epoch < pair[1].epoch && pair[0].start_offset < pair[1].start_offset,
                "epoch entries out of order: {:?} then {:?}",
                pair[0],
                pair[1]
            );
        }
    }
}

/// Where a slave with `local` epochs and CommitLog end `local_end` agrees
/// with a master whose epochs are `master` and CommitLog end `master_end`
/// (`findConsistentPoint`): walking the slave's epochs newest first, the
/// first one the master also has *with the same start* is shared up to the
/// nearer of the two ends of that epoch. A log with no bytes under any of
/// its epochs (a master that never took a message) has nothing to disagree
/// on: it forks where it ends.
pub fn fork_point(
    local: &EpochCache,
    local_end: i64,
    master: &EpochCache,
    master_end: i64,
) -> ForkPoint {
    if local.is_empty() {
        return ForkPoint::NoLocalEpochs;
    }
    if local_end <= local.entries[0].start_offset {
        return ForkPoint::At(local_end);
    }
    for index in (0..local.entries.len()).rev() {
        let mine = local.entries[index];
        let Some(theirs_index) = master.position(mine.epoch) else {
            continue;
        };
        if master.entries[theirs_index].start_offset != mine.start_offset {
            continue;
        }
        let point = local
            .end_of(index, local_end)
            .min(master.end_of(theirs_index, master_end));
        assert!(point >= mine.start_offset, "a fork below its epoch's start");
        return ForkPoint::At(point);
    }
    ForkPoint::NoCommonEpoch
}

#[cfg(test)]
mod tests;
