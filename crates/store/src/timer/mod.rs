//! The timer store: timers for arbitrary-delay messages (RocketMQ 5
//! `TimerMessageStore`), held persistently until due.
//!
//! # Structure
//!
//! The RocketMQ shape, trimmed: a **timer log** (append-only, memory-mapped
//! segments of 32-byte records, `log.rs`) and a **time wheel** of one-second
//! slots (`wheel.rs`). `add` appends an ADD record whose `prev` field points
//! at the previous ADD of the same second, and makes it the head of that
//! second's slot: each second is a linked list through the log, newest
//! first. `due(now)` walks the slots of the seconds up to `now` in order,
//! loads their chains into a sorted in-memory set and hands out entries in
//! `(deliver_at_ms, physical_offset)` order. An empty second costs one slot
//! look-up, so polling every 100 ms is cheap, and a full chain is read only
//! once, when its second is due.
//!
//! Why this and not a sorted structure: adds arrive in CommitLog order with
//! any deliver time; a log + wheel turns that into sequential appends (no
//! sort on the write path, no per-timer memory while waiting) and makes
//! "everything due by now" a walk of the slots between the last delivered
//! second and now. Slot `s % wheel_slots` holds second `s`, so the wheel
//! must span the maximum delay; it spans twice that by default, so delivery
//! may lag `now` by up to one maximum delay before `add` has to refuse a
//! timer whose slot still holds an undelivered second
//! ([`TimerError::Backlogged`]: retry after delivery catches up).
//!
//! # Delivery progress (the timer checkpoint)
//!
//! The broker, for each batch from `due`: 1. appends the real message to
//! its topic, 2. calls `mark_delivered`. Each marked timer gets a DONE
//! record in the log, and the **floor** (every timer with a smaller key is
//! delivered; the "delivered-up-to" time) moves up over the contiguous
//! delivered prefix. Timers marked out of order are remembered above the
//! floor until it passes them. `flush` syncs the log, writes the changed
//! wheel slots, then atomically writes `checkpoint` (floor, out-of-order
//! marks, pending count, log position covered); recovery replays the log
//! after that position (ADDs into the wheel, DONEs into the delivered set),
//! so a marked timer is never handed out again and an added one never lost,
//! whether the process stopped cleanly or was killed.
//!
//! The one window is between steps 1 and 2: the real message is stored but
//! the timer is not marked. `due` records (one HANDOUT record per batch that
//! goes further than before) the largest key it ever handed out; after a
//! restart, entries up to that key come back with
//! [`TimerEntry::maybe_delivered`] set. For exactly once, the broker checks
//! those (e.g. an index query of the UNIQ_KEY on the real topic at offsets
//! after the timer message) before appending them again; without the check
//! at most the batches in flight at the crash are delivered twice.
//!
//! That holds for a process crash (kill -9): the log is a shared memory map,
//! so every record written survives in the page cache. A machine crash
//! loses the records written since the last `flush`: ADDs come back when
//! the broker re-feeds from [`TimerRecovery::ingested_end`] (no loss, given
//! the timer messages survived in the CommitLog), but timers delivered in
//! that interval may be delivered again, unflagged if their HANDOUT record
//! was lost too. Call `flush` after `mark_delivered` to close that too, at
//! the price of an fdatasync per batch.
//!
//! # Ingestion
//!
//! `add` takes timers in CommitLog order (the dispatch of the timer topic);
//! an offset below [`TimerStore::ingested_end`] is ignored, so after a
//! restart the broker re-feeds timer messages from
//! [`TimerRecovery::ingested_end`] and duplicates cannot arise.
//! A deliver time before the floor is moved up to it (delivered at once).
//!
//! # Truncation (the CommitLog lost its tail)
//!
//! After a crash the CommitLog may recover to an end `E` below
//! `ingested_end`: ADDs at offsets `>= E` point at records that are gone,
//! and new, different messages will reuse those offsets. The broker calls
//! [`TimerStore::truncate_from`]`(E)` right after `open`. It appends a
//! TRUNCATE record `(E, pending timers dropped)` at log position `q` and
//! remembers `(q, E)`: **an ADD at log position `p` is dead when some
//! truncation `(q, E)` has `q > p` and the ADD's offset is `>= E`**. Dead
//! ADDs stay in the log (and in their second's chain) but are skipped by
//! `due`, `next_due_ms` and the pending count; an ADD written after the
//! TRUNCATE record is alive whatever its offset, so a reused offset (even
//! with the very same deliver time) is delivered like any other. Delivered
//! keys at offsets `>= E` are forgotten, so they cannot shadow a reused
//! offset. `ingested_end` drops to `E`, and the store is flushed before
//! `truncate_from` returns. The `(q, E)` pairs live in the checkpoint
//! (and replay from the log); one is pruned once the log no longer holds
//! anything before `q`. A dead ADD keeps its log segment until the floor
//! passes its second, like a live one.
//!
//! # Next due time
//!
//! [`TimerStore::next_due_ms`] is cached: `add` lowers the cached value,
//! `due` keeps it, marking the earliest timer delivered or a truncation
//! drops it. Recomputing costs O(log n) when the earliest timer's second is
//! loaded; otherwise one slot look-up per second from the first unloaded
//! second to the earliest second holding a pending timer (at most
//! `wheel_slots` look-ups: about 0.5 M, a few hundred µs, for the default
//! wheel) plus a read of that second's chain.
//!
//! # Cost per held message
//!
//! - Disk: one 32-byte ADD record while held, plus a 32-byte DONE record
//!   once delivered (64 bytes in all), and one 32-byte HANDOUT record per
//!   `due` batch. A log segment is deleted once every ADD in it is due and
//!   delivered and a checkpoint covers it.
//! - Memory: nothing per message while it waits (the log is a memory map:
//!   page cache only). When its second is due, about 40 bytes (16-byte
//!   key, 4-byte size, B-tree node share) until it is marked delivered.
//! - Fixed: the wheel, 16 bytes per slot in memory and on disk (default
//!   518,402 slots = 8.3 MB for the 3-day maximum delay).
//!
//! # Thread
//!
//! Single-owner: one broker thread feeds, polls and flushes it. `flush`
//! blocks (msync, fdatasync, atomic rename); call it on a timer (e.g. every
//! second) or from a blocking pool.

