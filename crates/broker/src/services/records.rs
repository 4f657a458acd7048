//! Reading stored records back, and encoding a copy of a stored message under another topic and queue, with
//! the caller's sysFlag, prepared-transaction offset and properties: a
//! committed half message to its real topic
//! (`EndTransactionProcessor.endMessageTransaction`), and the body of a
//! CHECK_TRANSACTION_STATE. The body, flag, born time and host, reconsume
//! count and the compression bits of the sysFlag are kept as stored.
//! (Due timer messages go through the delay-level scheduler's
//! `schedule::deliver_to_real_topic`, which fixes all of those itself.)

use std::net::SocketAddr;

use bytes::{Bytes, BytesMut};
use ferrocket_protocol::properties::Properties;
use ferrocket_protocol::record::{decode_record, peek_record, NewRecord, RecordPeek, RecordView};
use ferrocket_store::ShardStore;

use crate::clock::now_ms;
use crate::error::Reject;
use crate::services::append::{copy_of, encode};

/// Bytes read to learn a record's size.
const RECORD_HEAD_BYTES: usize = 8;

/// The whole stored record at `physical_offset`, if one starts there.
pub(crate) fn read_record(store: &ShardStore, physical_offset: i64) -> Option<Bytes> {
    if physical_offset < 0 {
        return None;
    }
    let head = store.read_records(physical_offset, RECORD_HEAD_BYTES)?;
    match peek_record(&head) {
        Ok(RecordPeek::Message { total_size, .. }) => {
            store.read_records(physical_offset, total_size)
        }
        _ => None,
    }
}

/// [`read_record`], first bringing an offloaded record back from object
/// storage (tiered storage; the fetch runs off this shard's executor).
pub(crate) async fn read_record_through(store: &ShardStore, physical_offset: i64) -> Option<Bytes> {
    try_read_record_through(store, physical_offset)
        .await
        .ok()
        .flatten()
}

/// [`read_record_through`], telling an object store that failed (an
/// error saying why: the caller retries later, the record is still there)
/// from no record there (`None`). A record on the local disk is read as by
/// [`read_record`], with no more work.
pub(crate) async fn try_read_record_through(
    store: &ShardStore,
    physical_offset: i64,
) -> Result<Option<Bytes>, Reject> {
    if let Some(record) = read_record(store, physical_offset) {
        return Ok(Some(record));
    }
    if physical_offset < 0 || !store.reader().is_offloaded(physical_offset) {
        return Ok(None);
    }
    fetch(store, physical_offset, RECORD_HEAD_BYTES).await?;
    let Some(head) = store.read_records(physical_offset, RECORD_HEAD_BYTES) else {
        return Ok(None);
    };
    if let Ok(RecordPeek::Message { total_size, .. }) = peek_record(&head) {
        fetch(store, physical_offset, total_size).await?;
    }
    Ok(read_record(store, physical_offset))
}

/// `size` CommitLog bytes at `physical_offset` (a ConsumeQueue entry's
/// record), brought back from object storage when offloaded; an error when
/// the store failed (retry later), `None` when nothing is there.
pub(crate) async fn try_read_bytes_through(
    store: &ShardStore,
    physical_offset: i64,
    size: usize,
) -> Result<Option<Bytes>, Reject> {
    if let Some(bytes) = store.read_records(physical_offset, size) {
        return Ok(Some(bytes));
    }
    if physical_offset < 0 || !store.reader().is_offloaded(physical_offset) {
        return Ok(None);
    }
    fetch(store, physical_offset, size).await?;
    Ok(store.read_records(physical_offset, size))
}

async fn fetch(store: &ShardStore, physical_offset: i64, size: usize) -> Result<(), Reject> {
    store
        .fetch_offloaded(physical_offset, size)
        .await
        .map_err(|e| Reject::system(format!("reading from object storage failed: {e}")))
}

/// Decodes a record read by [`read_record`] (without the CRC check: the
/// store checked it on recovery, and the body is passed on as it is).
pub(crate) fn view(bytes: &Bytes) -> Result<RecordView<'_>, Reject> {
    decode_record(bytes, false)
        .map_err(|err| Reject::system(format!("stored record unreadable: {err}")))
}

/// Where and how the copy is stored.
pub(crate) struct Target<'a> {
    pub topic: &'a str,
    pub queue_id: i32,
    pub sys_flag: i32,
    pub prepared_transaction_offset: i64,
    pub properties: &'a Properties,
}

/// Encodes the copy of `source` described by `target`.
pub(crate) fn encode_copy(
    store_host: SocketAddr,
    source: &RecordView<'_>,
    target: &Target<'_>,
) -> Result<BytesMut, Reject> {
    let props = target.properties.to_bytes();
    let record = NewRecord {
        sys_flag: target.sys_flag,
        prepared_transaction_offset: target.prepared_transaction_offset,
        ..copy_of(
            source,
            target.topic,
            target.queue_id,
            &props,
            (now_ms(), store_host),
        )
    };
    encode(&record)
}
