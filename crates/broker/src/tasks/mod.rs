//! Background drivers: the loops each shard runs beside its connections.

pub(crate) mod control_plane;
pub(crate) mod index_feed;
pub(crate) mod namesrv_register;
pub(crate) mod placed;
pub(crate) mod schedule;
pub(crate) mod timer;
pub(crate) mod transactions;
