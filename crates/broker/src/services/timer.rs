//! Arbitrary-delay (timer) messages, RocketMQ 5's `TimerMessageStore`
//! service side. A send with a timer property is stored in
//! `rmq_sys_wheel_timer` queue 0 (see `routing`); this module, on the timer
//! shard (the owner of that queue):
//!
//! 1. **ingests** that queue's entries, in order, into the persistent timer
//!    store (`ferrocket_store::timer`: a timer log + one-second wheel),
//!    keyed by the due time in TIMER_OUT_MS;
//! 2. **delivers** due timers, waking at the store's next due time (or when
//!    a timer message arrives, or every [`IDLE_MAX_MS`]): copies the held
//!    message to REAL_TOPIC / REAL_QID, then marks it delivered;
//! 3. **flushes** the timer store every second and at stop.
//!
//! Restart: the timer store recovers its own state and drops timers whose
//! messages the CommitLog lost in a crash (`truncate_from` the recovered
//! end); ingestion resumes at the
//! first queue entry at or past the store's `ingested_end`, so nothing is
//! added twice and nothing written is missed (the ConsumeQueue itself is
//! rebuilt from the CommitLog by store recovery). A timer handed out before
//! a crash but not marked delivered comes back `maybe_delivered`; it is
//! delivered again only if the index has no copy of it in its real topic
//! (same UNIQ_KEY and TIMER_OUT_MS, stored after the held message).
//!
//! Timer-store calls can touch disk (memory-mapped log, msync, fsync), so
//! they run on the blocking pool; the store sits behind a mutex only this
//! service's single task takes, one call at a time.

use std::cell::{Cell, RefCell};
use std::collections::{HashSet, VecDeque};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use ferrocket_protocol::properties;
use ferrocket_store::timer::{AddOutcome, TimerConfig, TimerError, TimerStore};
use ferrocket_store::{ConsumeQueue, FailureLevel, RepeatedFailure, ShardStore};

use crate::clock::now_ms;
use crate::config::BrokerConfig;
use crate::services::acting_master::TIMER_LEDGER_MAX;
use crate::services::java_timer::JavaTimerCheck;
use crate::services::topics::TIMER_TOPIC;
use ferrocket_runtime::sync::Notify;

/// Longest the timer loop sleeps: it wakes at the next due time, when a
/// timer message is dispatched, or after this at the latest.
pub const IDLE_MAX_MS: i64 = 1_000;
/// Shortest sleep between rounds (a due timer that cannot be delivered is
/// retried this often).
pub const IDLE_MIN_MS: i64 = 5;
/// How often the timer store is made durable.
pub const FLUSH_INTERVAL_MS: u64 = 1_000;
/// Timer-queue entries ingested per step.
pub const INGEST_BATCH_MAX: usize = 1_024;
/// Due timers delivered per step.
pub const DELIVER_BATCH_MAX: usize = 256;
/// A slave that is not acting settles the timers that came due longer ago
/// than this: its master delivered them (an acting slave takes over within
/// `brokerNotActiveTimeoutMillis`, far less), so neither its timer log nor
/// the lookups of its first acting grow with the master's history.
pub const SLAVE_SETTLE_GRACE_MS: i64 = 10 * 60 * 1_000;
/// Directory of the timer store under the store root.
pub const TIMER_DIR: &str = "timer";

/// The timer shard's timer state.
pub(crate) struct TimerService {
    store: Arc<Mutex<TimerStore>>,
    /// Next queue offset of the timer topic to ingest.
    next_queue_offset: Cell<i64>,
    wake: Notify,
    flush_failures: RepeatedFailure,
    /// The broker's `config/`, where Java's timer checkpoint lives.
    config_dir: PathBuf,
    /// Opening a store a Java broker wrote: what its timer delivered.
    java_delivered: Option<JavaTimerCheck>,
    /// Java's timer checkpoint as last written for a Java broker.
    java_written: Cell<Option<JavaTimerCheck>>,
    /// An acting slave: the held messages it sent to another set, for its
    /// returning master (`tasks::acting_hand_back`).
    acting_ledger: RefCell<VecDeque<i64>>,
    /// A returning master: held messages its acting slave delivered.
    handed: RefCell<HashSet<i64>>,
}

