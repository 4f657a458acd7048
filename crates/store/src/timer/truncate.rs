//! Dropping the timers whose CommitLog records were lost in a crash (see
//! "Truncation" in the module doc).

use super::log::{Key, Record, RECORD_BYTES};
use super::{TimerError, TimerStore};

impl TimerStore {
    /// Whether the ADD at log position `pos` for CommitLog offset
    /// `physical_offset` was killed by a later truncation.
    pub(super) fn is_truncated(&self, pos: i64, physical_offset: i64) -> bool {
        self.truncations
            .iter()
            .rev()
            .take_while(|&&(at, _)| at > pos)
            .any(|&(_, end)| physical_offset >= end)
    }

    /// The CommitLog recovered to `commitlog_end`: every timer held for an
    /// offset at or after it is dropped (never returned by `due`, no longer
    /// counted as pending), and `ingested_end` becomes
    /// `min(ingested_end, commitlog_end)` so the timer messages written
    /// there from now on are added (and delivered) normally. Durable when
    /// it returns (it flushes). Call it right after `open`.
    ///
    /// Returns how many pending (undelivered) timers were dropped.
    ///
    /// Cost: nothing when `commitlog_end >= ingested_end` (returns 0);
    /// otherwise a backward read of the log records written since the last
    /// surviving ADD, plus a flush.
    pub fn truncate_from(&mut self, commitlog_end: i64) -> Result<usize, TimerError> {
        if commitlog_end < 0 {
            return Err(TimerError::InvalidTimer(format!(
                "CommitLog end {commitlog_end} is negative"
            )));
        }
        if commitlog_end >= self.ingested_end {
            return Ok(0);
        }
        assert!(
            commitlog_end < self.ingested_end,
            "a truncation moves the end back"
        );
        let dropped = self.adds_from(commitlog_end)?;
        let pending: Vec<Key> = dropped
            .into_iter()
            .filter(|&key| self.is_undelivered(key))
            .collect();
        let count = pending.len();
        let pos = self.log.append(Record::Truncate {
            commitlog_end,
            dropped: i64::try_from(count).unwrap_or(i64::MAX),
        })?;
        self.truncations.push((pos, commitlog_end));
        for key in &pending {
            self.ready.remove(key);
        }
        debug_assert!(self.ready.keys().all(|k| k.1 < commitlog_end));
        self.pending = self.pending.saturating_sub(count as u64);
        // Delivered keys at dead offsets must not shadow reused offsets.
        self.ahead.retain(|k| k.1 < commitlog_end);
        // Keys (floor ms, offset >= end) below the floor are all dead; a
        // new timer at the floor's ms with a reused offset must be above it.
        self.floor.1 = self.floor.1.min(commitlog_end);
        self.ingested_end = commitlog_end;
        assert!(
            self.floor.1 <= self.ingested_end,
            "the floor stays at or below the end"
        );
        // Timers for offsets from here on are new: never handed out.
        self.in_doubt_below_offset = self.in_doubt_below_offset.min(commitlog_end);
        self.next_due.set(None);
        self.changed = true;
        tracing::info!(
            commitlog_end,
            dropped = count,
            pending = self.pending,
            "timer store truncated to the recovered CommitLog end"
        );
        self.flush()?;
        Ok(count)
    }

    /// Keys of the live ADDs for offsets at or after `end`. Live ADDs have
    /// strictly increasing offsets in log order (`add` refuses offsets
    /// below `ingested_end`, and a truncation kills every live ADD at or
    /// after the new `ingested_end`), so they are the live ADDs after the
    /// last live one below `end`: read backwards until it. ADDs in deleted
    /// segments were all delivered and below the floor: nothing to drop.
    fn adds_from(&self, end: i64) -> Result<Vec<Key>, TimerError> {
        let mut out = Vec::new();
        let step = RECORD_BYTES as i64;
        let mut pos = self.log.end() - step;
        while pos >= self.log.start() {
            if let Record::Add {
                deliver_at_ms,
                physical_offset,
                ..
            } = self.log.read(pos)?
            {
                if !self.is_truncated(pos, physical_offset) {
                    if physical_offset < end {
                        break;
                    }
                    out.push((deliver_at_ms, physical_offset));
                }
            }
            pos -= step;
        }
        Ok(out)
    }
}
