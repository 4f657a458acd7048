//! The accept loop and graceful stop.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::future::{poll_fn, Future};
use std::pin::pin;
use std::rc::Rc;
use std::task::{Poll, Waker};
use std::time::Duration;

use futures_lite::future;
use glommio::net::{TcpListener, TcpStream};

use super::conn_loop::run_connection;
use super::connection::{next_conn_id, Connection};
use super::handoff::{hand_over, Handoff};
use super::opening::{accept_tls, classify, Opening};
use super::{RequestHandler, ServerConfig};
use ferrocket_tls::MaybeTls;

/// Pause after a failed accept (out of file descriptors, say) so the loop
/// does not spin.
pub const ACCEPT_ERROR_BACKOFF_MS: u64 = 50;
/// Least time between two budget-driven sheds (each walks every connection).
pub const SHED_INTERVAL_MS: u64 = 100;
/// A connection is shed only after its socket took none of our output this
/// long; a fast reader's socket is full for an instant only.
pub const SHED_BLOCKED_MS_MIN: u64 = 1_000;

/// Live connections of one server, and who waits for them to end.
#[derive(Default)]
struct Registry {
    conns: RefCell<HashMap<u64, Rc<Connection>>>,
    /// Connections being classified or in their TLS handshake (they count
    /// against the connection limit).
    openings: Cell<usize>,
    /// Set once the server stops accepting: an opening that ends later is
    /// closed, not served.
    stopped: Cell<bool>,
    empty_waker: Cell<Option<Waker>>,
}

impl Registry {
    fn remove(&self, conn_id: u64) {
        let empty = {
            let mut conns = self.conns.borrow_mut();
            conns.remove(&conn_id);
            conns.is_empty()
        };
        if empty {
            if let Some(waker) = self.empty_waker.take() {
                waker.wake();
            }
        }
    }

    fn snapshot(&self) -> Vec<Rc<Connection>> {
        self.conns.borrow().values().cloned().collect()
    }

    async fn wait_empty(&self) {
        poll_fn(|cx| {
            if self.conns.borrow().is_empty() {
                return Poll::Ready(());
            }
            self.empty_waker.set(Some(cx.waker().clone()));
            Poll::Pending
        })
        .await
    }
}

/// Serves Remoting requests on `listener` with `handler` until `stop`
/// completes, then stops gracefully: no more accepts or reads, in-flight
/// requests get up to `drain_timeout_ms` to be answered and flushed, and
/// every connection is closed before this returns.
///
/// Must run on the glommio executor that owns `listener`.
pub async fn serve<H, S>(listener: TcpListener, handler: Rc<H>, config: ServerConfig, stop: S)
where
    H: RequestHandler,
    S: Future<Output = ()>,
{
    let registry = Rc::new(Registry::default());
    let local = listener.local_addr().ok();
    tracing::debug!(?local, shard = config.shard_index, "serving");
    super::budget::set_budget(config.limits.shard_bytes_max);
    let sweeper = glommio::spawn_local(sweep_loop(registry.clone()));
    let mut stop = pin!(stop);
    loop {
        match accept_unless(&listener, stop.as_mut()).await {
            None => break,
            Some(Ok(stream)) => start_connection(stream, &handler, &config, &registry),
            Some(Err(e)) => {
                tracing::warn!(?local, "accept failed: {e}");
                glommio::timer::sleep(Duration::from_millis(ACCEPT_ERROR_BACKOFF_MS)).await;
            }
        }
    }
    drop(listener);
    registry.stopped.set(true);
    drop(sweeper);
    let conns = registry.snapshot();
    tracing::debug!(
        ?local,
        connections = conns.len(),
        "stopping: draining connections"
    );
    for conn in &conns {
        conn.begin_drain();
    }
    drop(conns);
    let drain = Duration::from_millis(config.limits.drain_timeout_ms);
    let drained = future::or(
        async {
            registry.wait_empty().await;
            true
        },
        async {
            glommio::timer::sleep(drain).await;
            false
        },
    )
    .await;
    if !drained {
        let conns = registry.snapshot();
        tracing::warn!(
            ?local,
            connections = conns.len(),
            "drain timed out; closing connections"
        );
        for conn in &conns {
            conn.close();
        }
        drop(conns);
        registry.wait_empty().await;
    }
    tracing::debug!(?local, "stopped");
}

/// How long stopping waits to connect to its own listener.
const SELF_CONNECT_TIMEOUT_MS: u64 = 100;
/// How many connections stopping makes to complete its own pending accept.
const SELF_CONNECT_TRIES_MAX: usize = 32;
/// How long it waits for each to land.
const SELF_CONNECT_WAIT_MS: u64 = 20;