/// One timer-topic entry ready to add.
struct Incoming {
    deliver_at_ms: i64,
    physical_offset: i64,
    size: i32,
    /// A Java broker that had this store delivered it already.
    delivered_by_java: bool,
}

impl TimerService {
    /// Opens (recovering) the timer store under the store root.
    pub fn open(config: &BrokerConfig, queues: &ShardStore) -> Result<Self, String> {
        let dir = config.store_path_root_dir.join(TIMER_DIR);
        let config_dir = config.store_path_root_dir.join("config");
        // A Java broker had this store: its timer delivered part of the
        // queue (see java_timer).
        let java_delivered = JavaTimerCheck::read_javas(&config_dir);
        let max_delay_ms = config.timer_max_delay_sec.saturating_mul(1000);
        let (mut store, recovery) =
            TimerStore::open(&dir, TimerConfig::with_max_delay_ms(max_delay_ms))
                .map_err(|err| format!("timer store: {err}"))?;
        // Timers whose messages the CommitLog lost in a crash (its unflushed
        // tail) are dropped; the timer messages written there from now on
        // are taken normally.
        let written = queues.reader().written_offset();
        let ingested_end = store.ingested_end();
        let dropped = store
            .truncate_from(written)
            .map_err(|err| format!("timer store: {err}"))?;
        if ingested_end > written {
            tracing::warn!(
                ingested_end,
                commitlog_end = written,
                dropped,
                "timers past the recovered CommitLog end dropped"
            );
        }
        let queue = queues
            .consume_queue(TIMER_TOPIC, 0)
            .map_err(|err| format!("timer queue: {err}"))?;
        let next = first_entry_at_or_after(&queue, store.ingested_end());
        tracing::info!(
            pending = recovery.pending,
            resume_queue_offset = next,
            java_checkpoint = ?java_delivered,
            "timer store opened"
        );
        Ok(Self {
            store: Arc::new(Mutex::new(store)),
            next_queue_offset: Cell::new(next),
            wake: Notify::default(),
            flush_failures: RepeatedFailure::new("timer store flush", FailureLevel::Error),
            config_dir,
            java_delivered,
            java_written: Cell::new(None),
            acting_ledger: RefCell::new(VecDeque::new()),
            handed: RefCell::new(HashSet::new()),
        })
    }

    /// An acting slave sent the held message at `physical_offset` to
    /// another set.
    pub fn note_acting_delivery(&self, physical_offset: i64) {
        let mut ledger = self.acting_ledger.borrow_mut();
        if ledger.len() >= TIMER_LEDGER_MAX {
            ledger.pop_front();
        }
        ledger.push_back(physical_offset);
    }

    /// What this slave delivered while acting, taken for the master.
    pub fn take_acting_ledger(&self) -> Vec<i64> {
        self.acting_ledger.borrow_mut().drain(..).collect()
    }

    /// A returning master: what its slaves delivered while it was gone.
    pub fn note_handed(&self, offsets: Vec<i64>) {
        self.handed.borrow_mut().extend(offsets);
    }

    /// Whether an acting slave delivered the held message at
    /// `physical_offset` (forgotten once asked).
    pub fn take_handed(&self, physical_offset: i64) -> bool {
        let mut handed = self.handed.borrow_mut();
        !handed.is_empty() && handed.remove(&physical_offset)
    }

    pub fn wake(&self) {
        self.wake.notify();
    }

    /// Completes at the next [`TimerService::wake`].
    pub async fn woken(&self) {
        self.wake.wait().await;
    }

    /// On a slave not acting: marks timers due before `before_ms` settled
    /// (see [`SLAVE_SETTLE_GRACE_MS`]); answers how many.
    pub async fn settle_before(&self, before_ms: i64) -> usize {
        self.with_store(move |store| {
            let due = store.due(before_ms, DELIVER_BATCH_MAX)?;
            store.mark_delivered(&due)
        })
        .await
        .unwrap_or(0)
    }

