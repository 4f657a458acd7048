//! Check-back (`TransactionalMessageCheckService` and
//! `AbstractTransactionalMessageCheckListener.sendCheckMessage`): each
//! round, every half message open longer than its immunity time gets one
//! CHECK_TRANSACTION_STATE (oneway) on a live connection of its producer
//! group; one already checked `transactionCheckMax` times is copied to
//! `TRANS_CHECK_MAX_TIME_TOPIC` (`discard`) and rolled back.

use bytes::BytesMut;
use ferrocket_protocol::codes::request_code;
use ferrocket_protocol::message_id::offset_msg_id;
use ferrocket_protocol::properties;
use ferrocket_protocol::record::patch_offsets;
use ferrocket_protocol::RemotingCommand;

use crate::clock::now_ms;
use crate::error::Reject;
use crate::services::records::{encode_copy, try_read_record_through, view, Target};
use crate::services::topics::HALF_TOPIC;
use crate::services::transaction::Half;
use crate::services::transaction::TxnService;
use crate::shard::push::send_oneway;
use crate::shard::transactions::settle;
use crate::shard::Shard;

/// Checks one round of open half messages.
pub(super) async fn check_round(shard: &Shard, txn: &TxnService) {
    let now = now_ms();
    let check_max = shard.config().transaction_check_max;
    let due: Vec<(i64, Half)> = txn
        .state
        .borrow()
        .pending
        .iter()
        .filter(|(_, half)| now.saturating_sub(half.store_ms) >= half.immunity_ms)
        .map(|(offset, half)| (*offset, half.clone()))
        .collect();
    for (offset, half) in due {
        // The half message read through tiered storage first: while the
        // object store fails, the check waits (neither counted nor rolled
        // back); read, it stays in the read cache for what follows.
        if let Err(reject) = try_read_record_through(shard.store(), half.physical_offset).await {
            tracing::warn!(offset, remark = %reject.remark, "half message not readable yet; checked later");
            continue;
        }
        if half.check_times >= check_max {
            roll_back_unanswered(shard, txn, offset, &half).await;
            continue;
        }
        // Counted whether or not a producer is there to ask.
        if let Some(entry) = txn.state.borrow_mut().pending.get_mut(&offset) {
            entry.check_times += 1;
        }
        if let Err(reject) = send_check(shard, offset, &half).await {
            tracing::debug!(offset, group = %half.group, remark = %reject.remark, "check-back not sent");
        }
    }
}

async fn roll_back_unanswered(shard: &Shard, txn: &TxnService, offset: i64, half: &Half) {
    let taken = {
        let mut state = txn.state.borrow_mut();
        let taken = state.pending.remove(&offset);
        if taken.is_some() {
            state.ended.insert(offset);
        }
        taken
    };
    let Some(taken) = taken else {
        return;
    };
    tracing::warn!(
        offset,
        group = %half.group,
        checks = half.check_times,
        "half message checked too many times; rolling it back"
    );
    // Kept for operators first; a failure to keep it does not stop the
    // rollback (Java discards it either way).
    match super::discard::keep_discarded(shard, &taken).await {
        Ok(kept_at) => tracing::info!(
            offset,
            kept_at,
            "half message kept in {}",
            super::discard::CHECK_MAX_TIME_TOPIC
        ),
        Err(reject) => tracing::error!(
            offset,
            remark = %reject.remark,
            "keeping a discarded half message failed"
        ),
    }
    if let Err(reject) = settle(shard, txn, offset, &taken, false).await {
        tracing::error!(offset, remark = %reject.remark, "rolling back a half message failed");
        let mut state = txn.state.borrow_mut();
        state.ended.remove(&offset);
        state.pending.insert(offset, taken);
    }
}

/// Sends CHECK_TRANSACTION_STATE for one half message to a connection of
/// its producer group (a different one each check when there are several).
async fn send_check(shard: &Shard, offset: i64, half: &Half) -> Result<(), Reject> {
    let conns: Vec<u64> = shard.clients().with(|clients| {
        clients
            .producers
            .get(&half.group)
            .map(|group| group.values().map(|channel| channel.conn_id).collect())
            .unwrap_or_default()
    });
    if conns.is_empty() {
        return Err(Reject::system(format!(
            "no producer of group {} is connected",
            half.group
        )));
    }
    let conn_id = conns[half.check_times as usize % conns.len()];
    let command = check_command(shard, offset, half).await?;
    send_oneway(shard, conn_id, command).await
}

/// The check request: header `CheckTransactionStateRequestHeader`, body the
/// half message as the producer sent it (real topic and queue, the half
/// message's offsets).
async fn check_command(shard: &Shard, offset: i64, half: &Half) -> Result<RemotingCommand, Reject> {
    let record = try_read_record_through(shard.store(), half.physical_offset)
        .await?
        .ok_or_else(|| Reject::system("half message unreadable"))?;
    let held = view(&record)?;
    let props = held.properties();
    let real_topic = props.get(properties::REAL_TOPIC).unwrap_or(HALF_TOPIC);
    let real_queue = props
        .get(properties::REAL_QID)
        .and_then(|q| q.trim().parse::<i32>().ok())
        .unwrap_or(0);
    let target = Target {
        topic: real_topic,
        queue_id: real_queue,
        sys_flag: held.sys_flag,
        prepared_transaction_offset: held.prepared_transaction_offset,
        properties: &props,
    };
    let mut body: BytesMut = encode_copy(shard.env().store_host, &held, &target)?;
    patch_offsets(&mut body, offset, half.physical_offset);
    let uniq = props.unique_key().unwrap_or("").to_string();
    let mut command = RemotingCommand::request(request_code::CHECK_TRANSACTION_STATE)
        .with_ext("topic", HALF_TOPIC)
        .with_ext("tranStateTableOffset", offset)
        .with_ext("commitLogOffset", half.physical_offset)
        .with_ext("msgId", &uniq)
        .with_ext("transactionId", &uniq)
        .with_ext(
            "offsetMsgId",
            offset_msg_id(shard.env().store_host, half.physical_offset),
        )
        .with_ext("brokerName", &shard.config().broker_name);
    command.body = body.freeze();
    Ok(command)
}
