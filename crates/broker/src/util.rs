//! Small shared pieces: wall-clock time, a one-executor notifier, the
//! typed rejection every processor returns instead of a success, and the
//! waits and config writes of the background loops.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::future::{poll_fn, Future};
use std::sync::Arc;
use std::task::{Poll, Waker};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use ferrocket_protocol::body::DataVersion;
use ferrocket_protocol::codes::response_code;
use ferrocket_protocol::{ProtocolError, RemotingCommand};
use ferrocket_runtime::shard::MeshError;
use ferrocket_store::StoreError;
use futures_lite::future;
use serde::Serialize;

use crate::shard::Shard;

/// Wall-clock milliseconds since the Unix epoch.
pub(crate) fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// A request answered with an error code and remark.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Reject {
    pub code: i32,
    pub remark: String,
}

impl Reject {
    pub fn new(code: i32, remark: impl Into<String>) -> Self {
        Self {
            code,
            remark: remark.into(),
        }
    }

    pub fn system(remark: impl Into<String>) -> Self {
        Self::new(response_code::SYSTEM_ERROR, remark)
    }

    /// The response to `request`.
    pub fn to_response(&self, request: &RemotingCommand) -> RemotingCommand {
        RemotingCommand::response_to(request, self.code, Some(self.remark.clone()))
    }
}

impl From<ProtocolError> for Reject {
    fn from(err: ProtocolError) -> Self {
        Self::new(err.response_code(), err.to_string())
    }
}

impl From<StoreError> for Reject {
    fn from(err: StoreError) -> Self {
        Self::new(err.response_code(), err.to_string())
    }
}

impl From<MeshError> for Reject {
    fn from(err: MeshError) -> Self {
        Self::new(
            response_code::SYSTEM_BUSY,
            format!("broker is busy or stopping: {err}"),
        )
    }
}

/// Wakes one waiting task on the same executor; a notification sent while
/// nobody waits is kept until the next wait.
#[derive(Default)]
pub(crate) struct Notify {
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

/// Waits for `wake` unless the shard starts stopping first; returns whether
/// it stopped (a background loop then ends).
pub(crate) async fn wait_or_stop(shard: &Shard, wake: impl Future<Output = ()>) -> bool {
    future::or(
        async {
            wake.await;
            false
        },
        async {
            shard.stopping.wait().await;
            true
        },
    )
    .await
}

/// Sleeps `interval` unless the shard starts stopping first; returns
/// whether it stopped.
pub(crate) async fn sleep_or_stop(shard: &Shard, interval: Duration) -> bool {
    wait_or_stop(shard, glommio::timer::sleep(interval)).await
}

/// Writes a JSON config file on the blocking pool. A failure is logged and
/// answered as SYSTEM_ERROR, so a request whose change could not be
/// persisted is not told SUCCESS.
pub(crate) async fn write_config<T: Serialize + Send + Sync + 'static>(
    shard: &Shard,
    name: &'static str,
    value: Arc<T>,
) -> Result<(), Reject> {
    let dir = shard.env.config_dir.clone();
    let written = glommio::executor()
        .spawn_blocking(move || dir.write_json(name, &*value))
        .await;
    written.map_err(|err| {
        tracing::error!(file = name, %err, "persisting a config file failed");
        Reject::system(format!(
            "persisting {name} failed ({err}); the change was not made"
        ))
    })
}

/// One entry of a control-plane table (topics, groups) as it was before a
/// change, with the table's version: put back when the change could not
/// be persisted.
pub(crate) struct Undo<V> {
    name: String,
    entry: Option<V>,
    version: DataVersion,
}

impl<V: Clone> Undo<V> {
    pub fn record(map: &BTreeMap<String, V>, name: String, version: DataVersion) -> Self {
        let entry = map.get(&name).cloned();
        Self {
            name,
            entry,
            version,
        }
    }

    pub fn restore(self, map: &mut BTreeMap<String, V>, version: &mut DataVersion) {
        match self.entry {
            Some(entry) => map.insert(self.name, entry),
            None => map.remove(&self.name),
        };
        *version = self.version;
    }
}