mod checkpoint;
mod error;
mod log;
mod next_due;
mod recovery;
mod truncate;
mod wheel;

use std::cell::Cell;
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

pub use error::TimerError;
pub use log::RECORD_BYTES as TIMER_RECORD_BYTES;

use checkpoint::TimerCheckpoint;
use log::{Key, Record, TimerLog};
use wheel::Wheel;

/// Default maximum delay (`timerMaxDelaySec`): 3 days.
pub const MAX_DELAY_MS_DEFAULT: u64 = 3 * 24 * 3600 * 1000;
/// Default timer log segment size.
pub const LOG_SEGMENT_BYTES_DEFAULT: u64 = 64 << 20;
/// Smallest log segment accepted (tests roll tiny ones).
pub const LOG_SEGMENT_BYTES_MIN: u64 = 4 * TIMER_RECORD_BYTES as u64;
/// Largest log segment accepted.
pub const LOG_SEGMENT_BYTES_MAX: u64 = 1 << 30;
/// Largest wheel accepted (16 bytes a slot: 256 MiB).
pub const WHEEL_SLOTS_MAX: u32 = 1 << 24;
/// Most entries one `due` call returns.
pub const DUE_BATCH_MAX: usize = 65_536;

const LOG_DIR: &str = "log";
const WHEEL_FILE: &str = "wheel";
const CHECKPOINT_FILE: &str = "checkpoint";

/// Timer store sizing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimerConfig {
    /// Longest delay `add` accepts, from its `now_ms`.
    pub max_delay_ms: u64,
    /// One-second slots; at least the maximum delay in seconds plus 2.
    pub wheel_slots: u32,
    /// Bytes per timer log segment (a multiple of 32).
    pub log_segment_bytes: u64,
}

impl TimerConfig {
    /// A config for `max_delay_ms` with a wheel of twice that span.
    pub fn with_max_delay_ms(max_delay_ms: u64) -> Self {
        let seconds = max_delay_ms.div_ceil(1000);
        Self {
            max_delay_ms,
            wheel_slots: u32::try_from(seconds.saturating_mul(2).saturating_add(2))
                .unwrap_or(u32::MAX),
            log_segment_bytes: LOG_SEGMENT_BYTES_DEFAULT,
        }
    }

    pub fn validate(&self) -> Result<(), TimerError> {
        let bad = |reason: String| Err(TimerError::Config(reason));
        if self.max_delay_ms < 1000 {
            return bad(format!("max_delay_ms {} is below 1000", self.max_delay_ms));
        }
        let needed = self.max_delay_ms.div_ceil(1000).saturating_add(2);
        if u64::from(self.wheel_slots) < needed || self.wheel_slots > WHEEL_SLOTS_MAX {
            return bad(format!(
                "wheel_slots {} must be in {needed}..={WHEEL_SLOTS_MAX} for max_delay_ms {}",
                self.wheel_slots, self.max_delay_ms
            ));
        }
        let seg = self.log_segment_bytes;
        if !(LOG_SEGMENT_BYTES_MIN..=LOG_SEGMENT_BYTES_MAX).contains(&seg)
            || seg % TIMER_RECORD_BYTES as u64 != 0
        {
            return bad(format!(
                "log_segment_bytes {seg} must be a multiple of {TIMER_RECORD_BYTES} in \
                 {LOG_SEGMENT_BYTES_MIN}..={LOG_SEGMENT_BYTES_MAX}"
            ));
        }
        Ok(())
    }
}

