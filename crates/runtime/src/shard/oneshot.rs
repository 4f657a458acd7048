//! A single-value channel between tasks of one executor (no atomics, no
//! locks): the cross-shard mesh parks a caller on it until the owner shard's
//! reply arrives.

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

struct Shared<T> {
    value: Option<T>,
    waker: Option<Waker>,
    closed: bool,
}

/// The sending half; dropping it unsent wakes the receiver with `None`.
pub struct LocalSender<T> {
    slot: Rc<RefCell<Shared<T>>>,
}

/// The receiving half: a future yielding the value, or `None` when the
/// sender was dropped without sending.
pub struct LocalReceiver<T> {
    slot: Rc<RefCell<Shared<T>>>,
}

pub fn local_oneshot<T>() -> (LocalSender<T>, LocalReceiver<T>) {
    let slot = Rc::new(RefCell::new(Shared {
        value: None,
        waker: None,
        closed: false,
    }));
    (LocalSender { slot: slot.clone() }, LocalReceiver { slot })
}

impl<T> LocalSender<T> {
    pub fn send(self, value: T) {
        let waker = {
            let mut slot = self.slot.borrow_mut();
            slot.value = Some(value);
            slot.waker.take()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }
}

impl<T> Drop for LocalSender<T> {
    fn drop(&mut self) {
        let waker = {
            let mut slot = self.slot.borrow_mut();
            slot.closed = true;
            slot.waker.take()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }
}

impl<T> Future for LocalReceiver<T> {
    type Output = Option<T>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<T>> {
        let mut slot = self.slot.borrow_mut();
        if let Some(value) = slot.value.take() {
            return Poll::Ready(Some(value));
        }
        if slot.closed {
            return Poll::Ready(None);
        }
        slot.waker = Some(cx.waker().clone());
        Poll::Pending
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delivers_value_or_none() {
        let (tx, rx) = local_oneshot();
        tx.send(5);
        assert_eq!(futures_lite::future::block_on(rx), Some(5));
        let (tx, rx) = local_oneshot::<u8>();
        drop(tx);
        assert_eq!(futures_lite::future::block_on(rx), None);
    }
}
