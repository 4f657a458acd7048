//! Ways to tell a running [`serve`](super::serve) to stop: any future that
//! completes does; these two cover the common cases.

use std::cell::{Cell, RefCell};
use std::future::{poll_fn, Future};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Poll, Waker};
use std::time::Duration;

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
}
