//! Transactions on an acting slave (Java's `TransactionalMessageServiceImpl
//! .check` on a slave holding the set's lowest id, with
//! `enableRemoteEscape`): the slave cannot write op records or commits, so
//! each open half message is sent, still open, to another set's master
//! (`acting_escape::escape_half`), at once and not after
//! `transactionTimeOut`, as Java does; that set checks it back with the
//! producer. END_TRANSACTION to the slave is refused (SLAVE_NOT_AVAILABLE).
//!
//! The half messages sent are remembered for the returning master
//! (`tasks::acting_hand_back`), which ends them as rolled back here (they
//! live on in the other set): Java's master checks them back again and may
//! commit them a second time.

use std::rc::Rc;
use std::time::Duration;

use crate::services::records::{try_read_record_through, view};
use crate::services::transaction::{Half, SavedState, TxnService, TxnState};
use crate::shard::transactions::settle;
use crate::shard::Shard;

/// Pause between rounds while acting.
const ROUND_MS: u64 = 1_000;

/// An acting slave's loop on the transaction shard: while it acts, reads
/// the half and op queues (afresh at each start of acting: its master
/// wrote op records in between) and escapes the open half messages.
pub(crate) async fn run(shard: Rc<Shard>, txn: Rc<TxnService>) {
    let mut recovered = false;
    loop {
        let pause = Duration::from_millis(ROUND_MS);
        if shard.stopping().interrupts_sleep(pause).await {
            return;
        }
        if !shard.env().acting.is_acting() {
            recovered = false;
            continue;
        }
        if !recovered {
            *txn.state.borrow_mut() = TxnState::from_saved(SavedState::default());
            if let Err(reject) = super::recover::recover(&shard, &txn).await {
                tracing::warn!(remark = %reject.remark, "an acting slave could not read its transactions");
                continue;
            }
            recovered = true;
        }
        let timeout_ms = shard.config().transaction_timeout_ms;
        crate::services::transaction::ingest_all(&txn, shard.store(), timeout_ms).await;
        escape_round(&shard, &txn).await;
    }
}

/// Sends every open half message to another set; stops at the first that
/// fails (tried again next round) or when the slave stops acting.
async fn escape_round(shard: &Shard, txn: &TxnService) {
    let pending: Vec<(i64, i64)> = (txn.state.borrow().pending.iter())
        .map(|(offset, half)| (*offset, half.physical_offset))
        .collect();
    for (offset, physical_offset) in pending {
        let Some(flight) = shard.env().acting.flight() else {
            return;
        };
        // Through tiered storage; a store error ends the round.
        let record = match try_read_record_through(shard.store(), physical_offset).await {
            Ok(Some(record)) => record,
            Ok(None) => continue,
            Err(reject) => {
                crate::tasks::acting_escape::report_failure(0, offset, &reject);
                return;
            }
        };
        let Ok(held) = view(&record) else {
            continue;
        };
        match crate::tasks::acting_escape::escape_half(shard, &held).await {
            Ok(()) => {
                let mut state = txn.state.borrow_mut();
                state.pending.remove(&offset);
                state.ended.insert(offset);
                txn.note_escaped(offset);
                tracing::debug!(offset, "an open half message went to another set");
            }
            Err(reject) => {
                crate::tasks::acting_escape::report_failure(0, offset, &reject);
                return;
            }
        }
        drop(flight);
    }
}

/// A returning master: ends, as rolled back, the half messages its acting
/// slave sent to another set (written as op records, so for good).
pub(super) async fn end_escaped(shard: &Shard, txn: &TxnService, offsets: Vec<i64>) {
    for offset in offsets {
        let taken: Option<Half> = {
            let mut state = txn.state.borrow_mut();
            let taken = state.pending.remove(&offset);
            if taken.is_some() {
                state.ended.insert(offset);
            }
            taken
        };
        let Some(taken) = taken else {
            continue;
        };
        tracing::info!(
            offset,
            "half message handed to another set by the acting slave; ended here"
        );
        if let Err(reject) = settle(shard, txn, offset, &taken, false).await {
            tracing::error!(offset, remark = %reject.remark, "ending an escaped half message failed");
            let mut state = txn.state.borrow_mut();
            state.ended.remove(&offset);
            state.pending.insert(offset, taken);
        }
    }
}
