//! The rings between the shards and the CommitLog appender, in two kinds.
//!
//! - **Shared**: glommio's `shared_channel`, a bounded lock-free ring
//!   between two executor threads (the appender on a thread of its own).
//! - **Local**: glommio's `local_channel`, a bounded queue inside one
//!   executor (the appender running as tasks on the only shard,
//!   `appenderInShard`).
//!
//! Why two: a shared channel's receiver learns of a send only when its
//! executor next polls for external events, so inside one executor every
//! hop through it costs a whole turn of the executor loop (an io_uring
//! enter that re-arms the preemption timer). With one shard a send crossed
//! two such hops (request in, result out), so each message paid two extra
//! turns. A local channel wakes the receiving task directly and it runs in
//! the same turn. Both kinds are bounded and wait for room the same way, so
//! backpressure is unchanged.

use std::cell::RefCell;
use std::rc::Rc;

use glommio::channels::local_channel::{LocalReceiver, LocalSender};
use glommio::channels::shared_channel::{ConnectedReceiver, ConnectedSender};
use glommio::{GlommioError, ResourceType};

/// What [`RingTx::try_send`] did with an item.
pub(crate) enum TrySend<T> {
    Sent,
    /// The ring had no room: the item comes back.
    Full(T),
    /// The receiver is gone or the ring was closed: the item is dropped.
    Closed,
}

/// The sending end of a ring.
pub(crate) enum RingTx<T: Send> {
    Shared(ConnectedSender<T>),
    /// `None` once closed. Shared through `Rc` so a send in progress keeps
    /// its end alive while `close` drops ours: the receiver sees the end of
    /// the ring after the last send finished.
    Local(RefCell<Option<Rc<LocalSender<T>>>>),
}

impl<T: Send> RingTx<T> {
    pub(crate) fn local(sender: LocalSender<T>) -> Self {
        RingTx::Local(RefCell::new(Some(Rc::new(sender))))
    }

    fn local_end(slot: &RefCell<Option<Rc<LocalSender<T>>>>) -> Option<Rc<LocalSender<T>>> {
        slot.borrow().clone()
    }

    /// Sends `item`, waiting for room; `false` when the ring is closed.
    pub(crate) async fn send(&self, item: T) -> bool {
        match self {
            RingTx::Shared(ring) => ring.send(item).await.is_ok(),
            RingTx::Local(slot) => match Self::local_end(slot) {
                Some(ring) => ring.send(item).await.is_ok(),
                None => false,
            },
        }
    }

    /// Sends `item` if the ring has room now.
    pub(crate) fn try_send(&self, item: T) -> TrySend<T> {
        let outcome = match self {
            RingTx::Shared(ring) => ring.try_send(item),
            RingTx::Local(slot) => match Self::local_end(slot) {
                Some(ring) => ring.try_send(item),
                None => return TrySend::Closed,
            },
        };
        match outcome {
            Ok(()) => TrySend::Sent,
            Err(GlommioError::WouldBlock(ResourceType::Channel(item))) => TrySend::Full(item),
            Err(_) => TrySend::Closed,
        }
    }

    /// Closes the ring: the receiver gets `None` once it has taken every
    /// item sent before.
    pub(crate) fn close(&self) {
        match self {
            RingTx::Shared(ring) => ring.close(),
            RingTx::Local(slot) => drop(slot.borrow_mut().take()),
        }
    }
}

/// The receiving end of a ring.
pub(crate) enum RingRx<T: Send> {
    Shared(ConnectedReceiver<T>),
    Local(LocalReceiver<T>),
}

impl<T: Send> RingRx<T> {
    /// The next item; `None` once the ring is closed and empty.
    pub(crate) async fn recv(&self) -> Option<T> {
        match self {
            RingRx::Shared(ring) => ring.recv().await,
            RingRx::Local(ring) => ring.recv().await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use glommio::channels::local_channel;
    use glommio::LocalExecutorBuilder;

    #[test]
    fn local_ring_waits_for_room_and_ends_after_the_last_send() {
        LocalExecutorBuilder::default()
            .spawn(|| async {
                let (tx, rx) = local_channel::new_bounded(1);
                let tx = Rc::new(RingTx::local(tx));
                assert!(matches!(tx.try_send(1), TrySend::Sent));
                assert!(matches!(tx.try_send(2), TrySend::Full(2)));
                let sender = Rc::clone(&tx);
                let waiting = glommio::spawn_local(async move { sender.send(3).await });
                // Let that send start and wait for room.
                futures_lite::future::yield_now().await;
                // Closing while a send waits for room: that send still
                // lands, and only then does the ring end.
                tx.close();
                assert!(matches!(tx.try_send(4), TrySend::Closed));
                let rx = RingRx::Local(rx);
                assert_eq!(rx.recv().await, Some(1));
                assert!(waiting.await);
                assert_eq!(rx.recv().await, Some(3));
                assert_eq!(rx.recv().await, None);
                assert!(!tx.send(5).await);
            })
            .unwrap()
            .join()
            .unwrap();
    }
}
