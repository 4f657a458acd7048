//! Receipt-handle auto-renew for v5 push consumers, as RocketMQ's proxy
//! does (`DefaultReceiptHandleManager`): a receive with `auto_renew` from a
//! client whose Settings say PUSH_CONSUMER pops with
//! `defaultInvisibleTimeMills` (not the client's duration), and each
//! message's handle is tracked under the client. Every
//! `renewSchedulePeriodMillis` the handles within `renewAheadTimeMillis` of
//! turning visible are renewed through ChangeInvisibleDuration's own path
//! (1, 3, 5, 10, 30 minutes, then an hour at a time); the broker hands out
//! a new handle each time, kept here, and the client's ack, nack
//! (ChangeInvisibleDuration) or ForwardMessageToDeadLetterQueue with the
//! handle it received is sent with the newest one and ends the tracking.
//! After `renewMaxTimeMillis` a message gets the group's retry wait instead
//! (Java's STOP_RENEW) and is left to come back; after
//! `maxRenewRetryTimes` failed renewals it is left to expire. A client
//! whose Telemetry session is gone has its messages made visible again
//! after `invisibleTimeMillisWhenClear` (Java's CLEAR_GROUP).
//!
//! Bounded: `maxRenewHandlesPerClient` and `maxRenewHandles` handles are
//! tracked at most; a message past them is delivered but not renewed.

pub mod calls;
pub mod settings;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

pub use settings::{RenewSettings, RENEW_SETTINGS};

use crate::convert::now_ms;

/// The newest handle of one delivery; `None` once the tracking ended. A
/// renewal holds the lock while it runs, so an ack waits for its handle.
type Current = Arc<tokio::sync::Mutex<Option<String>>>;

/// One delivery being renewed.
#[derive(Clone)]
struct Tracked {
    group: String,
    topic: String,
    message_id: String,
    received_ms: i64,
    /// Deliveries before this one: picks the retry wait at the maximum.
    reconsumed: u32,
    renewed: u32,
    failures: u32,
    /// When the newest handle's message turns visible.
    visible_at_ms: i64,
    current: Current,
}

/// A tracked delivery handed to a renewal or a release.
struct Job {
    client: String,
    original: String,
    tracked: Tracked,
}

#[derive(Default)]
struct Inner {
    /// Client id → the handle it received → its delivery.
    clients: HashMap<String, HashMap<String, Tracked>>,
    total: usize,
}

/// What a new delivery is tracked with.
pub(crate) struct Delivered {
    pub group: String,
    pub topic: String,
    pub message_id: String,
    pub handle: String,
    pub reconsumed: u32,
    pub visible_at_ms: i64,
}

/// Every tracked handle of the endpoint.
pub struct Renewals {
    settings: RenewSettings,
    inner: Mutex<Inner>,
    looping: AtomicBool,
}

impl Renewals {
    pub fn new(settings: RenewSettings) -> Self {
        Renewals {
            settings,
            inner: Mutex::new(Inner::default()),
            looping: AtomicBool::new(false),
        }
    }

    pub fn settings(&self) -> &RenewSettings {
        &self.settings
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Handles tracked now.
    pub fn len(&self) -> usize {
        self.lock().total
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Tracks a delivery to `client`; false when a limit is reached.
    pub(crate) fn track(&self, client: &str, delivered: Delivered) -> bool {
        let mut inner = self.lock();
        let per_client = inner.clients.get(client).map_or(0, HashMap::len);
        if inner.total >= self.settings.total_max || per_client >= self.settings.per_client_max {
            return false;
        }
        let tracked = Tracked {
            group: delivered.group,
            topic: delivered.topic,
            message_id: delivered.message_id,
            received_ms: now_ms(),
            reconsumed: delivered.reconsumed,
            renewed: 0,
            failures: 0,
            visible_at_ms: delivered.visible_at_ms,
            current: Arc::new(tokio::sync::Mutex::new(Some(delivered.handle.clone()))),
        };
        let handles = inner.clients.entry(client.to_string()).or_default();
        if handles.insert(delivered.handle, tracked).is_none() {
            inner.total += 1;
        }
        debug_assert_eq!(
            inner.total,
            inner.clients.values().map(HashMap::len).sum::<usize>()
        );
        true
    }

    /// Ends the tracking of `handle` (the one `client` received) and gives
    /// the newest handle of its message, once a renewal in flight is done;
    /// `None` when it is not tracked (or no longer renewed).
    pub(crate) async fn take(&self, client: &str, handle: &str) -> Option<String> {
        let current = {
            let mut inner = self.lock();
            let handles = inner.clients.get_mut(client)?;
            let tracked = handles.remove(handle)?;
            if handles.is_empty() {
                inner.clients.remove(client);
            }
            inner.total -= 1;
            tracked.current
        };
        let taken = current.lock().await.take();
        taken
    }

    fn forget(&self, client: &str, original: &str) {
        let mut inner = self.lock();
        let Some(handles) = inner.clients.get_mut(client) else {
            return;
        };
        if handles.remove(original).is_some() {
            if handles.is_empty() {
                inner.clients.remove(client);
            }
            inner.total -= 1;
        }
    }

    /// After a renewal: the delivery's new state.
    fn renewed(&self, job: &Job, visible_at_ms: i64, failed: bool) {
        let mut inner = self.lock();
        let tracked = inner
            .clients
            .get_mut(&job.client)
            .and_then(|handles| handles.get_mut(&job.original));
        if let Some(tracked) = tracked {
            match failed {
                true => tracked.failures += 1,
                false => {
                    tracked.failures = 0;
                    tracked.renewed += 1;
                    tracked.visible_at_ms = visible_at_ms;
                }
            }
        }
    }

    /// Every delivery of the clients `online` says are gone, untracked.
    fn take_gone(&self, online: impl Fn(&str) -> bool) -> Vec<Job> {
        let mut inner = self.lock();
        let gone: Vec<String> = inner
            .clients
            .keys()
            .filter(|client| !online(client))
            .cloned()
            .collect();
        let mut jobs = Vec::new();
        for client in gone {
            let Some(handles) = inner.clients.remove(&client) else {
                continue;
            };
            inner.total -= handles.len();
            jobs.extend(handles.into_iter().map(|(original, tracked)| Job {
                client: client.clone(),
                original,
                tracked,
            }));
        }
        jobs
    }

    /// The deliveries within `renewAheadTimeMillis` of turning visible.
    fn due(&self, now_ms: i64) -> Vec<Job> {
        let ahead = self.settings.ahead_ms;
        let inner = self.lock();
        inner
            .clients
            .iter()
            .flat_map(|(client, handles)| {
                handles
                    .iter()
                    .filter(move |(_, t)| t.visible_at_ms - now_ms <= ahead)
                    .map(move |(original, tracked)| Job {
                        client: client.clone(),
                        original: original.clone(),
                        tracked: tracked.clone(),
                    })
            })
            .collect()
    }

    /// True the first time only: the caller starts the renew loop.
    pub(crate) fn first_start(&self) -> bool {
        !self.looping.swap(true, Ordering::AcqRel)
    }

    /// How often the renew loop runs.
    pub(crate) fn period(&self) -> Duration {
        Duration::from_millis(self.settings.period_ms.max(1) as u64)
    }
}

#[cfg(test)]
mod tests;
