//! Opening the timer store: load the checkpoint and the wheel file, replay
//! the timer log after the checkpoint, and rebuild the wheel from the whole
//! log when its file is missing, of another size, or points at records that
//! are not the heads it claims.
//!
//! Replay is idempotent, because the wheel file may be newer than the
//! checkpoint (a flush that stopped between the two) or older (slots
//! changed after the last flush): an ADD becomes its slot's head only when
//! the slot holds an older second or an earlier head of the same second.

use std::cell::Cell;
use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use super::checkpoint::TimerCheckpoint;
use super::log::{Key, Record, TimerLog};
use super::wheel::Wheel;
use super::{
    TimerConfig, TimerError, TimerRecovery, TimerStore, CHECKPOINT_FILE, LOG_DIR, WHEEL_FILE,
};
use crate::error::IoContext;

/// State rebuilt from the checkpoint plus the replayed records.
struct Replayed {
    floor: Option<Key>,
    ahead: BTreeSet<Key>,
    handout: Option<Key>,
    ingested_end: i64,
    pending: u64,
    earliest_add_ms: Option<i64>,
    records: u64,
    /// (log position, CommitLog end) of the TRUNCATE records.
    truncations: Vec<(i64, i64)>,
}

impl Replayed {
    fn new() -> Self {
        Self {
            floor: None,
            ahead: BTreeSet::new(),
            handout: None,
            ingested_end: 0,
            pending: 0,
            earliest_add_ms: None,
            records: 0,
            truncations: Vec::new(),
        }
    }

    fn apply(&mut self, pos: i64, record: Record) {
        self.records += 1;
        match record {
            Record::Add {
                deliver_at_ms,
                physical_offset,
                size,
                ..
            } => {
                self.pending += 1;
                let end = physical_offset.saturating_add(i64::from(size));
                self.ingested_end = self.ingested_end.max(end);
                self.earliest_add_ms = Some(
                    self.earliest_add_ms
                        .map_or(deliver_at_ms, |e| e.min(deliver_at_ms)),
                );
            }
            Record::Done { key } => {
                self.pending = self.pending.saturating_sub(1);
                if self.floor.map_or(true, |floor| key >= floor) {
                    self.ahead.insert(key);
                }
            }
            Record::Handout { key } => {
                self.handout = Some(self.handout.map_or(key, |h| h.max(key)));
            }
            // The same steps as `TimerStore::truncate_from`.
            Record::Truncate {
                commitlog_end,
                dropped,
            } => {
                self.pending = self.pending.saturating_sub(dropped as u64);
                self.ingested_end = self.ingested_end.min(commitlog_end);
                self.ahead.retain(|k| k.1 < commitlog_end);
                if let Some(floor) = self.floor.as_mut() {
                    floor.1 = floor.1.min(commitlog_end);
                }
                self.truncations.push((pos, commitlog_end));
            }
        }
    }
}

/// Makes the ADD at `pos` its second's head unless the wheel already
/// reflects it or holds a later second in that slot.
fn replay_add(wheel: &mut Wheel, second: i64, pos: i64) {
    let slot = wheel.slot(second);
    if slot.is_empty() || slot.second < second || (slot.second == second && pos > slot.head) {
        wheel.set(second, pos);
    }
}

/// Scans the log from `from` (every record below `must_reach` was durable
/// and must still be valid): every ADD updates the wheel and the segments' latest seconds; records at or after
/// `state_from` update `state`.
fn replay(
    log: &mut TimerLog,
    wheel: &mut Wheel,
    from: i64,
    must_reach: i64,
    state_from: i64,
    state: &mut Replayed,
    segment_bytes: i64,
) -> Result<(), TimerError> {
    let mut seconds: Vec<(i64, i64)> = Vec::new();
    log.scan(from, must_reach, |pos, record| {
        if let Record::Add { deliver_at_ms, .. } = record {
            let second = deliver_at_ms.div_euclid(1000);
            replay_add(wheel, second, pos);
            let start = pos - pos.rem_euclid(segment_bytes);
            match seconds.last_mut() {
                Some((s, max)) if *s == start => *max = (*max).max(second),
                _ => seconds.push((start, second)),
            }
        }
        if pos >= state_from {
            state.apply(pos, record);
        }
    })?;
    for (start, second) in seconds {
        log.note_second(start, second);
    }
    Ok(())
}

/// Every live slot heads an ADD of its own second inside the log.
fn wheel_is_consistent(wheel: &Wheel, log: &TimerLog, floor_second: i64) -> bool {
    wheel
        .iter()
        .filter(|slot| slot.second >= floor_second)
        .all(|slot| {
            matches!(log.read(slot.head), Ok(Record::Add { deliver_at_ms, .. })
            if deliver_at_ms.div_euclid(1000) == slot.second)
        })
}

