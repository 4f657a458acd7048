//! On the transaction shard: ending a half message exactly once, by the
//! producer's END_TRANSACTION or by the check-back: commit stores a copy in
//! its real topic, rollback stores nothing, both write an op record.

use std::rc::Rc;
use std::time::{Duration, Instant};

use ferrocket_protocol::codes::response_code;
use ferrocket_protocol::properties::{self, Properties};
use ferrocket_protocol::record::{sys_flag, NewRecord};
use ferrocket_runtime::shard::ShardCall;

use crate::clock::now_ms;
use crate::error::Reject;
use crate::services::append::tag_hash;
use crate::services::records::{read_record_through, try_read_record_through, view, Target};
use crate::services::topics::OP_TOPIC;
use crate::services::transaction::{ingest, Half};
use crate::services::transaction::{TxnService, HALF_ARRIVAL_WAIT_MS, OP_TAG};
use crate::shard::Shard;

/// How often END_TRANSACTION looks for a half message not yet dispatched.
const HALF_ARRIVAL_POLL_MS: u64 = 5;

/// `EndTransactionRequestHeader`, as the transaction shard needs it.
#[derive(Debug, Clone)]
pub(crate) struct EndTxnRequest {
    pub producer_group: String,
    /// The half message's queue offset.
    pub tran_state_table_offset: i64,
    /// The half message's CommitLog offset.
    pub commit_log_offset: i64,
    /// 8 commit, 12 rollback, 0 unknown.
    pub commit_or_rollback: i32,
    pub from_transaction_check: bool,
    pub msg_id: String,
}

/// END_TRANSACTION travels to the transaction shard as itself.
impl ShardCall<Shard> for EndTxnRequest {
    type Reply = Result<(), Reject>;

    async fn run(self, shard: Rc<Shard>) -> Self::Reply {
        end_owned(&shard, self).await
    }
}

/// On the transaction shard: ends one half message.
pub(crate) async fn end_owned(shard: &Rc<Shard>, end: EndTxnRequest) -> Result<(), Reject> {
    let txn = shard
        .services
        .txn
        .get()
        .cloned()
        .ok_or_else(|| Reject::system("transactions are not on this shard"))?;
    txn.wait_ready().await;
    let offset = end.tran_state_table_offset;
    let half = take_pending(shard, &txn, offset).await?;
    let Some(half) = half else {
        tracing::debug!(offset, msg_id = %end.msg_id, "half message already ended");
        return Ok(());
    };
    if half.physical_offset != end.commit_log_offset {
        restore(&txn, offset, half);
        return Err(Reject::system("The commit log offset wrong"));
    }
    if half.group != end.producer_group {
        restore(&txn, offset, half);
        return Err(Reject::system("The producer group wrong"));
    }
    let commit = end.commit_or_rollback == sys_flag::TRANSACTION_COMMIT;
    let topic = real_topic(shard, half.physical_offset).await;
    match settle(shard, &txn, offset, &half, commit).await {
        Ok(()) => {
            let age_s = (now_ms() - half.store_ms).max(0) as f64 / 1_000.0;
            let topic = topic.as_deref().unwrap_or("");
            shard.metrics().count_end_transaction(topic, commit, age_s);
            Ok(())
        }
        Err(reject) => {
            restore(&txn, offset, half);
            Err(reject)
        }
    }
}

/// Takes the half message at `offset` out of the pending set (waiting
/// briefly for its dispatch). `None`: it is already ended.
async fn take_pending(
    shard: &Shard,
    txn: &TxnService,
    offset: i64,
) -> Result<Option<Half>, Reject> {
    let deadline = Instant::now() + Duration::from_millis(HALF_ARRIVAL_WAIT_MS);
    loop {
        ingest(txn, &shard.store, shard.config().transaction_timeout_ms).await?;
        {
            let mut state = txn.state.borrow_mut();
            if let Some(half) = state.pending.remove(&offset) {
                // Ended from now on: a second END_TRANSACTION does nothing.
                state.ended.insert(offset);
                return Ok(Some(half));
            }
            if state.is_ended(offset) {
                return Ok(None);
            }
        }
        if Instant::now() >= deadline {
            return Err(Reject::system("Find prepared transaction message failed"));
        }
        glommio::timer::sleep(Duration::from_millis(HALF_ARRIVAL_POLL_MS)).await;
    }
}

/// Puts a half message back after a failed end.
fn restore(txn: &TxnService, offset: i64, half: Half) {
    let mut state = txn.state.borrow_mut();
    state.ended.remove(&offset);
    state.pending.insert(offset, half);
}

