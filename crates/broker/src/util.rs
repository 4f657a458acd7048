//! Small shared pieces: wall-clock time, a one-executor notifier, and the
//! typed rejection every processor returns instead of a success.

use std::cell::{Cell, RefCell};
use std::future::poll_fn;
use std::task::{Poll, Waker};
use std::time::{SystemTime, UNIX_EPOCH};

use ferrocket_protocol::codes::response_code;
use ferrocket_protocol::{ProtocolError, RemotingCommand};
use ferrocket_runtime::shard::MeshError;
use ferrocket_store::StoreError;

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
