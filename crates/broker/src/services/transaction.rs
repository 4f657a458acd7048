//! The transaction shard's view of half messages: which are pending, which
//! are ended, and how far the half and op queues are settled; loading and
//! saving that state, and ingestion from the half queue.

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::Duration;

use ferrocket_protocol::properties;
use ferrocket_runtime::sync::Notify;
use ferrocket_store::{ConfigDir, FailureLevel, RepeatedFailure, ShardStore};
use serde::{Deserialize, Serialize};

use crate::error::Reject;
use crate::services::records::{read_record, try_read_record_through, view};
use crate::services::topics::HALF_TOPIC;

/// Half-queue entries ingested per step.
const INGEST_BATCH_MAX: usize = 1_024;

/// `config/transactionState.json`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct SavedState {
    /// Every half message below this queue offset is ended.
    pub half_offset: i64,
    /// Op records below this queue offset concern only ended half messages
    /// below `half_offset`.
    pub op_offset: i64,
    /// Checks sent so far, by half queue offset.
    pub check_times: BTreeMap<i64, u32>,
}

/// A half message not yet ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Half {
    pub physical_offset: i64,
    pub store_ms: i64,
    /// PGROUP: the producer group asked on check-back.
    pub group: String,
    pub check_times: u32,
    /// Not checked before this long after it was stored
    /// (CHECK_IMMUNITY_TIME_IN_SECONDS, at least `transactionTimeOut`).
    pub immunity_ms: i64,
}

#[derive(Debug, Default)]
pub(crate) struct TxnState {
    /// By half queue offset.
    pub pending: BTreeMap<i64, Half>,
    /// Ended half offsets at or above the floor.
    pub ended: BTreeSet<i64>,
    /// Next half queue offset to ingest.
    pub next_half: i64,
    /// Op queue offset -> half offset, for op records at or past the op floor.
    pub ops: BTreeMap<i64, i64>,
    /// Op queue offset after the newest known op record.
    pub next_op: i64,
    /// Check counts loaded from the file, for half messages not ingested yet.
    saved_checks: HashMap<i64, u32>,
}

impl TxnState {
    pub fn from_saved(saved: SavedState) -> Self {
        Self {
            next_half: saved.half_offset.max(0),
            next_op: saved.op_offset.max(0),
            saved_checks: saved.check_times.into_iter().collect(),
            ..Self::default()
        }
    }

    /// Every half message below this is ended.
    pub fn half_floor(&self) -> i64 {
        self.pending
            .keys()
            .next()
            .copied()
            .unwrap_or(self.next_half)
    }

    /// Whether the half message at `offset` is known to be ended.
    pub fn is_ended(&self, offset: i64) -> bool {
        self.ended.contains(&offset) || (offset < self.half_floor() && offset < self.next_half)
    }

    /// Records an op record (durable end of `half`).
    pub fn note_op(&mut self, op_offset: i64, half: i64) {
        self.ops.insert(op_offset, half);
        self.next_op = self.next_op.max(op_offset + 1);
    }

    /// Forgets what the floors have passed; returns the op floor.
    fn settle(&mut self) -> i64 {
        let floor = self.half_floor();
        self.ended = self.ended.split_off(&floor);
        while let Some((&op, &half)) = self.ops.first_key_value() {
            if half >= floor {
                return op;
            }
            self.ops.remove(&op);
        }
        self.next_op
    }

    pub fn settle_and_save(&mut self) -> SavedState {
        let op_offset = self.settle();
        SavedState {
            half_offset: self.half_floor(),
            op_offset,
            check_times: self
                .pending
                .iter()
                .filter(|(_, half)| half.check_times > 0)
                .map(|(offset, half)| (*offset, half.check_times))
                .collect(),
        }
    }
}

/// The half queue offsets an op record's body names ("12" or "12,13").
pub(crate) fn op_body_offsets(body: &[u8]) -> Vec<i64> {
    std::str::from_utf8(body)
        .unwrap_or("")
        .split(',')
        .filter_map(|part| part.trim().parse::<i64>().ok())
        .collect()
}