/// The next connection on `listener`, or `None` once `stop` completes
/// (checked first, so a flood of connections cannot starve it).
///
/// The accept in flight when `stop` completes is finished before this
/// returns: the kernel completes an io_uring accept whether or not anyone
/// still waits for it, and a socket it hands to nobody is never closed. A
/// client that connected just then hung until its own timeout, and the
/// descriptor leaked (seen when controller mode restarts a broker within
/// its process). A connection to the listener itself completes the accept,
/// and what it brings (that connection, or a client's that came first) is
/// closed.
pub async fn accept_unless<S: Future<Output = ()>>(
    listener: &TcpListener,
    mut stop: std::pin::Pin<&mut S>,
) -> Option<glommio::Result<TcpStream, ()>> {
    let mut accept = pin!(listener.accept());
    let accepted = future::or(
        async {
            stop.as_mut().await;
            None
        },
        async { Some(accept.as_mut().await) },
    )
    .await;
    if accepted.is_some() {
        return accepted;
    }
    let Ok(local) = listener.local_addr() else {
        return None;
    };
    // With several shards on one port (SO_REUSEPORT) the kernel spreads
    // connections over their listeners by source port: connect again until
    // one lands here, a bounded number of times.
    let timeout = Duration::from_millis(SELF_CONNECT_TIMEOUT_MS);
    let mut wakers = Vec::new();
    for _ in 0..SELF_CONNECT_TRIES_MAX {
        wakers.push(std::net::TcpStream::connect_timeout(&local, timeout));
        let landed = future::or(async { Some(accept.as_mut().await) }, async {
            glommio::timer::sleep(Duration::from_millis(SELF_CONNECT_WAIT_MS)).await;
            None
        })
        .await;
        if landed.is_some() {
            break;
        }
    }
    None
}

/// Closes connections past a timeout (see `watch`) every
/// [`SWEEP_INTERVAL_MS`](super::SWEEP_INTERVAL_MS), and sheds non-readers
/// soon after the thread goes over its byte budget (see `budget`), at most
/// once per [`SHED_INTERVAL_MS`]; ends when dropped.
async fn sweep_loop(registry: Rc<Registry>) {
    let mut last_shed = std::time::Instant::now();
    loop {
        let tick = async {
            glommio::timer::sleep(Duration::from_millis(super::SWEEP_INTERVAL_MS)).await;
            true
        };
        // Already over (and nothing left to shed): wait for the tick.
        let over_at_start = super::budget::over();
        let over_budget = poll_fn(|cx| {
            if !over_at_start && super::budget::over() {
                return Poll::Ready(false);
            }
            super::budget::set_sweeper(cx.waker().clone());
            Poll::Pending
        });
        let ticked = future::or(tick, over_budget).await;
        if super::budget::over() {
            let since = last_shed.elapsed();
            let spacing = Duration::from_millis(SHED_INTERVAL_MS);
            if since < spacing {
                glommio::timer::sleep(spacing - since).await;
            }
            last_shed = std::time::Instant::now();
            shed_non_readers(&registry);
        }
        if ticked {
            close_expired(&registry);
        }
    }
}

/// Closes the connections past one of their timeouts.
fn close_expired(registry: &Registry) {
    let now = std::time::Instant::now();
    for conn in registry.snapshot() {
        let expiry = conn.watch.expired(
            now,
            conn.limits(),
            conn.inflight_requests(),
            conn.queued_bytes(),
        );
        if let Some(expiry) = expiry {
            tracing::info!(conn = conn.id(), peer = %conn.peer_addr(),
                reason = expiry.reason(), "closing connection");
            conn.close();
        }
    }
}

/// Closes the connections with the most unread output whose sockets have
/// taken none of it for [`SHED_BLOCKED_MS_MIN`], biggest first, until the
/// thread is under its budget.
fn shed_non_readers(registry: &Registry) {
    let now = std::time::Instant::now();
    let min = Duration::from_millis(SHED_BLOCKED_MS_MIN);
    let mut blocked: Vec<Rc<Connection>> = registry
        .snapshot()
        .into_iter()
        .filter(|conn| conn.watch.write_blocked_for(now, min) && conn.queued_bytes() > 0)
        .collect();
    blocked.sort_by_key(|conn| std::cmp::Reverse(conn.queued_bytes()));
    for conn in blocked {
        if !super::budget::over() {
            break;
        }
        tracing::warn!(conn = conn.id(), peer = %conn.peer_addr(), queued_bytes = conn.queued_bytes(),
            held_bytes = super::budget::held_bytes(),
            "over the shard's byte budget: closing a connection that does not read its responses");
        conn.close();
    }
}

