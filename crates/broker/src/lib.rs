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
//! consumer lists), `admin` (topics, runtime info), `timer` (arbitrary-delay
//! messages), `transaction` (half messages, END_TRANSACTION, check-back),
//! `query` (message index, QUERY_MESSAGE, VIEW_MESSAGE_BY_ID, offsets by
//! time); `routing` parks timer and half messages in system topics and
//! `system` says which shard runs the timer/index (owner of
//! `rmq_sys_wheel_timer` queue 0) and transactions (owner of the half
//! topic's queue 0). `consume` holds subscription groups (shard 0 writes,
//! every shard reads a copy), retry/DLQ (CONSUMER_SEND_MSG_BACK), order
//! locks (on each queue's owner), consumer admin and SQL92 pull filters;
//! `schedule` delivers delay-level messages (each level on the owner of
//! its SCHEDULE_TOPIC_XXXX queue).
mod clock;
mod config;
mod error;
mod local_port;
mod services;
mod shard;
pub mod sql92;
mod start;
mod tasks;
mod wire;

pub use config::{
    AuthConfig, BrokerConfig, BrokerRole, CommitLogWriteMode, ConfigKeys, ControllerModeConfig,
    FlushDiskType, MasterLease, MetricsConfig, MetricsExporter, ProxyMode, ReplicationConfig,
    RoleHandover, RoleOrder, RoleSwitch, Whitelist, BROKER_NAME_DEFAULT, CLUSTER_NAME_DEFAULT,
    DEFAULT_TOPIC_QUEUE_NUMS, LISTEN_PORT_DEFAULT, METRICS_PROM_PORT_DEFAULT, ONLINE_KEYS,
};
pub use error::BrokerError;
pub use local_port::{LocalError, LocalPort, LocalReply, RequestSink, LOCAL_CALLS_MAX};
pub use start::run;
