//! Replication state (RocketMQ's `HAService`), on shard 0, which runs the
//! HA links. On a master: each slave's link and how far it has acked, and
//! the sends waiting for those acks (`GroupTransferService`). On a slave:
//! where its master is and how its link to it is doing (`HAClient`).

use std::cell::{Cell, RefCell};
use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::rc::Rc;
use std::time::Duration;

use ferrocket_runtime::sync::Changed;
use futures_lite::future;
use serde_json::{json, Value};

use crate::clock::now_ms;

/// One slave's link to this master.
#[derive(Debug)]
pub(crate) struct SlaveLink {
    pub id: u64,
    pub addr: SocketAddr,
    /// The slave's CommitLog end, as it last reported.
    pub acked: Cell<i64>,
    /// Where the master is sending from next.
    pub transfer_from: Cell<i64>,
    /// Bytes sent in the current second, and that second.
    pub sent_in_second: Cell<(i64, u64)>,
    /// The slave's broker id, from an AutoSwitch handshake (controller
    /// mode); `None` on the classic stream.
    pub broker_id: Cell<Option<i64>>,
}

/// How a SYNC_MASTER send's wait for its slaves ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ReplicaWait {
    /// Enough copies hold it.
    Replicated,
    /// Not within `slaveTimeout` (FLUSH_SLAVE_TIMEOUT).
    Timeout,
    /// No slave is connected, or every one is too far behind
    /// (SLAVE_NOT_AVAILABLE).
    NotAvailable,
}

/// Where a slave's master is (`haMasterAddress`, or learnt from the name
/// server's REGISTER_BROKER answer) and how its link is doing.
#[derive(Debug, Default, Clone)]
pub(crate) struct MasterLink {
    /// The master's HA address (`haServerAddr`).
    pub ha_addr: Option<String>,
    /// The master's broker address (`masterAddr`), for metadata sync.
    pub broker_addr: Option<String>,
    pub connected: bool,
    pub last_read_ms: i64,
    pub last_write_ms: i64,
    /// Bytes received in the current second, and that second.
    pub received_in_second: (i64, u64),
}

pub(crate) struct HaState {
    links: RefCell<Vec<Rc<SlaveLink>>>,
    next_link: Cell<u64>,
    /// A slave acked more, or a link came or went.
    acks: Changed,
    /// The CommitLog's written end moved.
    pub written: Changed,
    /// A slave's view of its master.
    pub master: RefCell<MasterLink>,
    /// Where a master's HA listener is bound.
    pub listen: Cell<Option<SocketAddr>>,
    /// See [`HaState::gate`].
    gate: Cell<i64>,
    /// A slave's view of its master's confirm offset (its frames carry
    /// it; `None` before the first), and when it changes.
    pub master_confirm: Cell<Option<i64>>,
    pub confirm_changed: Changed,
}

impl Default for HaState {
    fn default() -> Self {
        Self {
            links: RefCell::default(),
            next_link: Cell::default(),
            acks: Changed::default(),
            written: Changed::default(),
            master: RefCell::default(),
            listen: Cell::default(),
            gate: Cell::new(i64::MAX),
            master_confirm: Cell::new(None),
            confirm_changed: Changed::default(),
        }
    }
}

/// Adds `bytes` to a per-second counter at `now_ms`; returns the bytes of
/// the current second.
pub(crate) fn count_in_second(counter: &Cell<(i64, u64)>, now_ms: i64, bytes: u64) -> u64 {
    let second = now_ms / 1000;
    let (at, sent) = counter.get();
    let sent = if at == second { sent + bytes } else { bytes };
    counter.set((second, sent));
    sent
}

impl HaState {
    pub fn add_link(&self, addr: SocketAddr) -> Rc<SlaveLink> {
        let id = self.next_link.get();
        self.next_link.set(id + 1);
        let link = Rc::new(SlaveLink {
            id,
            addr,
            acked: Cell::new(-1),
            transfer_from: Cell::new(-1),
            sent_in_second: Cell::new((0, 0)),
            broker_id: Cell::new(None),
        });
        self.links.borrow_mut().push(Rc::clone(&link));
        self.acks.notify_all();
        link
    }

