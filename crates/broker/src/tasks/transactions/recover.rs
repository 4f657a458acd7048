//! Transaction recovery at start: reads the op queue from the saved floor
//! (through the op queue's owner), then the half queue, and rebuilds the
//! pending set.

use ferrocket_protocol::codes::response_code;
use ferrocket_protocol::record::records;

use crate::error::Reject;
use crate::services::filter::TagFilter;
use crate::services::pull::PullQuery;
use crate::services::topics::OP_TOPIC;
use crate::services::transaction::{op_body_offsets, TxnService, SYSTEM_GROUP};
use crate::shard::Shard;

/// Most op messages one read of the op queue asks for.
const OP_READ_MESSAGES: usize = 32;
/// Most bytes one read of the op queue asks for.
const OP_READ_BYTES: usize = 1024 * 1024;

/// Reads the op queue from the saved op floor and marks the half messages
/// it names as ended.
pub(crate) async fn recover(shard: &Shard, txn: &TxnService) -> Result<(), Reject> {
    let mut offset = txn.state.borrow().next_op;
    let owner = shard.owner_of(OP_TOPIC, 0);
    let mut read = 0usize;
    loop {
        let query = PullQuery {
            group: SYSTEM_GROUP.to_string(),
            topic: OP_TOPIC.to_string(),
            queue_id: 0,
            queue_offset: offset,
            max_messages: OP_READ_MESSAGES,
            max_bytes: OP_READ_BYTES,
            filter: TagFilter::All,
            commit_offset: None,
            suspend_ms: 0,
            client_gone: None,
        };
        let answer = shard.call(owner, query).await?;
        match answer.code {
            response_code::SUCCESS => {
                let mut state = txn.state.borrow_mut();
                for record in records(&answer.body, false) {
                    let record = record.map_err(|e| Reject::system(e.to_string()))?;
                    for half in op_body_offsets(record.body) {
                        state.note_op(record.queue_offset, half);
                        state.ended.insert(half);
                        read += 1;
                    }
                }
                offset = answer.next_begin_offset;
            }
            response_code::PULL_RETRY_IMMEDIATELY | response_code::PULL_OFFSET_MOVED
                if answer.next_begin_offset != offset =>
            {
                offset = answer.next_begin_offset;
            }
            _ => break,
        }
    }
    {
        let mut state = txn.state.borrow_mut();
        state.next_op = state.next_op.max(offset);
    }
    crate::services::transaction::ingest_all(
        txn,
        shard.store(),
        shard.config().transaction_timeout_ms,
    )
    .await;
    tracing::info!(
        op_records = read,
        pending = txn.pending_count(),
        "transaction state recovered"
    );
    Ok(())
}
