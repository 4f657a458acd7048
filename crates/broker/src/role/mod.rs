//! The broker's role in controller mode (`enableControllerMode=true`,
//! RocketMQ's `ReplicasManager`): the controller, not the config, says
//! whether this broker is its set's master.
//!
//! - `supervisor`: registers the broker (broker id and `brokerIdentity`
//!   files, through `ferrocket_controller::member`), sends heartbeats,
//!   asks to be elected when the set has no master, and runs the data
//!   plane ([`crate::run_in_role`]) in the role the controller gives,
//!   renewing a master's lease on each confirmation.
//! - `in_place`: a role change in the running broker (`switch`, carried
//!   out by shard 0 in `tasks::ha::role`).
//! - `truncate`: the epoch file, and a follower's cut of its CommitLog
//!   back to where it agrees with the new master.
//! - `isr`: a master's upkeep of its in-sync set, from its own HA state
//!   (`progress`, published by shard 0 in `tasks::ha::progress`).
//! - `peers`: what is asked of other brokers over Remoting (the master's
//!   HA address and epoch list).
//! - `state`: the live handles shared with the running data plane (lease,
//!   in-sync set, role notices and orders), passed beside its config.
//!
//! `state`, `switch` and `progress` depend on nothing above `config`; the
//! rest sits above the whole data plane and is used by nothing in it.

mod in_place;
mod isr;
mod peers;
pub mod progress;
pub mod state;
pub mod supervisor;
pub mod switch;
mod truncate;
