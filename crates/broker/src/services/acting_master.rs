//! Slave acting master (RocketMQ 5.0, `enableSlaveActingMaster`): which
//! broker of this set holds the lowest registered id, and whether this
//! broker is it while the master is gone (Java's `minBrokerIdInGroup`,
//! `minBrokerAddrInGroup` and `changeSpecialServiceStatus`).
//!
//! Every shard shares one [`ActingMaster`] (it lives in the broker's
//! environment): shard 0's loop (`tasks::acting_master`) and any shard
//! answering NOTIFY_MIN_BROKER_ID_CHANGE move it; readers only look.

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use crate::services::delay_levels::DelayOffsets;

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

/// How long a slave that handed its services back to a returning master
/// (`tasks::acting_master::hand_back`) does not act again, whatever a name
/// server that has not seen the master yet says.
pub const HAND_BACK_HOLD_MS: i64 = 30_000;

/// Most timer deliveries an acting slave remembers for its master; older
/// ones are forgotten (the master would deliver them again).
pub const TIMER_LEDGER_MAX: usize = 1_000_000;

/// What an acting slave delivered, as it hands it to its returning master:
/// the delay levels' queue progress, the CommitLog offsets of the timer
/// messages it sent to another set (the same offsets on the master, whose
/// CommitLog the slave copies byte for byte) and the half queue offsets of
/// the open half messages it sent there.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct HandBack {
    pub delay_offsets: DelayOffsets,
    pub timer_delivered: Vec<i64>,
    pub half_escaped: Vec<i64>,
}

impl HandBack {
    /// Adds another slave's report.
    pub fn merge(&mut self, other: HandBack) {
        for (level, offset) in other.delay_offsets {
            let mine = self.delay_offsets.entry(level).or_insert(offset);
            *mine = (*mine).max(offset);
        }
        self.timer_delivered.extend(other.timer_delivered);
        self.half_escaped.extend(other.half_escaped);
    }
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
    /// Deliveries under way while acting ([`ActingMaster::flight`]).
    in_flight: AtomicUsize,
    /// After a hand-back: not acting again before this time (ms).
    hold_until_ms: AtomicI64,
    /// A master of a set with acting slaves: its delay levels and timers
    /// wait until it has asked the slaves what they delivered.
    awaiting_hand_back: AtomicBool,
    handed: Mutex<HandBack>,
}

/// A delivery under way on an acting slave; a hand-back waits for it.
#[derive(Debug)]
pub struct Flight<'a>(&'a AtomicUsize);

impl Drop for Flight<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl ActingMaster {
    /// `feature`: `enableSlaveActingMaster`. A slave with it may act; a
    /// master with it asks its slaves, before delivering delayed messages,
    /// what they delivered while it was gone. Starts as Java does: the
    /// lowest id is the master's until the name server says otherwise.
    pub fn new(feature: bool, is_slave: bool, own_id: i64) -> Self {
        Self {
            enabled: feature && is_slave && own_id != MASTER_ID,
            own_id,
            min_id: AtomicI64::new(MASTER_ID),
            min_addr: Mutex::new(None),
            acting: AtomicBool::new(false),
            notices: AtomicU64::new(0),
            in_flight: AtomicUsize::new(0),
            hold_until_ms: AtomicI64::new(i64::MIN),
            awaiting_hand_back: AtomicBool::new(feature && !is_slave),
            handed: Mutex::new(HandBack::default()),
        }
    }