    pub fn remove_link(&self, id: u64) {
        self.links.borrow_mut().retain(|link| link.id != id);
        self.acks.notify_all();
    }

    /// See [`HaState::acks_since`].
    pub fn acks_epoch(&self) -> u64 {
        self.acks.epoch()
    }

    /// Resolves once a slave acked more (or a link came or went) after
    /// `seen`, an earlier [`HaState::acks_epoch`].
    pub async fn acks_since(&self, seen: u64) {
        self.acks.since(seen).await
    }

    /// Waits for the slave's first report on `link` and returns it: where
    /// the slave's CommitLog ends, so where pushing starts.
    pub async fn first_report(&self, link: &SlaveLink) -> i64 {
        while link.acked.get() < 0 {
            let seen = self.acks_epoch();
            self.acks_since(seen).await;
        }
        link.acked.get()
    }

    pub fn links(&self) -> Vec<Rc<SlaveLink>> {
        self.links.borrow().clone()
    }

    /// A slave reported its CommitLog end.
    pub fn ack(&self, link: &SlaveLink, offset: i64) {
        if offset > link.acked.get() {
            link.acked.set(offset);
            self.acks.notify_all();
        }
    }

    /// Copies of everything below `end`: this master's and each slave's
    /// that acked past it, counting only the slaves whose broker id is in
    /// `among` when it is given (controller mode: the in-sync replicas,
    /// since an election picks among them).
    pub fn copies_among(&self, end: i64, among: Option<&BTreeSet<i64>>) -> u32 {
        let counts = |l: &SlaveLink| match among {
            None => true,
            Some(ids) => l.broker_id.get().is_some_and(|id| ids.contains(&id)),
        };
        let slaves = self
            .links
            .borrow()
            .iter()
            .filter(|l| l.acked.get() >= end && counts(l))
            .count();
        1 + slaves as u32
    }

    /// Controller mode's confirm offset on a master (Java's
    /// `computeConfirmOffset`): the least that a connected in-sync slave
    /// (of `in_sync`, less the master itself, `own`) acked, at most
    /// `written`; a slave that has not reported yet does not count. `None`
    /// while one of those slaves is not connected: then it cannot be known,
    /// and stays where it was.
    pub fn confirm_offset(
        &self,
        written: i64,
        in_sync: &BTreeSet<i64>,
        own: Option<i64>,
    ) -> Option<i64> {
        let is_slave = |id: i64| Some(id) != own && in_sync.contains(&id);
        let links = self.links.borrow();
        let linked = |id: &i64| links.iter().any(|l| l.broker_id.get() == Some(*id));
        if !in_sync.iter().filter(|id| Some(**id) != own).all(linked) {
            return None;
        }
        let confirmed = links
            .iter()
            .filter(|l| l.broker_id.get().is_some_and(is_slave))
            .map(|l| l.acked.get())
            .filter(|acked| *acked > 0)
            .fold(written, i64::min);
        Some(confirmed)
    }

    /// The confirm offset in force (see `tasks::ha::gate`): where every
    /// shard's ConsumeQueue dispatch stops; `i64::MAX` while there is none.
    pub fn gate(&self) -> i64 {
        self.gate.get()
    }

    pub fn set_gate(&self, gate: i64) {
        self.gate.set(gate);
    }

    /// A slave heard its master's confirm offset.
    pub fn note_master_confirm(&self, confirm: i64) {
        if self.master_confirm.replace(Some(confirm)) != Some(confirm) {
            self.confirm_changed.notify_all();
        }
    }