    /// Runs `op` on the timer store on the blocking pool.
    pub async fn with_store<R: Send + 'static>(
        &self,
        op: impl FnOnce(&mut TimerStore) -> Result<R, TimerError> + Send + 'static,
    ) -> Result<R, String> {
        let store = Arc::clone(&self.store);
        glommio::executor()
            .spawn_blocking(move || {
                let mut guard = store
                    .lock()
                    .map_err(|_| "the timer store lock is poisoned".to_string())?;
                op(&mut guard).map_err(|err| err.to_string())
            })
            .await
    }

    /// Reads new timer-queue entries (their due times from TIMER_OUT_MS),
    /// through tiered storage; stops before an entry whose record the
    /// object store failed to give (the next pass starts there).
    async fn collect(&self, store: &ShardStore) -> Vec<Incoming> {
        let Ok(queue) = store.consume_queue(TIMER_TOPIC, 0) else {
            return Vec::new();
        };
        let start = self.next_queue_offset.get().max(queue.min_offset());
        self.next_queue_offset.set(start);
        let mut out = Vec::new();
        // A lost entry (recovery: damaged CommitLog range) has size 0: the
        // timer store refuses it and `add_all` skips it.
        for (queue_offset, entry) in (start..).zip(queue.get(start, INGEST_BATCH_MAX)) {
            let read =
                crate::services::records::try_read_record_through(store, entry.physical_offset)
                    .await;
            let Ok(record) = read else {
                tracing::warn!(queue_offset, "timer message not readable yet; retrying");
                break;
            };
            let deliver_at_ms = record
                .and_then(|record| {
                    let view = crate::services::records::view(&record).ok()?;
                    let props = view.properties();
                    let out_ms = props
                        .get(properties::TIMER_OUT_MS)
                        .and_then(|v| v.trim().parse::<i64>().ok())?;
                    // A recall marker is held just before the message it
                    // recalls, so delivery meets it first (services::recall).
                    let marker = props.contains(properties::TIMER_DEL_UNIQKEY);
                    Some(out_ms.saturating_sub(i64::from(marker)))
                })
                // Without a due time it is due now.
                .unwrap_or_else(now_ms);
            let delivered_by_java = self
                .java_delivered
                .is_some_and(|java| java.delivered(queue_offset, deliver_at_ms));
            out.push(Incoming {
                deliver_at_ms,
                physical_offset: entry.physical_offset,
                size: entry.size,
                delivered_by_java,
            });
        }
        out
    }

    /// Adds new timer-queue entries to the timer store; answers how many
    /// it took and how many of those it skipped for an invalid timer.
    pub async fn ingest(&self, store: &ShardStore, config: &BrokerConfig) -> (usize, usize) {
        let incoming = self.collect(store).await;
        if incoming.is_empty() {
            return (0, 0);
        }
        let max_delay_ms = i64::try_from(config.timer_max_delay_sec)
            .unwrap_or(i64::MAX / 1000)
            .saturating_mul(1000);
        let added = self
            .with_store(move |store| add_all(store, incoming, max_delay_ms))
            .await;
        match added {
            Ok(Added { taken, skipped }) => {
                self.next_queue_offset
                    .set(self.next_queue_offset.get() + taken as i64);
                (taken, skipped)
            }
            Err(err) => {
                tracing::error!(%err, "adding timers failed");
                (0, 0)
            }
        }
    }

    /// The next timer-queue offset to ingest: every entry before it is in
    /// the timer store.
    pub fn next_queue_offset(&self) -> i64 {
        self.next_queue_offset.get()
    }

    /// Every timer due before this time is delivered.
    pub async fn delivered_floor_ms(&self) -> Result<i64, String> {
        self.with_store(|store| Ok(store.delivered_floor_ms()))
            .await
    }

    /// Makes the timer store durable, and tells a Java broker that may
    /// open this store where to resume (Java's timer checkpoint).
    pub async fn flush(&self) {
        let next = self.next_queue_offset.get();
        // Java's checkpoint stays until ingestion has passed what it covers
        // (a restart before then must still skip what Java delivered).
        let importing = self
            .java_delivered
            .is_some_and(|java| next < java.queue_offset);
        let written = self.java_written.get();
        let dir = self.config_dir.clone();
        let flushed = self
            .with_store(move |store| {
                store.flush()?;
                if importing {
                    return Ok(written);
                }
                Ok(export_java_check(
                    &dir,
                    store.pending_count(),
                    next,
                    written,
                ))
            })
            .await;
        match flushed {
            Ok(check) => {
                self.java_written.set(check);
                self.flush_failures.record(&Ok::<(), String>(()));
            }
            Err(err) => self.flush_failures.record(&Err(err)),
        }
    }
}

