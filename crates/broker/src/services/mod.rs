//! State and logic of the broker's features, below the shard: nothing here
//! names `Shard`, `Connection` or `RemotingCommand`'s transport, so the
//! Remoting front end, background tasks and later front ends share it.

pub(crate) mod persist;
