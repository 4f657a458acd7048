//! A one-shot stop signal for one background task on the same executor, so
//! shutdown can end a periodic task at once and wait for it (a blocking-pool
//! call still in flight when its executor exits makes glommio panic).

use std::cell::{Cell, RefCell};
use std::future::poll_fn;
use std::task::{Poll, Waker};
use std::time::Duration;

use futures_lite::future;

#[derive(Default)]
pub(crate) struct Stop {
    stopped: Cell<bool>,
    waiter: RefCell<Option<Waker>>,
}

impl Stop {
    pub(crate) fn stop(&self) {
        self.stopped.set(true);
        if let Some(waker) = self.waiter.borrow_mut().take() {
            waker.wake();
        }
    }

    /// Sleeps `interval`; true when stopped meanwhile (or before).
    pub(crate) async fn sleep(&self, interval: Duration) -> bool {
        let stopped = poll_fn(|cx| {
            if self.stopped.get() {
                Poll::Ready(true)
            } else {
                *self.waiter.borrow_mut() = Some(cx.waker().clone());
                Poll::Pending
            }
        });
        let slept = async {
            glommio::timer::sleep(interval).await;
            false
        };
        future::or(stopped, slept).await || self.stopped.get()
    }
}