    /// RocketMQ 4.x's check before waiting: false when slaves are
    /// connected but even the furthest is `gap_max` bytes or more behind
    /// `written` (no wait can succeed). With no slave connected a send
    /// waits, and times out, as RocketMQ 5 does: one may be reconnecting.
    pub fn slave_available(&self, written: i64, gap_max: i64) -> bool {
        let furthest = self.links.borrow().iter().map(|l| l.acked.get()).max();
        furthest.is_none_or(|acked| written - acked.max(0) < gap_max)
    }

    /// Waits until `copies` copies hold everything below `end`, at most
    /// `timeout_ms`.
    pub async fn wait(
        &self,
        end: i64,
        copies: u32,
        among: Option<&BTreeSet<i64>>,
        timeout_ms: u64,
    ) -> ReplicaWait {
        let deadline = std::time::Instant::now() + Duration::from_millis(timeout_ms);
        loop {
            if self.copies_among(end, among) >= copies {
                return ReplicaWait::Replicated;
            }
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                return ReplicaWait::Timeout;
            }
            let seen = self.acks.epoch();
            future::or(self.acks.since(seen), glommio::timer::sleep(left)).await;
        }
    }

    /// GET_BROKER_HA_STATUS's body (`HARuntimeInfo`) for a broker whose
    /// CommitLog ends at `written`.
    pub fn runtime_info(&self, is_master: bool, written: i64, gap_max: i64) -> Value {
        let now = now_ms();
        let links = self.links();
        let connections: Vec<Value> = links
            .iter()
            .map(|link| {
                let acked = link.acked.get().max(0);
                let (second, sent) = link.sent_in_second.get();
                json!({
                    "addr": link.addr.to_string(),
                    // Ferrocket's own field: the AutoSwitch handshake's
                    // broker id (-1 on the classic stream), so that a
                    // controller-mode master tells which replica follows it.
                    "slaveBrokerId": link.broker_id.get().unwrap_or(-1),
                    "slaveReported": link.acked.get() >= 0,
                    "slaveAckOffset": acked,
                    "diff": written - acked,
                    "inSync": written - acked < gap_max,
                    "transferredByteInSecond": if second == now / 1000 { sent } else { 0 },
                    "transferFromWhere": link.transfer_from.get(),
                })
            })
            .collect();
        let master = self.master.borrow();
        let (second, received) = master.received_in_second;
        let in_sync = links
            .iter()
            .filter(|l| written - l.acked.get().max(0) < gap_max)
            .count();
        json!({
            "master": is_master,
            "masterCommitLogMaxOffset": written,
            "inSyncSlaveNums": in_sync,
            "haConnectionInfo": connections,
            "haClientRuntimeInfo": {
                "masterAddr": master.ha_addr.clone().unwrap_or_default(),
                "maxOffset": written,
                "lastReadTimestamp": master.last_read_ms,
                "lastWriteTimestamp": master.last_write_ms,
                "transferredByteInSecond": if second == now / 1000 { received } else { 0 },
                "masterFlushOffset": 0,
                "activated": master.connected,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_count_the_master_and_slaves_past_the_end() {
        let ha = HaState::default();
        assert!(
            ha.slave_available(100, 1000),
            "none connected: wait for one"
        );
        let a = ha.add_link("127.0.0.1:1".parse().unwrap());
        let b = ha.add_link("127.0.0.1:2".parse().unwrap());
        assert_eq!(ha.copies_among(50, None), 1);
        ha.ack(&a, 60);
        ha.ack(&b, 40);
        assert_eq!(ha.copies_among(50, None), 2);
        assert!(ha.slave_available(100, 1000));
        assert!(!ha.slave_available(2000, 1000));
        ha.remove_link(a.id);
        assert_eq!(ha.copies_among(50, None), 1);
        let counter = Cell::new((0, 0));
        assert_eq!(count_in_second(&counter, 1500, 10), 10);
        assert_eq!(count_in_second(&counter, 1900, 5), 15);
        assert_eq!(count_in_second(&counter, 2100, 7), 7);
    }
}
