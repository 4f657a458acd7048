//! Shard executors (being written).
