//! Cross-shard request/reply mesh (Redpanda's `invoke_on`).
//!
//! Every ordered pair of shards `(a, b)` gets one bounded glommio
//! `shared_channel` (a lock-free single-producer/single-consumer ring with an
//! eventfd wake-up). Shard `a` sends its requests for `b` and its replies to
//! `b`'s requests on it, so a request is answered on the same pair of rings
//! it travelled. Each shard runs one receive task per peer: requests become
//! local tasks running the shard's [`MeshHandler`], replies complete the
//! caller's pending slot. A caller on shard `a` therefore just awaits
//! [`Mesh::invoke_on`]; the work runs on the owner, the answer comes back.
//!
//! Limits: a full ring makes the sender wait (backpressure, never a drop) and
//! at most `in_flight_max` requests per shard wait for answers at once.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::time::Duration;

use glommio::channels::shared_channel::{
    self, ConnectedReceiver, ConnectedSender, SharedReceiver, SharedSender,
};
use glommio::sync::Semaphore;

use super::oneshot::{local_oneshot, LocalSender};

/// A future that stays on the shard that created it.
pub type LocalBoxFuture<T> = Pin<Box<dyn Future<Output = T> + 'static>>;

/// Default ring capacity per ordered pair of shards, in messages.
pub const MESH_RING_CAPACITY_DEFAULT: usize = 1024;
/// Default most requests one shard may have waiting on other shards.
pub const MESH_IN_FLIGHT_MAX_DEFAULT: usize = 4096;
// A ring of no slots would never take a call.
const _: () = assert!(MESH_RING_CAPACITY_DEFAULT > 0 && MESH_IN_FLIGHT_MAX_DEFAULT > 0);
/// How long connecting the mesh may take before a shard gives up (a peer
/// that failed to start would otherwise hang everyone).
pub const MESH_CONNECT_TIMEOUT_MS: u64 = 30_000;

/// Runs requests that other shards forward to this one.
pub trait MeshHandler<Req, Resp>: 'static {
    fn handle(self: Rc<Self>, from_shard: usize, request: Req) -> LocalBoxFuture<Resp>;
}

/// Why a cross-shard call got no answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MeshError {
    #[error("shard {0} does not exist")]
    NoSuchShard(usize),
    #[error("the mesh link to shard {0} is closed")]
    Closed(usize),
    #[error("connecting the cross-shard mesh timed out after {0} ms")]
    ConnectTimeout(u64),
}

/// What travels on a ring.
pub enum MeshMessage<Req, Resp> {
    Request { id: u64, request: Req },
    Reply { id: u64, response: Resp },
}

/// One shard's unconnected ends of the mesh. `Send`: build all of them on
/// the starting thread with [`mesh_endpoints`], move each into its shard's
/// executor, then [`MeshEndpoints::connect`] there.
pub struct MeshEndpoints<Req: Send + 'static, Resp: Send + 'static> {
    shard: usize,
    to: Vec<Option<SharedSender<MeshMessage<Req, Resp>>>>,
    from: Vec<Option<SharedReceiver<MeshMessage<Req, Resp>>>>,
}

/// Builds the rings of a full mesh of `shard_count` shards: element `i` is
/// shard `i`'s ends.
pub fn mesh_endpoints<Req: Send + 'static, Resp: Send + 'static>(
    shard_count: usize,
    ring_capacity: usize,
) -> Vec<MeshEndpoints<Req, Resp>> {
    assert!(shard_count > 0, "a mesh needs at least one shard");
    assert!(ring_capacity > 0, "mesh rings need room for one message");
    let mut endpoints: Vec<MeshEndpoints<Req, Resp>> = (0..shard_count)
        .map(|shard| MeshEndpoints {
            shard,
            to: (0..shard_count).map(|_| None).collect(),
            from: (0..shard_count).map(|_| None).collect(),
        })
        .collect();
    for a in 0..shard_count {
        for b in 0..shard_count {
            if a != b {
                let (tx, rx) = shared_channel::new_bounded(ring_capacity);
                endpoints[a].to[b] = Some(tx);
                endpoints[b].from[a] = Some(rx);
            }
        }
    }
    endpoints
}

impl<Req: Send + 'static, Resp: Send + 'static> MeshEndpoints<Req, Resp> {
    pub fn shard(&self) -> usize {
        self.shard
    }

    pub fn shard_count(&self) -> usize {
        self.to.len()
    }

    /// Connects every ring of this shard (a barrier: it completes once every
    /// peer connected its ends, or failed and dropped them) and starts the
    /// receive tasks. Call on this shard's executor.
    pub async fn connect(
        self,
        handler: Rc<dyn MeshHandler<Req, Resp>>,
        in_flight_max: usize,
    ) -> Result<Rc<Mesh<Req, Resp>>, MeshError> {
        assert!(in_flight_max > 0, "in_flight_max must be positive");
        let shard = self.shard;
        let shard_count = self.to.len();
        let connect_all = async move {
            // Connect all ends concurrently: a sender's connect waits for its
            // peer's receiver, so connecting one by one could deadlock.
            let send_tasks: Vec<_> = self
                .to
                .into_iter()
                .map(|tx| glommio::spawn_local(async move { Some(tx?.connect().await) }))
                .collect();
            let recv_tasks: Vec<_> = self
                .from
                .into_iter()
                .map(|rx| glommio::spawn_local(async move { Some(rx?.connect().await) }))
                .collect();
            let mut senders = Vec::with_capacity(shard_count);
            for task in send_tasks {
                senders.push(task.await);
            }
            let mut receivers = Vec::with_capacity(shard_count);
            for task in recv_tasks {
                receivers.push(task.await);
            }
            Ok((senders, receivers))
        };
        let timeout = async {
            glommio::timer::sleep(Duration::from_millis(MESH_CONNECT_TIMEOUT_MS)).await;
            Err(MeshError::ConnectTimeout(MESH_CONNECT_TIMEOUT_MS))
        };
        let (senders, receivers) = futures_lite::future::or(connect_all, timeout).await?;
        let mesh = Rc::new(Mesh {
            shard,
            shard_count,
            senders,
            pending: RefCell::new(HashMap::new()),
            next_id: Cell::new(0),
            permits: Semaphore::new(in_flight_max as u64),
            handler,
            closed: Cell::new(false),
        });
        for (peer, receiver) in receivers.into_iter().enumerate() {
            if let Some(receiver) = receiver {
                glommio::spawn_local(receive_loop(mesh.clone(), peer, receiver)).detach();
            }
        }
        Ok(mesh)
    }
}