impl Default for TimerConfig {
    fn default() -> Self {
        Self::with_max_delay_ms(MAX_DELAY_MS_DEFAULT)
    }
}

/// A timer handed out by [`TimerStore::due`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimerEntry {
    /// When it is due (as stored: never before the floor at `add` time).
    pub deliver_at_ms: i64,
    /// CommitLog offset of the held (timer topic) message.
    pub physical_offset: i64,
    /// Its size in bytes.
    pub size: i32,
    /// Handed out before the last restart: the real message may already be
    /// stored; check before delivering it again.
    pub maybe_delivered: bool,
}

impl TimerEntry {
    fn key(&self) -> Key {
        (self.deliver_at_ms, self.physical_offset)
    }
}

/// What [`TimerStore::add`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AddOutcome {
    /// Held; due at `deliver_at_ms` (the requested time, or the floor if
    /// that was earlier).
    Added { deliver_at_ms: i64 },
    /// The offset is below [`TimerStore::ingested_end`]: already held or
    /// delivered (a replay after restart).
    AlreadyIngested,
}

/// What [`TimerStore::open`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimerRecovery {
    /// Timers held, not yet delivered.
    pub pending: u64,
    /// Re-feed timer messages from this CommitLog offset on.
    pub ingested_end: i64,
    /// Every timer due before this is delivered.
    pub delivered_floor_ms: i64,
    /// Timers up to this deliver time come back `maybe_delivered`.
    pub in_doubt_through_ms: Option<i64>,
    /// Log records replayed after the checkpoint.
    pub replayed_records: u64,
    /// The wheel was rebuilt from the whole log (missing or damaged file).
    pub wheel_rebuilt: bool,
}

/// Persistent timers (see the module doc).
pub struct TimerStore {
    dir: PathBuf,
    config: TimerConfig,
    log: TimerLog,
    wheel: Wheel,
    /// Every key below it is delivered.
    floor: Key,
    /// Delivered keys at or above the floor.
    ahead: BTreeSet<Key>,
    /// Loaded, undelivered timers of the seconds below `loaded_through`.
    ready: BTreeMap<Key, i32>,
    /// Seconds from the floor's up to (not including) this are loaded.
    loaded_through: i64,
    /// Largest key `due` handed out.
    handout: Option<Key>,
    /// Largest key handed out before the restart.
    in_doubt_through: Option<Key>,
    /// Timers at this CommitLog offset or later were never handed out
    /// before the restart (they came after a truncation).
    in_doubt_below_offset: i64,
    ingested_end: i64,
    pending: u64,
    /// (log position of a TRUNCATE record, its CommitLog end), in log
    /// order (see the module doc).
    truncations: Vec<(i64, i64)>,
    /// Cached [`TimerStore::next_due_ms`]; `None`: not known.
    next_due: Cell<Option<Option<i64>>>,
    /// Something changed since the last checkpoint.
    changed: bool,
}

impl std::fmt::Debug for TimerStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TimerStore")
            .field("dir", &self.dir)
            .field("pending", &self.pending)
            .field("floor", &self.floor)
            .field("loaded", &self.ready.len())
            .field("ingested_end", &self.ingested_end)
            .finish()
    }
}

impl TimerStore {
    pub fn config(&self) -> &TimerConfig {
        &self.config
    }

    /// Timers held and not yet marked delivered.
    pub fn pending_count(&self) -> u64 {
        self.pending
    }

    /// Every timer due before this time is delivered.
    pub fn delivered_floor_ms(&self) -> i64 {
        self.floor.0
    }

    /// CommitLog position after the last timer message added.
    pub fn ingested_end(&self) -> i64 {
        self.ingested_end
    }

    /// Takes a timer message as ingested without holding it (a broker that
    /// had this store before delivered it): ingestion resumes after it.
    pub fn skip_ingested(&mut self, physical_offset: i64, size: i32) {
        let end = physical_offset.saturating_add(i64::from(size.max(0)));
        self.changed |= end > self.ingested_end;
        self.ingested_end = self.ingested_end.max(end);
    }

