//! Held pulls (RocketMQ's `PullRequestHoldService`), on the queue's owner
//! shard. A pull that found nothing new registers here; the store's
//! dispatch listener wakes it as soon as an entry for its queue that passes
//! its filter lands in the ConsumeQueue. Timeouts are the caller's: it races
//! the wake-up against a timer and deregisters when the timer wins.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::sync::Arc;

use ferrocket_runtime::shard::{local_oneshot, LocalReceiver, LocalSender};

use crate::services::filter::TagFilter;

/// Held pulls by queue.
type WaitersByQueue = HashMap<(Arc<str>, i32), Vec<Waiter>>;

struct Waiter {
    id: u64,
    filter: TagFilter,
    wake: LocalSender<()>,
}

/// The held pulls of one shard.
pub(crate) struct LongPolls {
    waiters: RefCell<WaitersByQueue>,
    count: Cell<usize>,
    count_max: usize,
    next_id: Cell<u64>,
    closed: Cell<bool>,
}

/// A registered wait: await `woken`, then [`LongPolls::forget`] its id.
pub(crate) struct Held {
    pub id: u64,
    pub woken: LocalReceiver<()>,
}

impl LongPolls {
    pub fn new(count_max: usize) -> Self {
        Self {
            waiters: RefCell::new(HashMap::new()),
            count: Cell::new(0),
            count_max,
            next_id: Cell::new(0),
            closed: Cell::new(false),
        }
    }

    /// Holds a pull on `(topic, queue_id)`; `None` when the shard holds its
    /// maximum already or is stopping (answer at once instead).
    pub fn hold(&self, topic: &str, queue_id: i32, filter: TagFilter) -> Option<Held> {
        if self.closed.get() || self.count.get() >= self.count_max {
            return None;
        }
        let id = self.next_id.get();
        self.next_id.set(id + 1);
        let (wake, woken) = local_oneshot();
        self.waiters
            .borrow_mut()
            .entry((Arc::from(topic), queue_id))
            .or_default()
            .push(Waiter { id, filter, wake });
        self.count.set(self.count.get() + 1);
        Some(Held { id, woken })
    }

    /// Removes a wait that ended by timeout (a woken one is already gone).
    pub fn forget(&self, topic: &str, queue_id: i32, id: u64) {
        let mut waiters = self.waiters.borrow_mut();
        let key = (Arc::from(topic), queue_id);
        if let Some(list) = waiters.get_mut(&key) {
            if let Some(pos) = list.iter().position(|w| w.id == id) {
                list.swap_remove(pos);
                self.count.set(self.count.get() - 1);
            }
            if list.is_empty() {
                waiters.remove(&key);
            }
        }
    }

    /// A message with `tags_code` arrived on the queue: wakes the waits it
    /// satisfies.
    pub fn notify(&self, topic: &Arc<str>, queue_id: i32, tags_code: i64) {
        let woken: Vec<Waiter> = {
            let mut waiters = self.waiters.borrow_mut();
            let key = (Arc::clone(topic), queue_id);
            let Some(list) = waiters.get_mut(&key) else {
                return;
            };
            let (wake, keep): (Vec<Waiter>, Vec<Waiter>) =
                list.drain(..).partition(|w| w.filter.matches(tags_code));
            *list = keep;
            if list.is_empty() {
                waiters.remove(&key);
            }
            wake
        };
        self.count.set(self.count.get() - woken.len());
        for waiter in woken {
            waiter.wake.send(());
        }
    }

    /// Wakes every wait and refuses new ones (shutdown).
    pub fn close(&self) {
        self.closed.set(true);
        let all: Vec<Waiter> = self
            .waiters
            .borrow_mut()
            .drain()
            .flat_map(|(_, l)| l)
            .collect();
        self.count.set(0);
        for waiter in all {
            waiter.wake.send(());
        }
    }

    pub fn held_count(&self) -> usize {
        self.count.get()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferrocket_protocol::properties::tags_code;
    use futures_lite::future::block_on;

    #[test]
    fn wakes_matching_waits_only() {
        let polls = LongPolls::new(2);
        let topic: Arc<str> = Arc::from("T");
        let any = polls.hold("T", 0, TagFilter::All).unwrap();
        let tagged = polls
            .hold("T", 0, TagFilter::parse("a", None).unwrap())
            .unwrap();
        assert!(polls.hold("T", 1, TagFilter::All).is_none(), "limit of 2");
        polls.notify(&topic, 0, tags_code("b"));
        assert_eq!(block_on(any.woken), Some(()));
        assert_eq!(polls.held_count(), 1);
        polls.notify(&topic, 1, tags_code("a"));
        assert_eq!(polls.held_count(), 1, "other queue");
        polls.forget("T", 0, tagged.id);
        assert_eq!(polls.held_count(), 0);
        polls.close();
        assert!(polls.hold("T", 0, TagFilter::All).is_none());
    }
}
