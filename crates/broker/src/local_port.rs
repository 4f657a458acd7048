//! The handle of the broker's in-process door (`proxyMode=local`): a front
//! end in the same process, the in-broker gRPC endpoint, hands Remoting
//! requests to a shard's request handler directly. No socket, no frame
//! encoding and no name-server lookup sit between them; the answer comes
//! back as the value the handler returned. The shards' side is
//! `wire::local`.
//!
//! Calls come from the endpoint's threads through a channel per shard; a
//! call that names a queue (send, pull, pop, ack) goes to the queue's
//! owner, the others round-robin.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock};

use ferrocket_protocol::codes::request_code;
use ferrocket_protocol::RemotingCommand;
use ferrocket_runtime::shard::owner_shard;
use futures_channel::{mpsc, oneshot};

/// Most in-process calls queued or being answered on one shard at once (as
/// many as one Remoting connection may have in flight); more are refused
/// with [`LocalError::Busy`].
pub const LOCAL_CALLS_MAX: usize = 16_384;

/// Why an in-process call was not taken.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LocalError {
    #[error("the broker is not serving yet, or has stopped")]
    NotServing,
    #[error("shard {shard} has {calls} in-process calls open, the most it takes")]
    Busy { shard: usize, calls: usize },
}

/// What the broker sends the front end's clients (transaction checks).
pub type RequestSink = Arc<dyn Fn(RemotingCommand) + Send + Sync>;

/// The answer to one call, filled when the handler returns (dropped
/// unanswered if the broker stops first).
pub type LocalReply = oneshot::Receiver<RemotingCommand>;

/// One call, as a shard takes it.
pub(crate) struct LocalCall {
    pub request: RemotingCommand,
    pub reply: oneshot::Sender<RemotingCommand>,
}

/// A shard's end of its door: the calls, and the count of those it holds.
pub(crate) struct DoorInbox {
    pub calls: mpsc::UnboundedReceiver<LocalCall>,
    pub open: OpenCalls,
}

/// The calls a door holds, taken or queued.
#[derive(Clone)]
pub(crate) struct OpenCalls(Arc<AtomicUsize>);

impl OpenCalls {
    /// One call of this door was answered (or dropped).
    pub fn answered(&self) {
        let before = self.0.fetch_sub(1, Ordering::AcqRel);
        assert!(before > 0, "more calls answered than taken");
    }
}

/// One shard's side of the door: its channel and how many calls it holds.
struct ShardDoor {
    calls: mpsc::UnboundedSender<LocalCall>,
    open: Arc<AtomicUsize>,
}

#[derive(Default)]
struct Doors {
    shards: RwLock<Vec<Option<ShardDoor>>>,
    next: AtomicUsize,
    sink: Mutex<Option<RequestSink>>,
    /// The address the broker registers with name servers.
    broker_addr: OnceLock<String>,
}

/// The handle both sides share: made by whoever runs the broker, given to
/// the front end and to the broker's config (`local_port`). Cheap to clone.
#[derive(Clone, Default)]
pub struct LocalPort(Arc<Doors>);

impl LocalPort {
    pub fn new() -> Self {
        Self::default()
    }

    /// Hands `request` to a serving shard; the reply carries its answer.
    pub fn call(&self, request: RemotingCommand) -> Result<LocalReply, LocalError> {
        let shards = self.0.shards.read().unwrap_or_else(|e| e.into_inner());
        let count = shards.len();
        if count == 0 {
            return Err(LocalError::NotServing);
        }
        let first = owner_of(&request, count)
            .unwrap_or_else(|| self.0.next.fetch_add(1, Ordering::Relaxed) % count);
        let Some((shard, door)) = (0..count)
            .map(|step| (first + step) % count)
            .find_map(|i| shards[i].as_ref().map(|door| (i, door)))
        else {
            return Err(LocalError::NotServing);
        };
        let calls = door.open.fetch_add(1, Ordering::AcqRel);
        if calls >= LOCAL_CALLS_MAX {
            door.open.fetch_sub(1, Ordering::AcqRel);
            return Err(LocalError::Busy { shard, calls });
        }
        let (reply, answer) = oneshot::channel();
        if door
            .calls
            .unbounded_send(LocalCall { request, reply })
            .is_err()
        {
            door.open.fetch_sub(1, Ordering::AcqRel);
            return Err(LocalError::NotServing);
        }
        Ok(answer)
    }

    /// The address the broker registers with name servers (routes name it),
    /// once it serves.
    pub fn broker_addr(&self) -> Option<&str> {
        self.0.broker_addr.get().map(String::as_str)
    }

    /// Where requests the broker sends the front end's clients go.
    pub fn on_requests(&self, sink: RequestSink) {
        *self.0.sink.lock().unwrap_or_else(|e| e.into_inner()) = Some(sink);
    }