/// File (under `config/`) with the transaction floors and check counts.
pub const STATE_FILE: &str = "transactionState.json";
/// Tag of op records (`TransactionalMessageUtil.REMOVE_TAG`).
pub const OP_TAG: &str = "d";
/// Consumer group name used to read the op queue (`CID_SYS_RMQ_TRANS`).
pub const SYSTEM_GROUP: &str = "CID_RMQ_SYS_TRANS";
/// How long END_TRANSACTION waits for its half message to be dispatched.
pub const HALF_ARRIVAL_WAIT_MS: u64 = 3_000;
/// How often a request waiting for recovery looks again.
const READY_POLL_MS: u64 = 10;

/// The transaction shard's state.
pub(crate) struct TxnService {
    pub state: RefCell<TxnState>,
    pub wake: Notify,
    /// Set once recovery has rebuilt the pending set.
    pub ready: Cell<bool>,
    persist_failures: RepeatedFailure,
    /// An acting slave: half queue offsets sent to another set, for the
    /// returning master (`tasks::acting_hand_back`).
    escaped: RefCell<Vec<i64>>,
}

impl TxnService {
    /// Loads the saved floors; the pending set is rebuilt by [`run`].
    pub fn open(config_dir: &ConfigDir) -> Result<Self, String> {
        let saved = config_dir
            .read_json::<SavedState>(STATE_FILE)
            .map_err(|err| format!("{STATE_FILE}: {err}"))?
            .unwrap_or_default();
        Ok(Self {
            state: RefCell::new(TxnState::from_saved(saved)),
            wake: Notify::default(),
            ready: Cell::new(false),
            persist_failures: RepeatedFailure::new(
                "persisting transaction state",
                FailureLevel::Error,
            ),
            escaped: RefCell::new(Vec::new()),
        })
    }

    pub fn wake(&self) {
        self.wake.notify();
    }

    /// An acting slave sent the half message at `offset` to another set.
    pub fn note_escaped(&self, offset: i64) {
        self.escaped.borrow_mut().push(offset);
    }

    /// What this slave sent elsewhere while acting, taken for the master.
    pub fn take_escaped(&self) -> Vec<i64> {
        std::mem::take(&mut *self.escaped.borrow_mut())
    }

    /// Waits until recovery is done.
    pub async fn wait_ready(&self) {
        while !self.ready.get() {
            glommio::timer::sleep(Duration::from_millis(READY_POLL_MS)).await;
        }
    }

    /// Half messages not yet ended.
    pub fn pending_count(&self) -> usize {
        self.state.borrow().pending.len()
    }

    /// Writes the floors and check counts to `config/transactionState.json`.
    pub async fn persist(&self, config_dir: &ConfigDir) {
        if !self.ready.get() {
            return;
        }
        let saved = self.state.borrow_mut().settle_and_save();
        let dir = config_dir.clone();
        let written = glommio::executor()
            .spawn_blocking(move || dir.write_json(STATE_FILE, &saved))
            .await;
        self.persist_failures.record(&written);
    }
}

/// Takes every new half-queue entry into the pending set (up to one whose
/// half message object storage failed to give: logged, taken next time).
pub(crate) async fn ingest_all(txn: &TxnService, store: &ShardStore, timeout_ms: u64) {
    loop {
        match ingest(txn, store, timeout_ms).await {
            Ok(looked) if looked >= INGEST_BATCH_MAX => {}
            Ok(_) => return,
            Err(reject) => {
                tracing::warn!(remark = %reject.remark, "half message not readable yet; retrying");
                return;
            }
        }
    }
}

/// Times a batch stopped at an offloaded half message is fetched again
/// before the store's error is answered (the read-through cache may let
/// it go between the fetch and the batch).
const OFFLOADED_FETCH_TRIES: usize = 3;

/// Takes up to [`INGEST_BATCH_MAX`] new half-queue entries into the
/// pending set; returns how many it looked at. A half message offloaded
/// to object storage is brought back first (off this executor; the batch
/// stops before it and starts again): an error when the store failed.
pub(crate) async fn ingest(
    txn: &TxnService,
    store: &ShardStore,
    timeout_ms: u64,
) -> Result<usize, Reject> {
    let mut last = (-1, 0);
    loop {
        match ingest_local(txn, store, timeout_ms) {
            Ingested::Looked(looked) => return Ok(looked),
            Ingested::Offloaded(physical_offset) => {
                let tries = if last.0 == physical_offset {
                    last.1 + 1
                } else {
                    1
                };
                if tries > OFFLOADED_FETCH_TRIES {
                    return Err(Reject::system(
                        "half message from object storage not kept in the read cache",
                    ));
                }
                last = (physical_offset, tries);
                try_read_record_through(store, physical_offset).await?;
            }
        }
    }
}

