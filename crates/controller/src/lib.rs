//! Ferrocket's controller (RocketMQ 5's controller mode): brokers of one
//! broker set register with it, send it heartbeats, and ask it to elect a
//! master from the in-sync replicas; the master tells it how the in-sync set
//! shrinks and grows. Its state is replicated across one or three
//! controllers with Raft (the `openraft` crate); only the leader answers,
//! the others say CONTROLLER_NOT_LEADER.

pub mod rules;
pub mod state;