impl Replayed {
    /// The state the checkpoint records (empty without one), and the log
    /// position replay starts from. The checkpoint's latest second per log
    /// segment goes into `log`.
    fn from_checkpoint(checkpoint: Option<&TimerCheckpoint>, log: &mut TimerLog) -> (Self, i64) {
        let mut state = Replayed::new();
        let Some(cp) = checkpoint else {
            return (state, log.start());
        };
        state.floor = Some(cp.floor);
        state.ahead = cp
            .ahead
            .iter()
            .copied()
            .filter(|k| *k >= cp.floor)
            .collect();
        state.handout = cp.handout;
        state.ingested_end = cp.ingested_end;
        state.pending = cp.pending;
        state.truncations = cp.truncations.clone();
        for &(start, max_second) in &cp.segments {
            if let Some(seg) = log.segments.iter_mut().find(|s| s.start == start) {
                seg.max_second = max_second;
            }
        }
        (state, cp.replay_from)
    }

    /// Everything up to here is delivered: the checkpoint's floor, or
    /// without one the second of the earliest ADD replayed (nothing was
    /// known delivered before the log).
    fn floor(&self) -> Key {
        self.floor.unwrap_or((
            self.earliest_add_ms
                .map_or(0, |ms| ms.div_euclid(1000) * 1000),
            i64::MIN,
        ))
    }
}

/// Refuses a changed slot count while timers are pending: their seconds
/// map to other slots now and could collide.
fn check_slots(
    checkpoint: Option<&TimerCheckpoint>,
    config: &TimerConfig,
) -> Result<(), TimerError> {
    match checkpoint {
        Some(cp) if cp.wheel_slots != config.wheel_slots && cp.pending > 0 => {
            Err(TimerError::Config(format!(
                "wheel_slots changed from {} to {} while {} timers are pending",
                cp.wheel_slots, config.wheel_slots, cp.pending
            )))
        }
        _ => Ok(()),
    }
}

/// Rebuilds the wheel from the whole log; an error when even that leaves a
/// live slot that heads no ADD of its second.
fn rebuild_wheel(
    dir: &Path,
    log: &mut TimerLog,
    wheel: &mut Wheel,
    floor_second: i64,
    segment_bytes: i64,
) -> Result<(), TimerError> {
    tracing::warn!(dir = %dir.display(), "timer wheel inconsistent with the log; rebuilding it");
    wheel.clear();
    let (start, end) = (log.start(), log.end());
    let mut ignored = Replayed::new();
    replay(
        log,
        wheel,
        start,
        end,
        i64::MAX,
        &mut ignored,
        segment_bytes,
    )?;
    if !wheel_is_consistent(wheel, log, floor_second) {
        return Err(TimerError::corrupt(dir, "timer log chains are damaged"));
    }
    Ok(())
}

impl TimerStore {
    /// Opens (creating) the timer store in `dir` (by convention
    /// `{root}/timer`) and recovers it.
    pub fn open(
        dir: impl Into<PathBuf>,
        config: TimerConfig,
    ) -> Result<(Self, TimerRecovery), TimerError> {
        config.validate()?;
        let dir = dir.into();
        fs::create_dir_all(&dir).io_context("create timer dir", &dir)?;
        let checkpoint = TimerCheckpoint::load(&dir.join(CHECKPOINT_FILE))?;
        let mut log = TimerLog::open(&dir.join(LOG_DIR), config.log_segment_bytes)?;
        check_slots(checkpoint.as_ref(), &config)?;
        let wheel_usable = checkpoint
            .as_ref()
            .is_some_and(|cp| cp.wheel_slots == config.wheel_slots);
        let (mut wheel, loaded) =
            Wheel::open(&dir.join(WHEEL_FILE), config.wheel_slots, wheel_usable)?;
        let (mut state, replay_from) = Replayed::from_checkpoint(checkpoint.as_ref(), &mut log);
        let segment_bytes = config.log_segment_bytes as i64;
        let scan_from = if loaded {
            replay_from
        } else {
            log.start().min(replay_from)
        };
        replay(
            &mut log,
            &mut wheel,
            scan_from,
            replay_from,
            replay_from,
            &mut state,
            segment_bytes,
        )?;
        let mut rebuilt = !loaded && log.end() > log.start();
        let floor = state.floor();
        let floor_second = floor.0.div_euclid(1000);
        if !wheel_is_consistent(&wheel, &log, floor_second) {
            rebuild_wheel(&dir, &mut log, &mut wheel, floor_second, segment_bytes)?;
            rebuilt = true;
        }
        let recovery = TimerRecovery {
            pending: state.pending,
            ingested_end: state.ingested_end,
            delivered_floor_ms: floor.0,
            in_doubt_through_ms: state.handout.map(|k| k.0),
            replayed_records: state.records,
            wheel_rebuilt: rebuilt,
        };
        let store = TimerStore::recovered(dir, config, log, wheel, floor, state);
        Ok((store, recovery))
    }

    /// The store as recovery left it, delivering from `floor` on.
    fn recovered(
        dir: PathBuf,
        config: TimerConfig,
        log: TimerLog,
        wheel: Wheel,
        floor: Key,
        mut state: Replayed,
    ) -> Self {
        TimerStore {
            dir,
            config,
            log,
            wheel,
            floor,
            ahead: state.ahead.split_off(&floor),
            ready: Default::default(),
            loaded_through: floor.0.div_euclid(1000),
            handout: state.handout,
            in_doubt_through: state.handout,
            in_doubt_below_offset: i64::MAX,
            ingested_end: state.ingested_end,
            pending: state.pending,
            truncations: state.truncations,
            next_due: Cell::new(None),
            changed: true,
        }
    }
}
