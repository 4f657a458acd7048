//! The executor-local wake and stop primitives every crate uses: a
//! [`Notify`] wakes one waiting task, a [`StopSignal`] tells every task of
//! an executor to stop (and ends a running [`serve`](crate::server::serve));
//! [`flag_set`] turns a cross-thread flag into a stop future.

use std::cell::{Cell, RefCell};
use std::future::{poll_fn, Future};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Poll, Waker};
use std::time::Duration;

use futures_lite::future;

/// How often [`flag_set`] looks at its flag when no interval is given.
pub const STOP_POLL_INTERVAL_MS: u64 = 100;

/// Completes once `flag` is true, checking every `poll_interval`. Use it to
/// stop a server from another thread (a signal handler, the CLI, a test).
pub async fn flag_set(flag: Arc<AtomicBool>, poll_interval: Duration) {
    while !flag.load(Ordering::Acquire) {
        glommio::timer::sleep(poll_interval).await;
    }
}

/// A stop trigger local to one executor: clone it, hand [`StopSignal::wait`]
/// to `serve`, call [`StopSignal::trigger`] from any task on that executor.
#[derive(Clone, Default)]
pub struct StopSignal {
    inner: Rc<StopInner>,
}

#[derive(Default)]
struct StopInner {
    triggered: Cell<bool>,
    wakers: RefCell<Vec<Waker>>,
}

impl StopSignal {
    pub fn new() -> Self {
        Self::default()
    }

    /// Fires the signal; every current and future `wait` completes.
    pub fn trigger(&self) {
        self.inner.triggered.set(true);
        let wakers = std::mem::take(&mut *self.inner.wakers.borrow_mut());
        for waker in wakers {
            waker.wake();
        }
    }

    pub fn is_triggered(&self) -> bool {
        self.inner.triggered.get()
    }

    /// Completes once the signal has fired.
    pub fn wait(&self) -> impl Future<Output = ()> + 'static {
        let inner = self.inner.clone();
        poll_fn(move |cx| {
            if inner.triggered.get() {
                return Poll::Ready(());
            }
            let mut wakers = inner.wakers.borrow_mut();
            if !wakers.iter().any(|w| w.will_wake(cx.waker())) {
                wakers.push(cx.waker().clone());
            }
            Poll::Pending
        })
    }

    /// Waits for `work` unless the signal fires first; returns whether it
    /// fired (a background loop then ends).
    pub async fn interrupts(&self, work: impl Future<Output = ()>) -> bool {
        future::or(
            async {
                work.await;
                false
            },
            async {
                self.wait().await;
                true
            },
        )
        .await
    }

    /// Sleeps `interval` unless the signal fires first; returns whether it
    /// fired.
    pub async fn interrupts_sleep(&self, interval: Duration) -> bool {
        self.interrupts(glommio::timer::sleep(interval)).await
    }
}

/// Wakes one waiting task on the same executor; a notification sent while
/// nobody waits is kept until the next wait.
#[derive(Default)]
pub struct Notify {
    pending: Cell<bool>,
    waker: RefCell<Option<Waker>>,
}

impl Notify {
    pub fn notify(&self) {
        self.pending.set(true);
        if let Some(waker) = self.waker.borrow_mut().take() {
            waker.wake();
        }
    }

    pub async fn wait(&self) {
        poll_fn(|cx| {
            if self.pending.replace(false) {
                Poll::Ready(())
            } else {
                *self.waker.borrow_mut() = Some(cx.waker().clone());
                Poll::Pending
            }
        })
        .await
    }
}

/// Wakes every task waiting for a change, on the same executor: a counter
/// that moves on each [`Changed::notify_all`], and the tasks parked on it.
#[derive(Default)]
pub struct Changed {
    epoch: Cell<u64>,
    wakers: RefCell<Vec<Waker>>,
}

impl Changed {
    /// How many changes so far; pass it to [`Changed::since`].
    pub fn epoch(&self) -> u64 {
        self.epoch.get()
    }

    pub fn notify_all(&self) {
        self.epoch.set(self.epoch.get().wrapping_add(1));
        for waker in self.wakers.borrow_mut().drain(..) {
            waker.wake();
        }
    }

    /// Resolves once a change after `seen` (an earlier [`Changed::epoch`]).
    pub async fn since(&self, seen: u64) {
        poll_fn(|cx| {
            if self.epoch.get() != seen {
                return Poll::Ready(());
            }
            let mut wakers = self.wakers.borrow_mut();
            if !wakers.iter().any(|w| w.will_wake(cx.waker())) {
                wakers.push(cx.waker().clone());
            }
            Poll::Pending
        })
        .await
    }
}
