//! Which brokers are alive, from their BROKER_HEARTBEATs (RocketMQ's
//! `DefaultBrokerHeartbeatManager`). Each controller keeps its own table:
//! brokers send heartbeats to every controller, and liveness is not
//! replicated. A broker is dead when its heartbeats stop for its timeout,
//! or at once when the connection it sent them on closes, which is what
//! makes failover after a kill -9 fast.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use ferrocket_protocol::header::controller::BrokerHeartbeatRequestHeader;

use crate::rules::{LiveInfo, Liveness};

/// A broker silent this long is dead when its heartbeat names no timeout
/// (`DEFAULT_BROKER_CHANNEL_EXPIRED_TIME`, 10 s).
pub const HEARTBEAT_TIMEOUT_MS_DEFAULT: u64 = 10_000;
/// Brokers tracked at most; heartbeats from more are refused.
pub const LIVE_BROKERS_MAX: usize = 4_096;

/// One broker: cluster, broker name, broker id.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BrokerKey {
    pub cluster: String,
    pub broker_name: String,
    pub broker_id: i64,
}

#[derive(Debug, Clone)]
struct Entry {
    address: String,
    last_seen: Instant,
    timeout: Duration,
    info: LiveInfo,
    /// The connection the last heartbeat came on.
    connection: u64,
}

/// The table of live brokers.
#[derive(Debug, Default)]
pub struct LiveTable {
    entries: HashMap<BrokerKey, Entry>,
}

/// Why a heartbeat was not taken.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HeartbeatError {
    #[error("the heartbeat names no brokerId")]
    NoBrokerId,
    #[error("the controller already tracks {LIVE_BROKERS_MAX} brokers")]
    Full,
}

impl LiveTable {
    /// Records a heartbeat that came on `connection`. The epoch and offsets
    /// only move forward, as in Java, so a late heartbeat cannot make a
    /// broker look further behind than it is.
    pub fn on_heartbeat(
        &mut self,
        header: &BrokerHeartbeatRequestHeader,
        connection: u64,
        now: Instant,
    ) -> Result<(), HeartbeatError> {
        let broker_id = header.broker_id.ok_or(HeartbeatError::NoBrokerId)?;
        let key = BrokerKey {
            cluster: header.cluster_name.clone(),
            broker_name: header.broker_name.clone(),
            broker_id,
        };
        let timeout_ms = header
            .heartbeat_timeout_mills
            .and_then(|ms| u64::try_from(ms).ok())
            .filter(|ms| *ms > 0)
            .unwrap_or(HEARTBEAT_TIMEOUT_MS_DEFAULT);
        let info = LiveInfo {
            epoch: header.epoch.unwrap_or(-1),
            max_offset: header.max_offset.unwrap_or(-1),
            confirm_offset: header.confirm_offset.unwrap_or(-1),
            election_priority: header.election_priority.unwrap_or(i32::MAX),
        };
        if !self.entries.contains_key(&key) && self.entries.len() >= LIVE_BROKERS_MAX {
            return Err(HeartbeatError::Full);
        }
        let entry = self.entries.entry(key).or_insert_with(|| Entry {
            address: header.broker_addr.clone(),
            last_seen: now,
            timeout: Duration::ZERO,
            info,
            connection,
        });
        entry.address.clone_from(&header.broker_addr);
        entry.last_seen = now;
        entry.timeout = Duration::from_millis(timeout_ms);
        entry.connection = connection;
        entry.info.election_priority = info.election_priority;
        let ahead = info.epoch > entry.info.epoch
            || (info.epoch == entry.info.epoch && info.max_offset > entry.info.max_offset);
        if ahead {
            entry.info = info;
        }
        Ok(())
    }

    /// Drops brokers silent past their timeout and returns them.
    pub fn expire(&mut self, now: Instant) -> Vec<BrokerKey> {
        self.remove_where(|e| now.saturating_duration_since(e.last_seen) > e.timeout)
    }

    /// Drops the brokers whose last heartbeat came on a connection that just
    /// closed, and returns them.
    pub fn on_connection_closed(&mut self, connection: u64) -> Vec<BrokerKey> {
        self.remove_where(|e| e.connection == connection)
    }

    fn remove_where(&mut self, dead: impl Fn(&Entry) -> bool) -> Vec<BrokerKey> {
        let gone: Vec<BrokerKey> = self
            .entries
            .iter()
            .filter(|(_, e)| dead(e))
            .map(|(k, _)| k.clone())
            .collect();
        for key in &gone {
            self.entries.remove(key);
        }
        gone
    }

    /// The address a live broker's heartbeats give.
    pub fn address(&self, key: &BrokerKey) -> Option<&str> {
        self.entries.get(key).map(|e| e.address.as_str())
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// A view of the table at one instant, for the rules.
pub struct LiveAt<'a> {
    pub table: &'a LiveTable,
    pub now: Instant,
}

impl Liveness for LiveAt<'_> {
    fn live(&self, cluster: &str, broker_name: &str, broker_id: i64) -> Option<LiveInfo> {
        // The key is built to look the broker up; the table is small.
        let key = BrokerKey {
            cluster: cluster.to_string(),
            broker_name: broker_name.to_string(),
            broker_id,
        };
        let entry = self.table.entries.get(&key)?;
        let silent = self.now.saturating_duration_since(entry.last_seen);
        (silent <= entry.timeout).then_some(entry.info)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn beat(id: i64, epoch: i32, offset: i64) -> BrokerHeartbeatRequestHeader {
        BrokerHeartbeatRequestHeader {
            cluster_name: "c".into(),
            broker_addr: format!("h:{id}"),
            broker_name: "b".into(),
            broker_id: Some(id),
            epoch: Some(epoch),
            max_offset: Some(offset),
            heartbeat_timeout_mills: Some(1_000),
            ..Default::default()
        }
    }

    #[test]
    fn heartbeats_keep_brokers_alive_until_timeout_or_close() {
        let mut table = LiveTable::default();
        let t0 = Instant::now();
        table.on_heartbeat(&beat(1, 1, 10), 7, t0).unwrap();
        table.on_heartbeat(&beat(2, 1, 10), 8, t0).unwrap();
        let view = LiveAt {
            table: &table,
            now: t0 + Duration::from_millis(900),
        };
        assert!(view.is_alive("c", "b", 1));
        assert!(!view.is_alive("c", "x", 1));
        let view = LiveAt {
            table: &table,
            now: t0 + Duration::from_millis(1_100),
        };
        assert!(!view.is_alive("c", "b", 1), "silent past the timeout");

        assert_eq!(table.on_connection_closed(7).len(), 1);
        let later = t0 + Duration::from_millis(1_500);
        assert_eq!(table.expire(later).len(), 1);
        assert!(table.is_empty());
    }

    #[test]
    fn offsets_only_move_forward_and_a_heartbeat_needs_an_id() {
        let mut table = LiveTable::default();
        let t0 = Instant::now();
        table.on_heartbeat(&beat(1, 2, 50), 1, t0).unwrap();
        table.on_heartbeat(&beat(1, 2, 40), 1, t0).unwrap();
        table.on_heartbeat(&beat(1, 1, 90), 1, t0).unwrap();
        let view = LiveAt {
            table: &table,
            now: t0,
        };
        let info = view.live("c", "b", 1).unwrap();
        assert_eq!((info.epoch, info.max_offset), (2, 50));
        let mut no_id = beat(1, 1, 1);
        no_id.broker_id = None;
        assert_eq!(
            table.on_heartbeat(&no_id, 1, t0),
            Err(HeartbeatError::NoBrokerId)
        );
    }
}