/// Writes Java's timer checkpoint when where Java should resume changed;
/// answers the checkpoint now on disk (the previous one when writing failed).
fn export_java_check(
    config_dir: &std::path::Path,
    pending: u64,
    next_queue_offset: i64,
    written: Option<JavaTimerCheck>,
) -> Option<JavaTimerCheck> {
    let check = JavaTimerCheck::of_ferrocket(pending, next_queue_offset, now_ms());
    if written.is_some_and(|old| old.queue_offset == check.queue_offset) {
        return written;
    }
    match check.write(config_dir) {
        Ok(()) => Some(check),
        Err(err) => {
            tracing::warn!(%err, "writing Java's timer checkpoint (config/timercheck) failed");
            written
        }
    }
}

/// What [`add_all`] took from the timer queue.
struct Added {
    /// Entries consumed (added, already there, or skipped).
    taken: usize,
    /// Of those, entries skipped for an invalid timer.
    skipped: usize,
}

/// Adds `incoming` in order to the timer store until it backs up. An entry
/// the store calls invalid (a negative due time: a damaged or forged
/// TIMER_OUT_MS) is skipped with one log line, so it cannot hold back every
/// timer behind it.
fn add_all(
    store: &mut TimerStore,
    incoming: Vec<Incoming>,
    max_delay_ms: i64,
) -> Result<Added, TimerError> {
    let mut added = Added {
        taken: 0,
        skipped: 0,
    };
    for item in incoming {
        if item.delivered_by_java {
            store.skip_ingested(item.physical_offset, item.size);
            added.taken += 1;
            continue;
        }
        let now = now_ms();
        let at = item.deliver_at_ms.min(now.saturating_add(max_delay_ms));
        match store.add(at, item.physical_offset, item.size, now) {
            Ok(AddOutcome::Added { .. } | AddOutcome::AlreadyIngested) => added.taken += 1,
            Err(TimerError::InvalidTimer(reason)) => {
                tracing::warn!(physical_offset = item.physical_offset, %reason,
                    "timer message with an invalid timer skipped");
                added.taken += 1;
                added.skipped += 1;
            }
            Err(TimerError::Backlogged {
                second,
                held_second,
            }) => {
                tracing::warn!(
                    second,
                    held_second,
                    "timer wheel backlogged; retrying later"
                );
                break;
            }
            Err(err) if added.taken == 0 => return Err(err),
            Err(_) => break,
        }
    }
    Ok(added)
}

/// The first queue offset whose entry lies at or past CommitLog position
/// `position` (entries are in CommitLog order).
fn first_entry_at_or_after(queue: &ConsumeQueue, position: i64) -> i64 {
    let (mut low, mut high) = (queue.min_offset(), queue.max_offset());
    while low < high {
        let mid = low + (high - low) / 2;
        match queue.entry(mid) {
            Some(entry) if entry.physical_offset < position => low = mid + 1,
            Some(_) => high = mid,
            None => low = mid + 1,
        }
    }
    low
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_invalid_timer_is_skipped_and_the_timers_behind_it_are_added() {
        let dir = tempfile::tempdir().unwrap();
        let max_delay_ms = 60_000;
        let (mut store, _) =
            TimerStore::open(dir.path(), TimerConfig::with_max_delay_ms(max_delay_ms)).unwrap();
        let now = now_ms();
        let incoming = vec![
            Incoming {
                deliver_at_ms: -1,
                physical_offset: 0,
                size: 100,
                delivered_by_java: false,
            },
            Incoming {
                deliver_at_ms: now,
                physical_offset: 100,
                size: 100,
                delivered_by_java: false,
            },
        ];
        let added = add_all(&mut store, incoming, max_delay_ms as i64).unwrap();
        assert_eq!((added.taken, added.skipped), (2, 1));
        let due = store.due(now + 1_000, 16).unwrap();
        let offsets: Vec<i64> = due.iter().map(|e| e.physical_offset).collect();
        assert_eq!(offsets, vec![100]);
    }
}