    fn floor_second(&self) -> i64 {
        self.floor.0.div_euclid(1000)
    }

    /// Holds the message at `physical_offset` (`size` bytes) until
    /// `deliver_at_ms`. Offsets must come in CommitLog order.
    pub fn add(
        &mut self,
        deliver_at_ms: i64,
        physical_offset: i64,
        size: i32,
        now_ms: i64,
    ) -> Result<AddOutcome, TimerError> {
        if physical_offset < 0 || size <= 0 || deliver_at_ms < 0 {
            return Err(TimerError::InvalidTimer(format!(
                "deliver_at_ms {deliver_at_ms}, offset {physical_offset}, size {size}"
            )));
        }
        if physical_offset < self.ingested_end {
            return Ok(AddOutcome::AlreadyIngested);
        }
        let max_delay_ms = i64::try_from(self.config.max_delay_ms).unwrap_or(i64::MAX);
        if deliver_at_ms > now_ms.saturating_add(max_delay_ms) {
            return Err(TimerError::TooFarInFuture {
                deliver_at_ms,
                now_ms,
                max_delay_ms: self.config.max_delay_ms,
            });
        }
        let at = deliver_at_ms.max(self.floor.0);
        let second = at.div_euclid(1000);
        let slot = self.wheel.slot(second);
        let prev = if !slot.is_empty() && slot.second == second {
            slot.head
        } else if slot.is_empty() || slot.second < self.floor_second() {
            -1
        } else {
            return Err(TimerError::Backlogged {
                second,
                held_second: slot.second,
            });
        };
        let pos = self.log.append(Record::Add {
            deliver_at_ms: at,
            physical_offset,
            size,
            prev,
        })?;
        self.wheel.set(second, pos);
        let key = (at, physical_offset);
        debug_assert!(key >= self.floor);
        if second < self.loaded_through {
            self.ready.insert(key, size);
        }
        self.pending += 1;
        self.ingested_end = physical_offset.saturating_add(i64::from(size));
        if let Some(next) = self.next_due.get() {
            self.next_due
                .set(Some(Some(next.map_or(at, |n| n.min(at)))));
        }
        self.changed = true;
        Ok(AddOutcome::Added { deliver_at_ms: at })
    }

    /// Up to `max` (at most [`DUE_BATCH_MAX`]) undelivered timers due at or
    /// before `now_ms`, in `(deliver_at_ms, physical_offset)` order. The
    /// same timers come back until marked delivered.
    pub fn due(&mut self, now_ms: i64, max: usize) -> Result<Vec<TimerEntry>, TimerError> {
        let max = max.min(DUE_BATCH_MAX);
        if max == 0 {
            return Ok(Vec::new());
        }
        self.load_until(now_ms.div_euclid(1000), max)?;
        let in_doubt = self.in_doubt_through;
        let doubt_below = self.in_doubt_below_offset;
        let out: Vec<TimerEntry> = self
            .ready
            .iter()
            .take_while(|(key, _)| key.0 <= now_ms)
            .take(max)
            .map(|(&(deliver_at_ms, physical_offset), &size)| TimerEntry {
                deliver_at_ms,
                physical_offset,
                size,
                maybe_delivered: physical_offset < doubt_below
                    && in_doubt.is_some_and(|d| (deliver_at_ms, physical_offset) <= d),
            })
            .collect();
        if let Some(last) = out.last() {
            let key = last.key();
            if self.handout.map_or(true, |h| key > h) {
                self.log.append(Record::Handout { key })?;
                self.handout = Some(key);
                self.changed = true;
            }
        }
        Ok(out)
    }

    /// Loads due seconds up to `now_sec` until `want` timers are ready.
    fn load_until(&mut self, now_sec: i64, want: usize) -> Result<(), TimerError> {
        let mut loaded_any = false;
        while self.loaded_through <= now_sec && self.ready.len() < want {
            if now_sec - self.loaded_through > self.wheel.len() as i64 {
                // A long gap (first start, long downtime): visit only the
                // seconds that hold timers instead of every second.
                let from = self.loaded_through;
                let mut live: Vec<i64> = self
                    .wheel
                    .iter()
                    .map(|slot| slot.second)
                    .filter(|s| (from..=now_sec).contains(s))
                    .collect();
                live.sort_unstable();
                let mut next = now_sec + 1;
                for second in live {
                    if self.ready.len() >= want {
                        next = second;
                        break;
                    }
                    self.load_second(second)?;
                }
                self.loaded_through = next;
                loaded_any = true;
                break;
            }
            self.load_second(self.loaded_through)?;
            self.loaded_through += 1;
            loaded_any = true;
        }
        if loaded_any {
            self.recompute_floor();
        }
        Ok(())
    }

