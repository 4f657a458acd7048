//! Ferrocket's controller (RocketMQ 5's controller mode): brokers of one
//! broker set register with it, send it heartbeats, and ask it to elect a
//! master from the in-sync replicas; the master tells it how the in-sync set
//! shrinks and grows. Its state is replicated across one or three
//! controllers with Raft (the `openraft` crate); only the leader answers,
//! the others say CONTROLLER_NOT_LEADER.
//!
//! Layers, top down: [`start`] (thread, runtime, tasks) → [`server`]
//! (Remoting) → [`handler`] (request codes) → [`node`] (read and write
//! paths, elections, notifications) → [`rules`] (decisions) and [`raft`]
//! (log, storage, transport) → [`state`] (what is replicated);
//! [`settings`] shows and changes the settings read while running
//! ([`keys`] declares them); [`live`] is each controller's own table of
//! broker heartbeats; [`auth`] says who may call (ACL 1.0, TLS).
//! [`member`] is the other side: a broker's client of the controllers.
//!
//! Depends on `ferrocket-client`, `-protocol`, `-acl` and `-tls`; the broker
//! crate does not depend on it (the binary wires the two together).

pub mod auth;
pub mod config;
pub mod handler;
pub mod keys;
pub mod live;
pub mod member;
pub mod node;
pub mod raft;
pub mod rules;
pub mod server;
pub mod settings;
pub mod start;
pub mod state;

pub use config::ControllerConfig;
pub use keys::CONTROLLER_SETTINGS;
pub use start::{run, start, start_on, ControllerError, ControllerHandle};