/// Where a committed half message goes must pass the same check as any
/// broker-made copy (`schedule::check_real_target`); one that fails is
/// refused and counted, and the half message stays for the checker.
async fn check_commit_target(shard: &Shard, topic: &str, queue_id: i32) -> Result<(), Reject> {
    match shard.check_real_target(topic, queue_id).await {
        Ok(()) => Ok(()),
        Err(crate::services::delivery::DeliverError::Store(reject)) => Err(reject),
        Err(crate::services::delivery::DeliverError::Invalid(reason)) => {
            shard.count_skipped_redelivery();
            tracing::warn!(%reason, "a half message cannot be committed to its real topic");
            Err(Reject::new(response_code::MESSAGE_ILLEGAL, reason))
        }
    }
}

/// Commits (stores the real message) or rolls back, then writes the op
/// record.
pub(crate) async fn settle(
    shard: &Shard,
    txn: &TxnService,
    offset: i64,
    half: &Half,
    commit: bool,
) -> Result<(), Reject> {
    if commit {
        // Read through tiered storage: a store error is answered (the
        // half message stays pending; a check-back settles it later).
        let record = try_read_record_through(&shard.store, half.physical_offset)
            .await?
            .ok_or_else(|| Reject::system("Find prepared transaction message failed"))?;
        let held = view(&record)?;
        let mut props = held.properties();
        let real_topic = props.remove(properties::REAL_TOPIC);
        let real_queue = props
            .remove(properties::REAL_QID)
            .and_then(|q| q.trim().parse::<i32>().ok());
        let (Some(real_topic), Some(real_queue)) = (real_topic, real_queue) else {
            return Err(Reject::system(
                "the half message has no REAL_TOPIC/REAL_QID",
            ));
        };
        check_commit_target(shard, &real_topic, real_queue).await?;
        props.remove(properties::TRAN_MSG);
        let flag = sys_flag::with_transaction_type(held.sys_flag, sys_flag::TRANSACTION_COMMIT);
        // A committed message with a timer or a delay level is held until
        // due, as any sent one (Java's handleScheduleMessage on commits).
        let timer = crate::services::routing::route_send(
            &shard.config(),
            &real_topic,
            real_queue,
            flag,
            &mut props,
            now_ms(),
        )
        .unwrap_or(None);
        let delayed = match &timer {
            Some(_) => None,
            None => crate::services::delivery::redirect_delayed(
                &shard.schedule().levels,
                &mut props,
                &real_topic,
                real_queue,
                flag,
            ),
        };
        let (topic, queue_id) = match (&timer, &delayed) {
            (Some(to), _) => (to.topic, to.queue_id),
            (None, Some(to)) => (to.topic, to.queue_id),
            (None, None) => (real_topic.as_str(), real_queue),
        };
        let target = Target {
            topic,
            queue_id,
            sys_flag: flag,
            prepared_transaction_offset: half.physical_offset,
            properties: &props,
        };
        shard.append_copy(&held, &target).await?;
    }
    match append_op(shard, offset).await {
        Ok(op_offset) => txn.state.borrow_mut().note_op(op_offset, offset),
        Err(reject) if commit => {
            // The commit is stored; keep the half message ended in memory.
            tracing::error!(
                offset,
                remark = %reject.remark,
                "op record not stored after a commit; a restart may check this half message again"
            );
        }
        Err(reject) => return Err(reject),
    }
    tracing::debug!(offset, commit, "transaction ended");
    Ok(())
}

/// The topic a half message was sent to (its REAL_TOPIC), for metrics.
async fn real_topic(shard: &Shard, physical_offset: i64) -> Option<String> {
    let record = read_record_through(&shard.store, physical_offset).await?;
    let held = view(&record).ok()?;
    held.properties().remove(properties::REAL_TOPIC)
}

/// Stores the op record for half offset `offset`; returns its queue offset.
async fn append_op(shard: &Shard, offset: i64) -> Result<i64, Reject> {
    let mut props = Properties::new();
    props.insert(properties::TAGS, OP_TAG);
    let props_bytes = props.to_bytes();
    let body = offset.to_string();
    let now = now_ms();
    let record = NewRecord {
        topic: OP_TOPIC,
        queue_id: 0,
        flag: 0,
        sys_flag: 0,
        born_timestamp_ms: now,
        born_host: shard.env.store_host,
        store_timestamp_ms: now,
        store_host: shard.env.store_host,
        reconsume_times: 0,
        prepared_transaction_offset: 0,
        body: body.as_bytes(),
        properties: &props_bytes,
    };
    Ok(shard
        .store_record(&record, tag_hash(&props))
        .await?
        .queue_offset)
}
