//! Shard 0's loops of the role in force (controller mode changes the role
//! in place: `tasks::ha::role`): they end at the next role change.

use std::cell::Cell;
use std::future::Future;
use std::rc::Rc;
use std::time::{Duration, Instant};

use ferrocket_runtime::sync::StopSignal;
use futures_lite::future;

/// Longest the old role's loops may take to end.
const ROLE_STOP_TIMEOUT_MS: u64 = 10_000;

/// The loops of the role in force (shard 0's HA side).
#[derive(Default)]
pub(crate) struct RoleTasks {
    stop: std::cell::RefCell<StopSignal>,
    running: Rc<Cell<u32>>,
}

impl RoleTasks {
    /// `work`, ended by the next role change (it ends by itself at
    /// shutdown).
    pub(crate) fn scoped(
        &self,
        work: impl Future<Output = ()> + 'static,
    ) -> impl Future<Output = ()> + 'static {
        let stop = self.stop.borrow().clone();
        let running = Rc::clone(&self.running);
        running.set(running.get() + 1);
        async move {
            let _running = Running(running);
            future::or(work, stop.wait()).await;
        }
    }

    /// Ends the role's loops and waits until they ended.
    pub(crate) async fn stop_all(&self) -> Result<(), String> {
        let old = std::mem::take(&mut *self.stop.borrow_mut());
        old.trigger();
        let until = Instant::now() + Duration::from_millis(ROLE_STOP_TIMEOUT_MS);
        while self.running.get() > 0 {
            if Instant::now() >= until {
                return Err("the old role's loops did not end".into());
            }
            glommio::timer::sleep(Duration::from_millis(1)).await;
        }
        Ok(())
    }
}

struct Running(Rc<Cell<u32>>);

impl Drop for Running {
    fn drop(&mut self) {
        self.0.set(self.0.get().saturating_sub(1));
    }
}
