//! The appender's intake: one local task per shard ring moves envelopes into
//! a bounded staging queue that the appender drains in batches.
//!
//! Why a task per ring rather than polling every ring from one future:
//! glommio keeps one waker per pending poll of a shared channel and only
//! drops them when that channel sees traffic, so re-polling idle rings on
//! every wake-up would pile up wakers. A task parked in `recv()` registers
//! once. The staging queue is bounded in bytes, so a busy appender stops
//! pulling, the rings fill, and shards wait in `send` (backpressure).

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::future::poll_fn;
use std::rc::Rc;
use std::task::{Poll, Waker};

use crate::messages::Envelope;
use crate::ring::RingRx;

/// Staged envelopes and who waits on them.
pub(crate) struct Intake {
    queue: RefCell<VecDeque<(usize, Envelope)>>,
    bytes: Cell<usize>,
    bytes_max: usize,
    open_rings: Cell<usize>,
    appender: RefCell<Option<Waker>>,
    room: RefCell<Vec<Waker>>,
}

impl Intake {
    pub(crate) fn new(rings: usize, bytes_max: usize) -> Rc<Self> {
        Rc::new(Self {
            queue: RefCell::new(VecDeque::new()),
            bytes: Cell::new(0),
            bytes_max,
            open_rings: Cell::new(rings),
            appender: RefCell::new(None),
            room: RefCell::new(Vec::new()),
        })
    }

    /// Spawns the task that drains ring `shard` into the staging queue.
    pub(crate) fn spawn_ring(self: &Rc<Self>, shard: usize, ring: RingRx<Envelope>) {
        let intake = Rc::clone(self);
        glommio::spawn_local(async move {
            loop {
                poll_fn(|cx| {
                    if intake.bytes.get() < intake.bytes_max {
                        Poll::Ready(())
                    } else {
                        intake.room.borrow_mut().push(cx.waker().clone());
                        Poll::Pending
                    }
                })
                .await;
                match ring.recv().await {
                    Some(envelope) => {
                        intake.bytes.set(intake.bytes.get() + envelope.len_bytes());
                        intake.queue.borrow_mut().push_back((shard, envelope));
                    }
                    None => {
                        intake.open_rings.set(intake.open_rings.get() - 1);
                        intake.wake_appender();
                        break;
                    }
                }
                intake.wake_appender();
            }
        })
        .detach();
    }

    fn wake_appender(&self) {
        if let Some(waker) = self.appender.borrow_mut().take() {
            waker.wake();
        }
    }

    /// Waits for work and takes up to `batch_bytes_max` of it (always at
    /// least one envelope). Empty when every ring is closed and drained.
    pub(crate) async fn next_batch(&self, batch_bytes_max: usize) -> Vec<(usize, Envelope)> {
        poll_fn(|cx| {
            let mut queue = self.queue.borrow_mut();
            if queue.is_empty() {
                if self.open_rings.get() == 0 {
                    return Poll::Ready(Vec::new());
                }
                *self.appender.borrow_mut() = Some(cx.waker().clone());
                return Poll::Pending;
            }
            let mut batch = Vec::new();
            let mut bytes = 0;
            while let Some((_, envelope)) = queue.front() {
                let len = envelope.len_bytes();
                if !batch.is_empty() && bytes + len > batch_bytes_max {
                    break;
                }
                bytes += len;
                if let Some(item) = queue.pop_front() {
                    batch.push(item);
                }
            }
            self.bytes.set(self.bytes.get() - bytes);
            for waker in self.room.borrow_mut().drain(..) {
                waker.wake();
            }
            Poll::Ready(batch)
        })
        .await
    }
}