    /// Opens shard `shard`'s (of `count`) door; `broker_addr` is what the
    /// broker registers with name servers, the same on every shard.
    pub(crate) fn open_door(&self, shard: usize, count: usize, broker_addr: &str) -> DoorInbox {
        let (calls, received) = mpsc::unbounded();
        let open = Arc::new(AtomicUsize::new(0));
        let _ = self.0.broker_addr.set(broker_addr.to_string());
        let door = ShardDoor {
            calls,
            open: Arc::clone(&open),
        };
        self.attach(shard, count, door);
        DoorInbox {
            calls: received,
            open: OpenCalls(open),
        }
    }

    fn attach(&self, shard: usize, count: usize, door: ShardDoor) {
        let mut shards = self.0.shards.write().unwrap_or_else(|e| e.into_inner());
        if shards.len() != count {
            assert!(shards.iter().all(Option::is_none), "shard count changed");
            shards.resize_with(count, || None);
        }
        shards[shard] = Some(door);
    }

    pub(crate) fn detach(&self, shard: usize) {
        let mut shards = self.0.shards.write().unwrap_or_else(|e| e.into_inner());
        if let Some(door) = shards.get_mut(shard) {
            *door = None;
        }
    }

    pub(crate) fn to_front_end(&self, request: RemotingCommand) {
        let sink = self
            .0
            .sink
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        match sink {
            Some(sink) => sink(request),
            None => tracing::debug!(code = request.code, "no front end takes broker requests"),
        }
    }
}

/// The shard owning the queue a send, pull, pop, ack or invisible-time
/// change names; shard 0 for client registrations, so that every client
/// of the endpoint has one connection, as over one Remoting connection;
/// `None` when the request names no queue (or any queue).
fn owner_of(request: &RemotingCommand, count: usize) -> Option<usize> {
    use request_code::*;
    let (topic_key, queue_key) = match request.code {
        HEART_BEAT | UNREGISTER_CLIENT => return Some(0),
        SEND_MESSAGE_V2 => ("b", "e"),
        SEND_MESSAGE | PULL_MESSAGE | POP_MESSAGE | ACK_MESSAGE | CHANGE_MESSAGE_INVISIBLETIME => {
            ("topic", "queueId")
        }
        _ => return None,
    };
    let topic = request.ext_fields.get(topic_key)?;
    let queue: i32 = request.ext_fields.get(queue_key)?.trim().parse().ok()?;
    (queue >= 0).then(|| owner_shard(topic, queue, count))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(code: i32, fields: &[(&str, &str)]) -> RemotingCommand {
        let mut request = RemotingCommand::request(code);
        for (key, value) in fields {
            request.ext_fields.insert(key, value);
        }
        request
    }

    #[test]
    fn a_call_naming_a_queue_goes_to_its_owner() {
        let v2 = request(request_code::SEND_MESSAGE_V2, &[("b", "T"), ("e", "3")]);
        assert_eq!(owner_of(&v2, 4), Some(owner_shard("T", 3, 4)));
        let pop = request(
            request_code::POP_MESSAGE,
            &[("topic", "T"), ("queueId", "1")],
        );
        assert_eq!(owner_of(&pop, 4), Some(owner_shard("T", 1, 4)));
        let any = request(
            request_code::POP_MESSAGE,
            &[("topic", "T"), ("queueId", "-1")],
        );
        assert_eq!(owner_of(&any, 4), None);
        let heartbeat = request(request_code::HEART_BEAT, &[]);
        assert_eq!(owner_of(&heartbeat, 4), Some(0));
        let route = request(request_code::GET_ROUTEINFO_BY_TOPIC, &[("topic", "T")]);
        assert_eq!(owner_of(&route, 4), None);
    }

    #[test]
    fn calls_wait_for_a_serving_shard_and_stop_at_the_limit() {
        let port = LocalPort::new();
        let ping = || request(request_code::HEART_BEAT, &[]);
        assert_eq!(port.call(ping()).err(), Some(LocalError::NotServing));
        let (calls, _received) = mpsc::unbounded();
        let open = Arc::new(AtomicUsize::new(LOCAL_CALLS_MAX - 1));
        let door = ShardDoor {
            calls,
            open: Arc::clone(&open),
        };
        port.attach(1, 2, door);
        assert!(port.call(ping()).is_ok(), "shard 1 serves for shard 0 too");
        assert_eq!(
            port.call(ping()).err(),
            Some(LocalError::Busy {
                shard: 1,
                calls: LOCAL_CALLS_MAX
            })
        );
        port.detach(1);
        assert_eq!(port.call(ping()).err(), Some(LocalError::NotServing));
    }
}
