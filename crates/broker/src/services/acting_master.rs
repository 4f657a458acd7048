//! Slave acting master (RocketMQ 5.0, `enableSlaveActingMaster`): which
//! broker of this set holds the lowest registered id, and whether this
//! broker is it while the master is gone (Java's `minBrokerIdInGroup`,
//! `minBrokerAddrInGroup` and `changeSpecialServiceStatus`).
//!
//! Every shard shares one [`ActingMaster`] (it lives in the broker's
//! environment): shard 0's loop (`tasks::acting_master`) and any shard
//! answering NOTIFY_MIN_BROKER_ID_CHANGE move it; readers only look.

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::Mutex;

/// `MixAll.MASTER_ID`.
pub const MASTER_ID: i64 = 0;

/// What a change of the lowest id did to this broker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transition {
    /// The master is gone and this slave holds the lowest id: it acts.
    Acting,
    /// Another broker (the master back, or a lower slave) holds the lowest
    /// id: this slave hands the special services back.
    HandedBack,
    /// The lowest id moved between other brokers.
    Unchanged,
}

/// The set's lowest id as last learnt, and this broker's part in it.
#[derive(Debug)]
pub struct ActingMaster {
    enabled: bool,
    own_id: i64,
    min_id: AtomicI64,
    min_addr: Mutex<Option<String>>,
    acting: AtomicBool,
    /// NOTIFY_MIN_BROKER_ID_CHANGE requests received (runtime info).
    notices: AtomicU64,
}

impl ActingMaster {
    /// `enabled`: `enableSlaveActingMaster` on a slave (a master never
    /// acts: it is the master). Starts as Java does: the lowest id is the
    /// master's until the name server says otherwise.
    pub fn new(enabled: bool, own_id: i64) -> Self {
        Self {
            enabled: enabled && own_id != MASTER_ID,
            own_id,
            min_id: AtomicI64::new(MASTER_ID),
            min_addr: Mutex::new(None),
            acting: AtomicBool::new(false),
            notices: AtomicU64::new(0),
        }
    }

    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// Whether this slave runs the master's special services now.
    pub fn is_acting(&self) -> bool {
        self.acting.load(Ordering::Acquire)
    }

    /// The set's lowest id and its address, as last learnt.
    pub fn min_broker(&self) -> (i64, Option<String>) {
        let addr = self.min_addr.lock().map(|a| a.clone()).unwrap_or(None);
        (self.min_id.load(Ordering::Acquire), addr)
    }

    pub fn notices_received(&self) -> u64 {
        self.notices.load(Ordering::Relaxed)
    }

    pub fn count_notice(&self) {
        self.notices.fetch_add(1, Ordering::Relaxed);
    }

    /// The name server says `min_id` (at `min_addr`) is the set's lowest
    /// id (`updateMinBroker`). `None` when nothing changed or the feature
    /// is off.
    pub fn update(&self, min_id: i64, min_addr: Option<&str>) -> Option<Transition> {
        if !self.enabled {
            return None;
        }
        let Ok(mut addr) = self.min_addr.lock() else {
            return None;
        };
        let previous = self.min_id.swap(min_id, Ordering::AcqRel);
        if previous == min_id && addr.as_deref() == min_addr {
            return None;
        }
        *addr = min_addr.map(str::to_owned);
        let acting = min_id == self.own_id;
        let was = self.acting.swap(acting, Ordering::AcqRel);
        Some(match (was, acting) {
            (false, true) => Transition::Acting,
            (true, false) => Transition::HandedBack,
            _ => Transition::Unchanged,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slave_acts_while_it_holds_the_lowest_id_and_hands_back() {
        let state = ActingMaster::new(true, 1);
        assert!(state.enabled() && !state.is_acting());
        assert_eq!(state.update(0, Some("m:1")), Some(Transition::Unchanged));
        assert_eq!(state.update(0, Some("m:1")), None);
        assert_eq!(state.update(1, Some("s:1")), Some(Transition::Acting));
        assert!(state.is_acting());
        assert_eq!(state.min_broker(), (1, Some("s:1".into())));
        assert_eq!(state.update(1, Some("s:1")), None);
        assert_eq!(state.update(0, Some("m:2")), Some(Transition::HandedBack));
        assert!(!state.is_acting());
    }

    #[test]
    fn a_higher_slave_waits_and_a_master_never_acts() {
        let second = ActingMaster::new(true, 2);
        assert_eq!(second.update(1, Some("s:1")), Some(Transition::Unchanged));
        assert!(!second.is_acting());
        assert_eq!(second.update(2, Some("s:2")), Some(Transition::Acting));
        let master = ActingMaster::new(true, 0);
        assert!(!master.enabled());
        assert_eq!(master.update(0, Some("m:1")), None);
        let off = ActingMaster::new(false, 1);
        assert_eq!(off.update(1, Some("s:1")), None);
        assert!(!off.is_acting());
    }
}