type Pending<Resp> = HashMap<u64, (usize, LocalSender<Resp>)>;

/// One shard's connected view of the mesh.
pub struct Mesh<Req: Send + 'static, Resp: Send + 'static> {
    shard: usize,
    shard_count: usize,
    senders: Vec<Option<ConnectedSender<MeshMessage<Req, Resp>>>>,
    pending: RefCell<Pending<Resp>>,
    next_id: Cell<u64>,
    permits: Semaphore,
    handler: Rc<dyn MeshHandler<Req, Resp>>,
    closed: Cell<bool>,
}

impl<Req: Send + 'static, Resp: Send + 'static> Mesh<Req, Resp> {
    /// This shard's index.
    pub fn shard(&self) -> usize {
        self.shard
    }

    pub fn shard_count(&self) -> usize {
        self.shard_count
    }

    /// Runs `request` on shard `target` and returns its answer. On this
    /// shard it calls the handler directly, without touching a ring.
    pub async fn invoke_on(&self, target: usize, request: Req) -> Result<Resp, MeshError> {
        if target >= self.shard_count {
            return Err(MeshError::NoSuchShard(target));
        }
        if target == self.shard {
            return Ok(self.handler.clone().handle(self.shard, request).await);
        }
        let sender = self.senders[target]
            .as_ref()
            .ok_or(MeshError::Closed(target))?;
        if self.closed.get() {
            return Err(MeshError::Closed(target));
        }
        let _permit = self
            .permits
            .acquire_permit(1)
            .await
            .map_err(|_| MeshError::Closed(target))?;
        let id = self.next_id.get();
        self.next_id.set(id.wrapping_add(1));
        let (reply_tx, reply_rx) = local_oneshot();
        self.pending.borrow_mut().insert(id, (target, reply_tx));
        if sender
            .send(MeshMessage::Request { id, request })
            .await
            .is_err()
        {
            self.pending.borrow_mut().remove(&id);
            return Err(MeshError::Closed(target));
        }
        reply_rx.await.ok_or(MeshError::Closed(target))
    }

    /// Runs a copy of `request` on every shard (this one included) at once;
    /// answers are in shard order.
    pub async fn broadcast(self: &Rc<Self>, request: Req) -> Vec<Result<Resp, MeshError>>
    where
        Req: Clone,
    {
        let tasks: Vec<_> = (0..self.shard_count)
            .map(|target| {
                let mesh = self.clone();
                let request = request.clone();
                glommio::spawn_local(async move { mesh.invoke_on(target, request).await })
            })
            .collect();
        let mut answers = Vec::with_capacity(tasks.len());
        for task in tasks {
            answers.push(task.await);
        }
        answers
    }

    /// Closes this shard's sending rings: peers' receive tasks end, later
    /// calls from this shard fail with [`MeshError::Closed`]. Call once the
    /// shard has stopped serving.
    pub fn close(&self) {
        self.closed.set(true);
        for sender in self.senders.iter().flatten() {
            sender.close();
        }
        self.permits.close();
    }

    fn complete(&self, id: u64, response: Resp) {
        let slot = self.pending.borrow_mut().remove(&id);
        if let Some((_, reply)) = slot {
            reply.send(response);
        }
    }

    /// Fails every call still waiting on `peer` (its ring closed).
    fn fail_pending(&self, peer: usize) {
        let mut pending = self.pending.borrow_mut();
        let ids: Vec<u64> = pending
            .iter()
            .filter(|(_, (target, _))| *target == peer)
            .map(|(id, _)| *id)
            .collect();
        // Dropping the senders wakes the callers with `Closed`.
        let dropped: Vec<_> = ids.iter().filter_map(|id| pending.remove(id)).collect();
        drop(pending);
        drop(dropped);
    }
}

async fn receive_loop<Req: Send + 'static, Resp: Send + 'static>(
    mesh: Rc<Mesh<Req, Resp>>,
    peer: usize,
    receiver: ConnectedReceiver<MeshMessage<Req, Resp>>,
) {
    while let Some(envelope) = receiver.recv().await {
        match envelope {
            MeshMessage::Request { id, request } => {
                let mesh = mesh.clone();
                glommio::spawn_local(async move {
                    let response = mesh.handler.clone().handle(peer, request).await;
                    if let Some(sender) = &mesh.senders[peer] {
                        if sender
                            .send(MeshMessage::Reply { id, response })
                            .await
                            .is_err()
                        {
                            tracing::debug!(peer, "reply dropped: mesh link closed");
                        }
                    }
                })
                .detach();
            }
            MeshMessage::Reply { id, response } => mesh.complete(id, response),
        }
    }
    mesh.fail_pending(peer);
}
