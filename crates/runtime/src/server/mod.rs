//! The Remoting server loop, run on one glommio executor (the name server's
//! only one, or each broker shard with its own SO_REUSEPORT listener).
//!
//! [`serve`] accepts connections until its stop future completes. Each
//! connection gets a reader task, which decodes frames and spawns one task
//! per request (a long-polling pull held for seconds does not delay the
//! requests behind it on the same connection), and a writer task, which
//! drains queued responses into as few writes as it can. Responses from the
//! client (to requests the server sent with [`Connection::request`]) are
//! matched by opaque and never reach the handler. A frame with a bad length
//! or an undecodable header closes that connection only.

mod announce;
mod budget;
mod client_gone;
mod conn_id;
mod conn_loop;
mod connection;
mod handoff;
mod listener;
mod opening;
mod port_holder;
mod read_buf;
mod serve;
mod watch;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tls_tests;

use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;

use ferrocket_protocol::limits::FRAME_BYTES_MAX;
use ferrocket_protocol::RemotingCommand;

pub use crate::sync::{flag_set, StopSignal, STOP_POLL_INTERVAL_MS};
pub use announce::announce_listening;
pub use budget::held_bytes;
pub use client_gone::ClientGone;
pub use conn_loop::{
    READ_BYTES_MAX, READ_CHUNK_BYTES, READ_CHUNK_BYTES_BUSY_MAX, WRITE_BATCH_BYTES_MAX,
};
pub use connection::{shard_of_conn_id, Connection, ConnectionError, CONN_ID_SHARD_SHIFT};
pub use handoff::{HandedOver, Handoff};
pub use listener::{bind_listener, bind_waiting, in_use_hint, BIND_WAIT_MS_MAX, LISTEN_BACKLOG};
pub use port_holder::port_holder;
pub use serve::{accept_unless, serve};

/// What a request handler returns: the response, or `None` for no response
/// (oneway requests, or a response sent later with [`Connection::send`]).
pub type HandlerFuture = Pin<Box<dyn Future<Output = Option<RemotingCommand>>>>;

/// Answers requests. One handler serves every connection of a `serve` call;
/// each request runs as its own task on the executor.
pub trait RequestHandler: 'static {
    /// Handles one request. The response's opaque and response flag are set
    /// by the server from the request; a response to a oneway request is
    /// dropped.
    fn handle(self: Rc<Self>, conn: Rc<Connection>, request: RemotingCommand) -> HandlerFuture;

    /// A connection was accepted.
    fn on_open(&self, _conn: &Rc<Connection>) {}

    /// A connection is closed (called once, after its reader and writer
    /// ended; requests still running may finish later, their answers dropped).
    fn on_close(&self, _conn: &Connection) {}

    /// Where connections that open with HTTP/2 go (gRPC on the Remoting
    /// port); `None`: every connection is Remoting. See [`Handoff`].
    fn handoff(&self) -> Option<&Handoff> {
        None
    }
}

/// Default most simultaneous connections per `serve` call.
pub const CONNECTIONS_MAX_DEFAULT: usize = 10_000;
/// Default most requests being handled at once per connection. Real clients
/// multiplex everything on one connection, including one held long-polling
/// pull per consumed queue, so this is generous; reaching it stops reading
/// from that connection until requests finish.
pub const INFLIGHT_REQUESTS_MAX_DEFAULT: usize = 16_384;
/// Default most bytes queued for one connection's writer before its reader
/// pauses (and before server-initiated sends fail).
pub const WRITE_QUEUE_BYTES_MAX_DEFAULT: usize = 64 * 1024 * 1024;
/// Default wait for in-flight requests on graceful stop.
pub const DRAIN_TIMEOUT_MS_DEFAULT: u64 = 3_000;
/// Default most bytes of request frames being handled at once per
/// connection before its reader pauses.
pub const INFLIGHT_BYTES_MAX_DEFAULT: usize = 64 * 1024 * 1024;
/// Default most bytes one server thread (shard) holds for all its
/// connections together: queued output plus frames being handled.
pub const SHARD_BYTES_MAX_DEFAULT: usize = 1024 * 1024 * 1024;
/// Default idle time after which a connection with nothing in flight is
/// closed (Java's `serverChannelMaxIdleTimeSeconds`, 120 s).
pub const IDLE_TIMEOUT_MS_DEFAULT: u64 = 120_000;
/// Default longest time a frame may take to arrive once begun.
pub const PARTIAL_FRAME_TIMEOUT_MS_DEFAULT: u64 = 120_000;
/// Default longest time a socket may take none of our output.
pub const WRITE_STALL_TIMEOUT_MS_DEFAULT: u64 = 60_000;
/// How often the server looks for connections past a timeout.
pub const SWEEP_INTERVAL_MS: u64 = 1_000;

/// Limits of one server. Crossing one is backpressure or a closed
/// connection, never a crash.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerLimits {
    /// Connections beyond this are accepted and closed at once.
    pub connections_max: usize,
    /// Largest frame (length prefix value) read; a larger one closes the
    /// connection.
    pub frame_bytes_max: usize,
    /// Requests handled at once per connection before reading pauses.
    pub inflight_requests_max: usize,
    /// Bytes queued for writing per connection before reading pauses.
    pub write_queue_bytes_max: usize,
    /// How long a graceful stop waits for in-flight requests.
    pub drain_timeout_ms: u64,
    /// Bytes of request frames being handled per connection before reading
    /// pauses.
    pub inflight_bytes_max: usize,
    /// Bytes held for all connections of one server thread (queued output
    /// and frames being handled); past it the sweeper closes the connections
    /// with the most output their clients do not read.
    pub shard_bytes_max: usize,
    /// A connection with nothing in flight and no traffic this long closes.
    pub idle_timeout_ms: u64,
    /// A frame not complete this long after its first byte closes the
    /// connection.
    pub partial_frame_timeout_ms: u64,
    /// A socket that takes none of our output this long is closed.
    pub write_stall_timeout_ms: u64,
}

impl Default for ServerLimits {
    fn default() -> Self {
        Self {
            connections_max: CONNECTIONS_MAX_DEFAULT,
            frame_bytes_max: FRAME_BYTES_MAX,
            inflight_requests_max: INFLIGHT_REQUESTS_MAX_DEFAULT,
            write_queue_bytes_max: WRITE_QUEUE_BYTES_MAX_DEFAULT,
            drain_timeout_ms: DRAIN_TIMEOUT_MS_DEFAULT,
            inflight_bytes_max: INFLIGHT_BYTES_MAX_DEFAULT,
            shard_bytes_max: SHARD_BYTES_MAX_DEFAULT,
            idle_timeout_ms: IDLE_TIMEOUT_MS_DEFAULT,
            partial_frame_timeout_ms: PARTIAL_FRAME_TIMEOUT_MS_DEFAULT,
            write_stall_timeout_ms: WRITE_STALL_TIMEOUT_MS_DEFAULT,
        }
    }
}

/// Settings of one `serve` call.
#[derive(Debug, Clone, Default)]
pub struct ServerConfig {
    /// Index of the executor running this server; goes into the top bits of
    /// every connection id (see [`shard_of_conn_id`]).
    pub shard_index: u16,
    pub limits: ServerLimits,
    /// `tls.server.mode` and the certificate; `None`: TLS disabled.
    pub tls: Option<std::sync::Arc<ferrocket_tls::ServerTls>>,
}