fn start_connection<H: RequestHandler>(
    stream: TcpStream,
    handler: &Rc<H>,
    config: &ServerConfig,
    registry: &Rc<Registry>,
) {
    let (peer, local) = match (stream.peer_addr(), stream.local_addr()) {
        (Ok(peer), Ok(local)) => (peer, local),
        (Err(e), _) | (_, Err(e)) => {
            tracing::debug!("dropping an accepted connection without addresses: {e}");
            return;
        }
    };
    let count = registry.conns.borrow().len() + registry.openings.get();
    if count >= config.limits.connections_max {
        tracing::warn!(%peer, count, "connection limit reached; closing new connection");
        return;
    }
    let handoff = handler.handoff().cloned();
    if handoff.is_none() && config.tls.is_none() {
        run_remoting(
            MaybeTls::Plain(stream),
            (peer, local),
            handler,
            config,
            registry,
        );
        return;
    }
    registry.openings.set(registry.openings.get() + 1);
    let (handler, config, registry) = (handler.clone(), config.clone(), registry.clone());
    glommio::spawn_local(async move {
        let opened = open(stream, handoff.as_ref(), &config).await;
        registry.openings.set(registry.openings.get() - 1);
        match opened {
            Ok(Some(_)) if registry.stopped.get() => {
                tracing::debug!(%peer, "connection opened after the server stopped; closed")
            }
            Ok(Some(stream)) => run_remoting(stream, (peer, local), &handler, &config, &registry),
            Ok(None) => {}
            Err(why) => tracing::info!(%peer, "connection closed: {why}"),
        }
    })
    .detach();
}

/// Classifies a new connection by its first bytes and, for Remoting over
/// TLS, runs the handshake; gRPC goes to `handoff`. `Ok(None)`: handed
/// over.
async fn open(
    stream: TcpStream,
    handoff: Option<&Handoff>,
    config: &ServerConfig,
) -> Result<Option<MaybeTls<TcpStream>>, String> {
    let timeout = Duration::from_millis(config.limits.partial_frame_timeout_ms);
    let deadline = std::time::Instant::now() + timeout;
    let tls = config.tls.as_deref();
    match classify(&stream, tls, handoff.is_some(), deadline).await {
        Opening::Remoting => Ok(Some(MaybeTls::Plain(stream))),
        Opening::TlsRemoting => {
            let tls = tls.ok_or("TLS opener without TLS settings")?;
            let accepted = accept_tls(stream, tls, deadline).await?;
            Ok(Some(MaybeTls::Server(Box::new(accepted))))
        }
        Opening::Handoff { tls } => {
            let handoff = handoff.ok_or("handoff without a receiver")?;
            hand_over(stream, tls, handoff)
                .map_err(|e| format!("cannot hand an HTTP/2 connection over: {e}"))?;
            Ok(None)
        }
        Opening::Close(why) => Err(why.to_string()),
    }
}

/// Serves an accepted connection as Remoting.
fn run_remoting<H: RequestHandler>(
    stream: MaybeTls<TcpStream>,
    (peer, local): (std::net::SocketAddr, std::net::SocketAddr),
    handler: &Rc<H>,
    config: &ServerConfig,
    registry: &Rc<Registry>,
) {
    if let Err(e) = tcp(&stream).set_nodelay(true) {
        tracing::debug!(%peer, "could not set TCP_NODELAY: {e}");
    }
    let conn = Rc::new(Connection::new(
        next_conn_id(config.shard_index),
        peer,
        local,
        config.limits,
    ));
    tracing::debug!(conn = conn.id(), %peer, "connection accepted");
    registry.conns.borrow_mut().insert(conn.id(), conn.clone());
    handler.on_open(&conn);
    let handler = handler.clone();
    let registry = registry.clone();
    let frame_bytes_max = config.limits.frame_bytes_max;
    glommio::spawn_local(async move {
        let conn_id = conn.id();
        run_connection(stream, conn, handler, frame_bytes_max).await;
        registry.remove(conn_id);
    })
    .detach();
}

/// The socket under the stream.
fn tcp(stream: &MaybeTls<TcpStream>) -> &TcpStream {
    match stream {
        MaybeTls::Plain(s) => s,
        MaybeTls::Server(s) => s.get_ref().0,
        MaybeTls::Client(s) => s.get_ref().0,
    }
}