    /// Starts a delivery as acting master: `None` when this broker does
    /// not act (checked after counting it, so a hand-back that stopped the
    /// acting either sees it under way or it sees the hand-back).
    pub fn flight(&self) -> Option<Flight<'_>> {
        self.in_flight.fetch_add(1, Ordering::SeqCst);
        let flight = Flight(&self.in_flight);
        self.acting.load(Ordering::SeqCst).then_some(flight)
    }

    /// Deliveries under way.
    pub fn in_flight(&self) -> usize {
        self.in_flight.load(Ordering::SeqCst)
    }

    /// The returning master at `master_addr` takes the services back: this
    /// slave stops acting at once and not again for `hold_ms` (whatever a
    /// name server that has not seen the master yet says). Whether it acted.
    pub fn hand_back(&self, master_addr: Option<&str>, now_ms: i64, hold_ms: i64) -> bool {
        if !self.enabled {
            return false;
        }
        self.hold_until_ms
            .store(now_ms.saturating_add(hold_ms), Ordering::SeqCst);
        let was = self.acting.swap(false, Ordering::SeqCst);
        self.min_id.store(MASTER_ID, Ordering::SeqCst);
        if let Ok(mut addr) = self.min_addr.lock() {
            *addr = master_addr.map(str::to_owned);
        }
        was
    }

    /// A master: whether its delayed deliveries still wait for the slaves'
    /// reports.
    pub fn awaiting_hand_back(&self) -> bool {
        self.awaiting_hand_back.load(Ordering::Acquire)
    }

    /// A master: what the slaves reported; delayed deliveries start.
    pub fn finish_hand_back(&self, handed: HandBack) {
        if let Ok(mut mine) = self.handed.lock() {
            mine.merge(handed);
        }
        self.awaiting_hand_back.store(false, Ordering::Release);
    }

    /// A master: the delay levels' progress its slaves reported.
    pub fn handed_delay_offsets(&self) -> DelayOffsets {
        (self.handed.lock()).map_or_else(|_| DelayOffsets::new(), |h| h.delay_offsets.clone())
    }

    /// A master: the half messages its slaves sent elsewhere (taken once).
    pub fn take_handed_txns(&self) -> Vec<i64> {
        (self.handed.lock())
            .map_or_else(|_| Vec::new(), |mut h| std::mem::take(&mut h.half_escaped))
    }

    /// A master: the timer offsets its slaves delivered (taken once).
    pub fn take_handed_timers(&self) -> Vec<i64> {
        (self.handed.lock()).map_or_else(
            |_| Vec::new(),
            |mut h| std::mem::take(&mut h.timer_delivered),
        )
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
        let held = crate::clock::now_ms() < self.hold_until_ms.load(Ordering::SeqCst);
        if held && min_id == self.own_id {
            return None;
        }
        let previous = self.min_id.swap(min_id, Ordering::AcqRel);
        if previous == min_id && addr.as_deref() == min_addr {
            return None;
        }
        *addr = min_addr.map(str::to_owned);
        let acting = min_id == self.own_id;
        let was = self.acting.swap(acting, Ordering::SeqCst);
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
        let state = ActingMaster::new(true, true, 1);
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
        let second = ActingMaster::new(true, true, 2);
        assert_eq!(second.update(1, Some("s:1")), Some(Transition::Unchanged));
        assert!(!second.is_acting());
        assert_eq!(second.update(2, Some("s:2")), Some(Transition::Acting));
        let master = ActingMaster::new(true, false, 0);
        assert!(!master.enabled());
        assert_eq!(master.update(0, Some("m:1")), None);
        let off = ActingMaster::new(false, true, 1);
        assert_eq!(off.update(1, Some("s:1")), None);
        assert!(!off.is_acting());
    }

    #[test]
    fn a_hand_back_stops_acting_and_holds_off_a_stale_name_server() {
        let state = ActingMaster::new(true, true, 1);
        assert_eq!(state.update(1, Some("s:1")), Some(Transition::Acting));
        let flight = state.flight();
        assert!(flight.is_some());
        assert_eq!(state.in_flight(), 1);
        let now = crate::clock::now_ms();
        assert!(state.hand_back(Some("m:1"), now, HAND_BACK_HOLD_MS));
        assert!(!state.is_acting());
        drop(flight);
        assert_eq!(state.in_flight(), 0);
        assert!(state.flight().is_none());
        assert_eq!(state.in_flight(), 0);
        // A name server that has not seen the master yet still says 1.
        assert_eq!(state.update(1, Some("s:1")), None);
        assert!(!state.is_acting());
        assert_eq!(state.min_broker(), (0, Some("m:1".into())));
        // Once the hold is over, it acts again.
        state.hand_back(Some("m:1"), now - 2 * HAND_BACK_HOLD_MS, HAND_BACK_HOLD_MS);
        assert_eq!(state.update(1, Some("s:1")), Some(Transition::Acting));
    }

    #[test]
    fn a_master_waits_for_its_slaves_reports_and_merges_them() {
        let master = ActingMaster::new(true, false, 0);
        assert!(master.awaiting_hand_back());
        assert!(!ActingMaster::new(false, false, 0).awaiting_hand_back());
        let mut first = HandBack::default();
        first.delay_offsets.insert(2, 5);
        first.timer_delivered.push(100);
        first.half_escaped.push(7);
        let mut second = HandBack::default();
        second.delay_offsets.insert(2, 3);
        second.delay_offsets.insert(3, 1);
        second.timer_delivered.push(200);
        first.merge(second);
        master.finish_hand_back(first);
        assert!(!master.awaiting_hand_back());
        let offsets = master.handed_delay_offsets();
        assert_eq!(offsets.get(&2), Some(&5));
        assert_eq!(offsets.get(&3), Some(&1));
        assert_eq!(master.take_handed_timers(), vec![100, 200]);
        assert!(master.take_handed_timers().is_empty());
        assert_eq!(master.take_handed_txns(), vec![7]);
    }
}
