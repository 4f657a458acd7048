//! The shard's end of its request ring to the appender, keeping the
//! shard's envelopes in the order they were made.
//!
//! Appends wait for room in the ring as they always did. A topic reset is
//! posted from a synchronous call (`ShardStore::delete_topic_queues`), so
//! it cannot wait: when the ring is full it is held here, and from then on
//! every envelope queues behind it until one task has sent them all. An
//! append made after the reset therefore never reaches the appender before
//! it, and is numbered in the new, empty queue.
//!
//! A held envelope that cannot be sent (the ring closed: shutdown, or the
//! appender gone) is dropped; its append is answered with an error when the
//! appender closes the result ring (`ShardInner::finish`).

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::rc::Rc;

use crate::messages::Envelope;
use crate::ring::{RingTx, TrySend};

pub(crate) struct Outbox {
    /// `None` once closed.
    ring: RefCell<Option<Rc<RingTx<Envelope>>>>,
    /// Envelopes behind one that found the ring full, oldest first.
    held: RefCell<VecDeque<Envelope>>,
    /// A task is sending `held`; until it is done everything queues there.
    draining: Cell<bool>,
}

impl Outbox {
    pub(crate) fn new(ring: RingTx<Envelope>) -> Rc<Self> {
        Rc::new(Outbox {
            ring: RefCell::new(Some(Rc::new(ring))),
            held: RefCell::new(VecDeque::new()),
            draining: Cell::new(false),
        })
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.ring.borrow().is_none()
    }

    fn ring(&self) -> Option<Rc<RingTx<Envelope>>> {
        self.ring.borrow().clone()
    }

    /// Sends `envelope` after every envelope made before it, waiting for
    /// room; `false` when the ring is closed.
    pub(crate) async fn send(self: &Rc<Self>, envelope: Envelope) -> bool {
        let Some(ring) = self.ring() else {
            return false;
        };
        if self.draining.get() {
            self.held.borrow_mut().push_back(envelope);
            return true;
        }
        ring.send(envelope).await
    }

    /// Sends `envelope` without waiting: into the ring when it has room
    /// and nothing is held, else held until the ring has room. Dropped when
    /// the ring is closed (nothing will be numbered any more).
    pub(crate) fn post(self: &Rc<Self>, envelope: Envelope) {
        let Some(ring) = self.ring() else {
            return;
        };
        if self.draining.get() {
            self.held.borrow_mut().push_back(envelope);
            return;
        }
        match ring.try_send(envelope) {
            TrySend::Sent | TrySend::Closed => {}
            TrySend::Full(envelope) => {
                self.held.borrow_mut().push_back(envelope);
                self.drain(ring);
            }
        }
    }

    /// Sends the held envelopes in order, on a task of the current executor.
    fn drain(self: &Rc<Self>, ring: Rc<RingTx<Envelope>>) {
        assert!(!self.draining.get(), "one drain task at a time");
        self.draining.set(true);
        let outbox = Rc::clone(self);
        glommio::spawn_local(async move {
            loop {
                let next = outbox.held.borrow_mut().pop_front();
                let Some(envelope) = next else {
                    break;
                };
                // A closed ring drops it (see the module doc).
                ring.send(envelope).await;
            }
            outbox.draining.set(false);
        })
        .detach();
    }

    /// Closes the ring: the appender ends once every shard's ring is closed.
    pub(crate) fn close(&self) {
        if let Some(ring) = self.ring.borrow_mut().take() {
            ring.close();
        }
    }
}
