//! How every record the broker stores is built: a client's send or batch
//! item, a retry copy, a delayed or timer message delivered to its real
//! topic, a committed half message, a check-back copy and a transaction op
//! record all become a [`NewRecord`] here and are encoded once, into the
//! bytes the appender writes (`Shard::append` then stores and counts them).

use std::net::SocketAddr;

use bytes::BytesMut;
use ferrocket_protocol::properties::{tags_code, Properties};
use ferrocket_protocol::record::{NewRecord, RecordView};

use crate::error::Reject;

/// The TAGS hash of a message (0 without tags), as the ConsumeQueue keeps it.
pub(crate) fn tag_hash(props: &Properties) -> i64 {
    props.tags().filter(|t| !t.is_empty()).map_or(0, tags_code)
}

/// Encodes `record` into a buffer of exactly its size.
pub(crate) fn encode(record: &NewRecord<'_>) -> Result<BytesMut, Reject> {
    let mut encoded = BytesMut::with_capacity(record.encoded_len());
    encode_into(record, &mut encoded)?;
    Ok(encoded)
}

/// Appends `record`'s encoding to `out` (a batch); answers its size.
pub(crate) fn encode_into(record: &NewRecord<'_>, out: &mut BytesMut) -> Result<usize, Reject> {
    let before = out.len();
    let size = record.encode(0, 0, out)?;
    assert_eq!(out.len() - before, size, "a record encodes to its own size");
    Ok(size)
}

/// A copy of the stored `source` under `topic` / `queue_id` with new
/// `properties`, stored at `store_timestamp_ms` by `store_host`. Body,
/// flag, sysFlag, born time and host, reconsume count and prepared offset
/// are the source's; callers change what their copy changes.
pub(crate) fn copy_of<'a>(
    source: &RecordView<'a>,
    topic: &'a str,
    queue_id: i32,
    properties: &'a [u8],
    store: (i64, SocketAddr),
) -> NewRecord<'a> {
    let (store_timestamp_ms, store_host) = store;
    NewRecord {
        topic,
        queue_id,
        flag: source.flag,
        sys_flag: source.sys_flag,
        born_timestamp_ms: source.born_timestamp_ms,
        born_host: source.born_host,
        store_timestamp_ms,
        store_host,
        reconsume_times: source.reconsume_times,
        prepared_transaction_offset: source.prepared_transaction_offset,
        body: source.body,
        properties,
    }
}
