//! Transactional messages (`TransactionalMessageServiceImpl`,
//! `EndTransactionProcessor`, `TransactionalMessageCheckService`).
//!
//! A half message (sysFlag PREPARED) is stored in
//! `RMQ_SYS_TRANS_HALF_TOPIC` queue 0 with its real topic and queue in
//! REAL_TOPIC / REAL_QID (see `routing`): consumers never see it. Its
//! producer then sends END_TRANSACTION: commit stores a copy in the real
//! topic; rollback stores nothing; both write an **op record** to
//! `RMQ_SYS_TRANS_OP_HALF_TOPIC` queue 0 (tag `d`, body = the half
//! message's queue offset), the durable "this half message is ended".
//! Half messages left open longer than `transactionTimeOut` are checked
//! back every `transactionCheckInterval`: CHECK_TRANSACTION_STATE goes to a
//! live connection of the producer group, which answers with
//! END_TRANSACTION; after `transactionCheckMax` checks the half message is
//! copied to `TRANS_CHECK_MAX_TIME_TOPIC` for operators and rolled back.
//!
//! All of this runs on the transaction shard (owner of the half queue),
//! so one task decides each half message: a half message is taken out of
//! the pending set before its commit is stored, so it is committed at most
//! once however many END_TRANSACTIONs arrive.
//!
//! State after a restart: the op records are the source of truth, as in
//! Java. `config/transactionState.json` keeps the half queue offset below
//! which every half message is ended, the op queue offset from which op
//! records still matter, and the check counts; recovery reads the op queue
//! from there, then the half queue, and rebuilds the pending set.
//! Known window (Java has it too): a crash after a commit is stored and
//! before its op record is leaves the half message open; a later check can
//! then commit it a second time.

mod check;
mod discard;

mod end;
mod state;

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::Duration;

use futures_lite::future;

pub(crate) use end::end_transaction;
use state::TxnState;

use crate::shard::Shard;
use ferrocket_runtime::sync::Notify;

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
    state: RefCell<TxnState>,
    wake: Notify,
    /// Set once recovery has rebuilt the pending set.
    ready: Cell<bool>,
}

impl TxnService {
    /// Loads the saved floors; the pending set is rebuilt by [`run`].
    pub fn open(shard: &Shard) -> Result<Self, String> {
        let saved = shard
            .env
            .config_dir
            .read_json::<state::SavedState>(STATE_FILE)
            .map_err(|err| format!("{STATE_FILE}: {err}"))?
            .unwrap_or_default();
        Ok(Self {
            state: RefCell::new(TxnState::from_saved(saved)),
            wake: Notify::default(),
            ready: Cell::new(false),
        })
    }

    pub fn wake(&self) {
        self.wake.notify();
    }

    /// Waits until recovery is done.
    async fn wait_ready(&self) {
        while !self.ready.get() {
            glommio::timer::sleep(Duration::from_millis(READY_POLL_MS)).await;
        }
    }

    /// Half messages not yet ended.
    pub fn pending_count(&self) -> usize {
        self.state.borrow().pending.len()
    }

    /// Writes the floors and check counts to `config/transactionState.json`.
    pub async fn persist(&self, shard: &Shard) {
        if !self.ready.get() {
            return;
        }
        let saved = self.state.borrow_mut().settle_and_save();
        let dir = shard.env.config_dir.clone();
        let written = glommio::executor()
            .spawn_blocking(move || dir.write_json(STATE_FILE, &saved))
            .await;
        if let Err(err) = written {
            tracing::error!(%err, "persisting transaction state failed");
        }
    }
}

/// The transaction loop: recover, then ingest half messages as they are
/// dispatched and check old ones every `transactionCheckInterval`.
pub(crate) async fn run(shard: Rc<Shard>, txn: Rc<TxnService>) {
    if let Err(reject) = state::recover(&shard, &txn).await {
        tracing::error!(remark = %reject.remark, "transaction recovery failed; starting from the half queue only");
    }
    txn.ready.set(true);
    let interval = Duration::from_millis(shard.config().transaction_check_interval_ms);
    let mut next_check = std::time::Instant::now() + interval;
    loop {
        state::ingest_all(&shard, &txn);
        if std::time::Instant::now() >= next_check {
            check::check_round(&shard, &txn).await;
            txn.persist(&shard).await;
            next_check = std::time::Instant::now() + interval;
        }
        let wait = next_check.saturating_duration_since(std::time::Instant::now());
        let wake = future::or(txn.wake.wait(), glommio::timer::sleep(wait));
        if shard.stopping.interrupts(wake).await {
            return;
        }
    }
}
