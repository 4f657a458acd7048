//! Ferrocket's broker: RocketMQ request processors on a shard-per-core
//! runtime.
//!
//! Threads: one glommio executor per shard (pinned to a configured core),
//! each with its own SO_REUSEPORT listener on the broker port, plus the
//! store's single CommitLog appender thread. A shard answers every request
//! on its connections; work on a queue runs on the queue's owner shard
//! (`owner_shard(topic, queue_id)`), reached over the cross-shard mesh.
//! Shard 0 is the single writer of the control plane (topic table, client
//! registry) and sends snapshots to every shard; it also persists
//! topics.json and consumerOffset.json and registers with name servers.
//!
//! Owns: [`BrokerConfig`], [`run`], and one module per request family —
//! `send` (SEND_MESSAGE, V2, batch), `pull` (PULL_MESSAGE with long
//! polling), `offsets` (consumer and queue offsets), `client` (heartbeats,
//! consumer lists), `admin` (topics, runtime info).

mod admin;
mod client;
mod clients;
mod config;
mod control;
mod error;
mod filter;
mod handler;
mod long_poll;
mod messages;
mod namesrv;
mod offset_table;
mod offsets;
mod pull;
mod send;
mod shard;
pub mod sql92;
mod start;
mod topics;
mod util;

pub use config::{
    BrokerConfig, CommitLogWriteMode, FlushDiskType, BROKER_NAME_DEFAULT, CLUSTER_NAME_DEFAULT,
    DEFAULT_TOPIC_QUEUE_NUMS, LISTEN_PORT_DEFAULT,
};
pub use error::BrokerError;
pub use start::run;
