//! State and logic of the broker's features, below the shard: nothing here
//! names `Shard`, `Connection` or `RemotingCommand`'s transport, so the
//! Remoting front end, background tasks and later front ends share it.

pub(crate) mod acl;
pub(crate) mod acting_master;
pub(crate) mod append;
pub(crate) mod assignment;
pub(crate) mod auth;
pub(crate) mod broker_stats;
pub(crate) mod clients;
pub(crate) mod compaction;
pub(crate) mod control;
pub(crate) mod delay_levels;
pub(crate) mod delivery;
pub(crate) mod fastjson;
pub(crate) mod filter;
pub(crate) mod groups;
pub(crate) mod index;
pub(crate) mod java_timer;
pub(crate) mod lite;
pub(crate) mod locks;
pub(crate) mod long_poll;
pub(crate) mod master_epoch;
pub(crate) mod metrics;
pub(crate) mod namesrv;
pub(crate) mod offsets;
pub(crate) mod persist;
pub(crate) mod placed;
pub(crate) mod pop;
pub(crate) mod priority;
pub(crate) mod pull;
pub(crate) mod recall;
pub(crate) mod records;
pub(crate) mod replication;
pub(crate) mod request_modes;
pub(crate) mod routing;
pub(crate) mod schedule;
pub(crate) mod search;
pub(crate) mod throughput;
pub(crate) mod timer;
pub(crate) mod topic_attributes;
pub(crate) mod topics;
pub(crate) mod transaction;
