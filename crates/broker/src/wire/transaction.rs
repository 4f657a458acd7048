//! END_TRANSACTION (37) (`EndTransactionProcessor`): checks the producer's
//! answer and forwards it to the transaction shard, which decides each half
//! message once (`shard::transactions`).

use crate::error::Reject;
use crate::services::records::{try_read_record_through, view};
use crate::services::topics::txn_shard;
use crate::shard::transactions::EndTxnRequest;
use crate::shard::Shard;
use ferrocket_protocol::codes::response_code;
use ferrocket_protocol::properties::REAL_TOPIC;
use ferrocket_protocol::record::sys_flag;
use ferrocket_protocol::RemotingCommand;
use ferrocket_runtime::server::Connection;
use std::rc::Rc;

/// END_TRANSACTION on the receiving shard.
pub(crate) async fn end_transaction(
    shard: &Rc<Shard>,
    conn: &Connection,
    request: &RemotingCommand,
) -> Result<RemotingCommand, Reject> {
    let fields = &request.ext_fields;
    let end = EndTxnRequest {
        producer_group: fields.required("producerGroup")?.to_string(),
        tran_state_table_offset: fields.required_i64("tranStateTableOffset")?,
        commit_log_offset: fields.required_i64("commitLogOffset")?,
        commit_or_rollback: fields.required_i32("commitOrRollback")?,
        from_transaction_check: fields.get_bool("fromTransactionCheck").unwrap_or(false),
        msg_id: fields.get("msgId").unwrap_or("").to_string(),
    };
    // Java's `EndTransactionProcessor`: a slave, acting master or not,
    // ends nothing (an acting slave sends open half messages to another
    // set, which checks them back).
    if shard.config().replication.broker_role.is_slave() {
        return Err(Reject::new(
            response_code::SLAVE_NOT_AVAILABLE,
            "Message store is slave mode, so end transaction is forbidden.",
        ));
    }
    let kind = end.commit_or_rollback;
    if kind != sys_flag::TRANSACTION_COMMIT && kind != sys_flag::TRANSACTION_ROLLBACK {
        // Unknown (or anything else): the half message stays for check-back.
        tracing::debug!(
            msg_id = %end.msg_id,
            kind,
            from_check = end.from_transaction_check,
            "transaction state unknown; left for check-back"
        );
        return Ok(RemotingCommand::response_to(
            request,
            response_code::SUCCESS,
            None,
        ));
    }
    check_half_topic(shard, conn, request, end.commit_log_offset).await?;
    let target = txn_shard(shard.count());
    shard.call(target, end).await??;
    Ok(RemotingCommand::response_to(
        request,
        response_code::SUCCESS,
        None,
    ))
}

/// With an ACL on, the caller must have PUB on the topic the half message
/// at `offset` would be committed to (`ferrocket_acl::stored`): the
/// request names only an offset. A missing record is the transaction
/// shard's answer to give.
async fn check_half_topic(
    shard: &Shard,
    conn: &Connection,
    request: &RemotingCommand,
    offset: i64,
) -> Result<(), Reject> {
    if !crate::shard::access::stored_checks_on(shard) {
        return Ok(());
    }
    // Read through tiered storage: an offloaded half message is checked
    // too (a store error is answered; the producer's check-back retries).
    let Some(record) = try_read_record_through(shard.store(), offset).await? else {
        return Ok(());
    };
    let view = view(&record)?;
    let properties = view.properties();
    let topic = properties.get(REAL_TOPIC).unwrap_or(view.topic);
    crate::shard::access::check_stored(shard, conn, request, topic)
}
