//! Connection ids: unique across shards, naming the shard that owns the
//! connection.

use std::cell::Cell;

/// Bit position of the shard index inside a connection id.
pub const CONN_ID_SHARD_SHIFT: u32 = 48;

/// The shard (executor) that owns the connection with this id.
pub fn shard_of_conn_id(conn_id: u64) -> u16 {
    (conn_id >> CONN_ID_SHARD_SHIFT) as u16
}

thread_local! {
    static NEXT_CONN_SEQ: Cell<u64> = const { Cell::new(1) };
}

/// A connection id unique across shards: the shard index in the top 16 bits,
/// a per-thread sequence below.
pub(crate) fn next_conn_id(shard_index: u16) -> u64 {
    let seq = NEXT_CONN_SEQ.with(|next| {
        let seq = next.get();
        next.set(seq.wrapping_add(1) & ((1 << CONN_ID_SHARD_SHIFT) - 1));
        seq
    });
    ((shard_index as u64) << CONN_ID_SHARD_SHIFT) | seq
}
