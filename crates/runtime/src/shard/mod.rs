//! Shards: pinned executors, queue ownership, cross-shard calls, and read
//! copies of control-plane state.
//!
//! - [`executors`]: one glommio `LocalExecutor` per shard, each on its own
//!   thread pinned to a core of the configured list (default: all online
//!   cores; one shard works too).
//! - [`owner`]: `owner_shard(topic, queue_id, shards)`, a stable FNV-1a based
//!   hash, so every shard finds a queue's owner without coordination.
//! - [`mesh`]: a bounded lock-free ring per ordered pair of shards; a shard
//!   forwards a request to the owner and awaits the answer
//!   ([`mesh::Mesh::invoke_on`], Redpanda style).
//! - [`replica`]: per-shard read copies of single-writer tables.
//!
//! Control-plane state (topics, subscription groups) has exactly one writer:
//! shard 0. Other shards forward changes to it over the mesh; it applies
//! them, persists, and sends the new immutable snapshot (`Arc<T>` plus a
//! version) to every shard, answering the change only once every shard
//! installed it, so a client sees its own change on whichever shard it
//! talks to next. We chose per-shard copies updated by message over a
//! process-wide `Arc`-swap cell: reads are the hot path (every send and pull
//! looks up its topic), and a local copy costs no atomic read-modify-write
//! on a cache line shared by all cores, while changes are rare enough that
//! a broadcast per change costs nothing measurable.

pub mod call;
pub mod executors;
pub mod master;
pub mod mesh;
mod oneshot;
pub mod owner;
pub mod replica;

#[cfg(test)]
mod tests;

pub use call::{AnyReply, CallMesh, ErasedCall, ShardCall};
pub use executors::{
    host_shard_cores, online_cores, start_shards, ShardContext, ShardError, ShardPlan, ShardSet,
    ShardsConfig,
};
pub use master::{ChangeError, Master};
pub use mesh::{
    mesh_endpoints, LocalBoxFuture, Mesh, MeshEndpoints, MeshError, MeshHandler,
    MESH_IN_FLIGHT_MAX_DEFAULT, MESH_RING_CAPACITY_DEFAULT,
};
pub use oneshot::{local_oneshot, LocalReceiver, LocalSender};
pub use owner::owner_shard;
pub use replica::{Replica, Versioned};
