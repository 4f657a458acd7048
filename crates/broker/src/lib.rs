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
//! Layers, each using only those below it:
//! - `role`: controller mode's supervision ([`run_controller_mode`]):
//!   registration, election, heartbeats, epochs and the cut before
//!   following, role changes in place, a master's lease and in-sync set
//!   (from shard 0's HA state, in process). It runs the data plane
//!   ([`run_in_role`]) and shares with it only the live handles of
//!   [`RoleState`]; of `role`, the data plane uses only those handles
//!   (`state`, `switch`, `progress`).
//! - `wire`: the Remoting front end. One module per request family
//!   (`send`, `pull`, `pop`, `offsets`, `query`, `transaction`, `retry`,
//!   the admin families ...); thin handlers that read the request, call
//!   the shard or a service, and answer. `local` serves the same requests
//!   to in-process callers (the in-broker gRPC endpoint, [`LocalPort`]).
//! - `tasks`: background drivers each shard runs beside its connections
//!   (name-server registration, HA master/slave and the controller-mode
//!   AutoSwitch parts in `tasks/ha`, timer and delay delivery, pop revive,
//!   transaction check-back, index feed, metrics HTTP, ACL reload).
//! - `shard`: the per-core context (`Rc`, no locks) and the typed
//!   cross-shard calls; shard 0 writes the control-plane tables.
//! - `services`: features' state and logic, free of `Shard` and the
//!   transport (topics, groups, offsets, pop, filters, timer, delay levels,
//!   transactions, replication, metrics ...).
//! - `config`: [`BrokerConfig`] and the settings, each declared once
//!   (`config/keys`); `sql92` the SQL92 filter language; `error` the
//!   typed `Reject` a request gets and [`BrokerError`];
//!   `local_port` the door in-process callers use; `clock` wall time.
//!   [`run`] (`start`) wires it together.
//!
//! Controller mode: the broker's data plane (AutoSwitch HA, the dispatch
//! gate, a role change in place) is here; the supervision that talks to the
//! controllers is outside this crate (see docs/architecture.md).
//!
//! ACLs: `auth` names ACL 2.0 (`services/auth.rs`, `wire/auth_admin.rs`),
//! `acl` ACL 1.0 (`tasks/acl_reload.rs`), except `wire/acl.rs`, the gate
//! that checks both in front of every request, and `services/acl.rs`, a
//! shard's copy of either's shared state.
//!
//! Depends on `ferrocket-store`, `-runtime`, `-protocol`, `-acl`, `-tls`,
//! `-metrics` and `-tier`; never on `-client`, `-grpc`, `-controller` or
//! `-namesrv`.
mod clock;
mod config;
mod error;
mod handles;
mod local_port;
mod role;
mod services;
mod shard;
pub mod sql92;
mod start;
mod tasks;
mod wire;

pub use config::keys::BROKER_SETTINGS;
pub use config::tier::TierKeys;
pub use config::{
    AuthConfig, BrokerConfig, BrokerRole, CommitLogWriteMode, ConfigKeys, ControllerModeConfig,
    FlushDiskType, MetricsConfig, MetricsExporter, ProxyMode, ReplicationConfig, Whitelist,
    BROKER_NAME_DEFAULT, CLUSTER_NAME_DEFAULT, DEFAULT_TOPIC_QUEUE_NUMS, LISTEN_PORT_DEFAULT,
    METRICS_PROM_PORT_DEFAULT,
};
pub use error::BrokerError;
pub use handles::BrokerHandles;
pub use local_port::{LocalError, LocalPort, LocalReply, RequestSink, LOCAL_CALLS_MAX};
pub use role::state::RoleState;
pub use role::supervisor::run as run_controller_mode;
pub use services::compaction::CompactionConfig;
pub use start::{outbound_tls, run, run_in_role};