    /// Reads second `second`'s chain into `ready`.
    fn load_second(&mut self, second: i64) -> Result<(), TimerError> {
        for (key, size) in self.live_chain(second)? {
            if self.is_undelivered(key) {
                self.ready.insert(key, size);
            }
        }
        Ok(())
    }

    /// Not below the floor and not marked delivered.
    fn is_undelivered(&self, key: Key) -> bool {
        key >= self.floor && !self.ahead.contains(&key)
    }

    /// The live (not truncated) ADDs of second `second`'s chain, newest
    /// first, delivered or not.
    fn live_chain(&self, second: i64) -> Result<Vec<(Key, i32)>, TimerError> {
        let mut out = Vec::new();
        let Some(mut pos) = self.wheel.head(second) else {
            return Ok(out);
        };
        while pos >= 0 {
            match self.log.read(pos)? {
                Record::Add {
                    deliver_at_ms,
                    physical_offset,
                    size,
                    prev,
                } if deliver_at_ms.div_euclid(1000) == second => {
                    if !self.is_truncated(pos, physical_offset) {
                        out.push(((deliver_at_ms, physical_offset), size));
                    }
                    pos = prev; // decode guarantees prev < pos
                }
                other => {
                    return Err(TimerError::corrupt(
                        &self.dir,
                        format!("chain of second {second} reaches {other:?} at {pos}"),
                    ))
                }
            }
        }
        Ok(out)
    }

    /// Moves the floor up to the smallest undelivered key it knows of.
    fn recompute_floor(&mut self) {
        let bound = match self.ready.keys().next() {
            Some(&key) => key,
            None => (self.loaded_through.saturating_mul(1000), i64::MIN),
        };
        if bound > self.floor {
            self.floor = bound;
            self.ahead = self.ahead.split_off(&self.floor);
            self.changed = true;
        }
    }

    /// Records timers as delivered (their real messages are stored). Each
    /// must come from `due`; marking a delivered one again does nothing.
    /// Returns how many were newly marked.
    pub fn mark_delivered(&mut self, entries: &[TimerEntry]) -> Result<usize, TimerError> {
        for entry in entries {
            let key = entry.key();
            let known =
                self.ready.contains_key(&key) || key < self.floor || self.ahead.contains(&key);
            if !known {
                return Err(TimerError::UnknownEntry {
                    deliver_at_ms: entry.deliver_at_ms,
                    physical_offset: entry.physical_offset,
                });
            }
        }
        let mut marked = 0;
        let mut result = Ok(());
        let next_due = self.next_due.get().flatten();
        for entry in entries {
            let key = entry.key();
            if !self.ready.contains_key(&key) {
                continue;
            }
            if let Err(e) = self.log.append(Record::Done { key }) {
                result = Err(e);
                break;
            }
            self.ready.remove(&key);
            if next_due.is_some_and(|next| key.0 <= next) {
                self.next_due.set(None);
            }
            self.ahead.insert(key);
            self.pending = self.pending.saturating_sub(1);
            self.changed = true;
            marked += 1;
        }
        self.recompute_floor();
        result.map(|()| marked)
    }

    /// Makes everything so far durable: syncs the log, writes the changed
    /// wheel slots, writes the checkpoint, then deletes log segments no
    /// longer needed. Blocking.
    pub fn flush(&mut self) -> Result<(), TimerError> {
        if !self.changed {
            return Ok(());
        }
        self.log.sync()?;
        let replay_from = self.log.end();
        // A truncation at or before the first retained record kills nothing.
        let log_start = self.log.start();
        self.truncations.retain(|&(pos, _)| pos > log_start);
        self.wheel.persist()?;
        let checkpoint = TimerCheckpoint {
            wheel_slots: self.config.wheel_slots,
            replay_from,
            floor: self.floor,
            handout: self.handout,
            ingested_end: self.ingested_end,
            pending: self.pending,
            segments: self
                .log
                .segments
                .iter()
                .map(|s| (s.start, s.max_second))
                .collect(),
            ahead: self.ahead.iter().copied().collect(),
            truncations: self.truncations.clone(),
        };
        checkpoint.store(&self.dir.join(CHECKPOINT_FILE))?;
        self.changed = false;
        let removed = self
            .log
            .remove_dead_segments(replay_from, self.floor_second())?;
        if removed > 0 {
            tracing::debug!(removed, "timer log segments deleted");
        }
        Ok(())
    }
}