/// What one pass over the half queue did.
enum Ingested {
    /// It looked at this many entries.
    Looked(usize),
    /// It stopped before the half message at this CommitLog offset, which
    /// only object storage holds.
    Offloaded(i64),
}

fn ingest_local(txn: &TxnService, store: &ShardStore, timeout_ms: u64) -> Ingested {
    let Ok(queue) = store.consume_queue(HALF_TOPIC, 0) else {
        return Ingested::Looked(0);
    };
    let timeout_ms = i64::try_from(timeout_ms).unwrap_or(i64::MAX);
    let mut state = txn.state.borrow_mut();
    let start = state.next_half.max(queue.min_offset());
    let entries = queue.get(start, INGEST_BATCH_MAX);
    let mut next = start;
    for entry in &entries {
        let offset = next;
        next += 1;
        if state.ended.contains(&offset) {
            continue;
        }
        if entry.is_lost() {
            tracing::error!(
                offset,
                "half message lost in a damaged CommitLog range; treating it as ended"
            );
            state.ended.insert(offset);
            continue;
        }
        let Some(record) = read_record(store, entry.physical_offset) else {
            if store.reader().is_offloaded(entry.physical_offset) {
                state.next_half = offset;
                return Ingested::Offloaded(entry.physical_offset);
            }
            tracing::error!(offset, "half message unreadable; treating it as ended");
            state.ended.insert(offset);
            continue;
        };
        let Ok(half) = view(&record) else {
            state.ended.insert(offset);
            continue;
        };
        let props = half.properties();
        let immunity_ms = props
            .get(properties::CHECK_IMMUNITY_TIME_IN_SECONDS)
            .and_then(|v| v.trim().parse::<i64>().ok())
            .map_or(timeout_ms, |s| s.saturating_mul(1000).max(timeout_ms));
        let check_times = state.saved_checks.remove(&offset).unwrap_or(0);
        state.pending.insert(
            offset,
            Half {
                physical_offset: entry.physical_offset,
                store_ms: half.store_timestamp_ms,
                group: props.get(properties::PGROUP).unwrap_or("").to_string(),
                check_times,
                immunity_ms,
            },
        );
    }
    state.next_half = next;
    Ingested::Looked(entries.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn half() -> Half {
        Half {
            physical_offset: 0,
            store_ms: 0,
            group: "G".into(),
            check_times: 2,
            immunity_ms: 0,
        }
    }

    #[test]
    fn floors_follow_ended_half_messages() {
        let mut state = TxnState::from_saved(SavedState::default());
        state.next_half = 4;
        state.pending.insert(1, half());
        state.pending.insert(3, half());
        state.ended.extend([0, 2]);
        state.note_op(0, 0);
        state.note_op(1, 2);
        assert_eq!(state.half_floor(), 1);
        assert!(state.is_ended(0) && state.is_ended(2) && !state.is_ended(1));
        let saved = state.settle_and_save();
        assert_eq!(saved.half_offset, 1);
        // Op 0 names half 0 (below the floor); op 1 names half 2.
        assert_eq!(saved.op_offset, 1);
        assert_eq!(saved.check_times.get(&1), Some(&2));
        state.pending.clear();
        state.ended.extend([1, 3]);
        state.note_op(2, 1);
        state.note_op(3, 3);
        let saved = state.settle_and_save();
        assert_eq!((saved.half_offset, saved.op_offset), (4, 4));
        assert!(state.ended.is_empty() && state.ops.is_empty());
    }

    #[test]
    fn op_bodies_name_one_or_more_offsets() {
        assert_eq!(op_body_offsets(b"12"), vec![12]);
        assert_eq!(op_body_offsets(b"1,2, 3"), vec![1, 2, 3]);
        assert!(op_body_offsets(b"x").is_empty());
    }

    #[test]
    fn saved_state_round_trips_as_json() {
        let saved = SavedState {
            half_offset: 5,
            op_offset: 7,
            check_times: [(6, 3)].into_iter().collect(),
        };
        let json = serde_json::to_string(&saved).unwrap();
        assert!(json.contains("\"halfOffset\":5"), "{json}");
        assert_eq!(serde_json::from_str::<SavedState>(&json).unwrap(), saved);
    }
}
