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

pub(crate) mod acting;
mod check;
mod discard;

mod recover;

use std::rc::Rc;
use std::time::Duration;

use futures_lite::future;

use crate::services::transaction::TxnService;

use crate::shard::Shard;

/// The transaction loop: recover, then ingest half messages as they are
/// dispatched and check old ones every `transactionCheckInterval`.
pub(crate) async fn run(shard: Rc<Shard>, txn: Rc<TxnService>) {
    if let Err(reject) = recover::recover(&shard, &txn).await {
        tracing::error!(remark = %reject.remark, "transaction recovery failed; starting from the half queue only");
    }
    // A master whose slaves may have acted: end what they sent elsewhere.
    while shard.env().acting.awaiting_hand_back() {
        if shard
            .stopping()
            .interrupts_sleep(Duration::from_millis(50))
            .await
        {
            return;
        }
    }
    acting::end_escaped(&shard, &txn, shard.env().acting.take_handed_txns()).await;
    txn.ready.set(true);
    let interval = Duration::from_millis(shard.config().transaction_check_interval_ms);
    let mut next_check = std::time::Instant::now() + interval;
    loop {
        crate::services::transaction::ingest_all(
            &txn,
            shard.store(),
            shard.config().transaction_timeout_ms,
        )
        .await;
        if std::time::Instant::now() >= next_check {
            check::check_round(&shard, &txn).await;
            txn.persist(&shard.env().config_dir).await;
            next_check = std::time::Instant::now() + interval;
        }
        let wait = next_check.saturating_duration_since(std::time::Instant::now());
        let wake = future::or(txn.wake.wait(), glommio::timer::sleep(wait));
        if shard.stopping().interrupts(wake).await {
            return;
        }
    }
}
