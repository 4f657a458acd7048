//! One Remoting TCP connection to a name server or broker.
//!
//! Requests are pipelined: any number may be in flight at once, each waits
//! for the response carrying its `opaque`, in whatever order they come
//! back. Callers encode frames straight into a shared write buffer; one
//! writer task swaps that buffer out and writes everything queued in one
//! go, so concurrent senders are batched into few system calls. One reader
//! task splits the stream into frames, completes waiting requests, and
//! hands requests the server starts (NOTIFY_CONSUMER_IDS_CHANGED,
//! CHECK_TRANSACTION_STATE, ...) to an optional [`RequestHandler`].
//!
//! Both tasks run on the tokio runtime that opened the connection (multi-
//! or current-thread); they stop when the last [`Connection`] clone is
//! dropped, when [`Connection::close`] is called, or on an I/O error.

use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use bytes::BytesMut;
use ferrocket_protocol::frame::FLAG_RESPONSE;
use ferrocket_protocol::limits::FRAME_BYTES_MAX;
use ferrocket_protocol::{FrameDecoder, LanguageCode, RemotingCommand, SerializeType};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::{oneshot, Notify};
use tokio::task::JoinHandle;

use crate::ClientError;

/// How long opening a connection may take by default.
pub const CONNECT_TIMEOUT_MS_DEFAULT: u64 = 3_000;
/// How long a request waits for its response by default (Java: 3 s).
pub const REQUEST_TIMEOUT_MS_DEFAULT: u64 = 3_000;
/// Bytes queued for writing beyond which senders wait for the writer.
pub const WRITE_BUFFER_BYTES_MAX_DEFAULT: usize = 4 * 1024 * 1024;
/// Read buffer grown by at least this much per read.
const READ_CHUNK_BYTES: usize = 64 * 1024;
/// A write buffer grown past this (by a huge frame) is not kept for reuse.
const SPARE_BUFFER_BYTES_KEPT_MAX: usize = 8 * 1024 * 1024;

/// Answers a request the server started. Returning `None` sends nothing
/// (oneway requests are never answered, whatever this returns). The
/// response's opaque and response flag are set by the connection.
pub type RequestHandler = Arc<dyn Fn(RemotingCommand) -> Option<RemotingCommand> + Send + Sync>;

/// Connection settings.
#[derive(Debug, Clone)]
pub struct ConnectionConfig {
    pub connect_timeout_ms: u64,
    /// Timeout of [`Connection::invoke`] (not of `invoke_timeout`).
    pub request_timeout_ms: u64,
    /// Header encoding of every request sent (JSON unless chosen otherwise).
    pub serialize_type: SerializeType,
    /// Language announced in every request (JAVA, like the Java client).
    pub language: LanguageCode,
    /// Largest frame accepted from the peer.
    pub frame_bytes_max: usize,
    /// Queued bytes beyond which senders wait (backpressure).
    pub write_buffer_bytes_max: usize,
    /// ACL 1.0 credentials: every request is signed with them (as Java's
    /// `AclClientRPCHook` signs), for brokers with `aclEnable=true`.
    pub credentials: Option<Credentials>,
    /// TLS (Java's `useTLS`), with a configuration from
    /// `ferrocket_tls::client_config`; `None`: plaintext.
    pub tls: Option<Arc<ferrocket_tls::rustls::ClientConfig>>,
}

/// An ACL account's access key and secret key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Credentials {
    pub access_key: String,
    pub secret_key: String,
}

/// From an `(accessKey, secretKey)` pair, as servers keep
/// `innerClientAuthenticationCredentials`.
impl From<(String, String)> for Credentials {
    fn from((access_key, secret_key): (String, String)) -> Self {
        Self {
            access_key,
            secret_key,
        }
    }
}

impl Default for ConnectionConfig {
    fn default() -> Self {
        Self {
            connect_timeout_ms: CONNECT_TIMEOUT_MS_DEFAULT,
            request_timeout_ms: REQUEST_TIMEOUT_MS_DEFAULT,
            serialize_type: SerializeType::Json,
            language: LanguageCode::Java,
            frame_bytes_max: FRAME_BYTES_MAX,
            write_buffer_bytes_max: WRITE_BUFFER_BYTES_MAX_DEFAULT,
            credentials: None,
            tls: None,
        }
    }
}

type Waiter = oneshot::Sender<Result<RemotingCommand, ClientError>>;

/// Requests waiting for their response, by opaque.
struct PendingTable {
    waiters: HashMap<i32, Waiter>,
    /// Why the connection closed; set once, after which nothing registers.
    closed: Option<String>,
}

/// Frames queued for the writer task.
struct WriteState {
    buf: BytesMut,
    closed: bool,
}

struct Shared {
    addr: String,
    local_addr: Option<SocketAddr>,
    config: ConnectionConfig,
    next_opaque: AtomicI32,
    pending: Mutex<PendingTable>,
    writes: Mutex<WriteState>,
    /// Signalled when frames are queued or the connection closes.
    data_ready: Notify,
    /// Signalled when the writer drained the buffer or the connection closed.
    space_ready: Notify,
    handler: Option<RequestHandler>,
}

/// Locks a mutex, recovering from poisoning (every critical section here
/// leaves the data consistent, so a panic elsewhere cannot corrupt it).
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Shared {
    fn closed_error(&self, reason: &str) -> ClientError {
        ClientError::Closed {
            addr: self.addr.clone(),
            reason: reason.to_string(),
        }
    }

    /// Marks the connection closed and fails every waiting request.
    fn shut(&self, reason: &str) {
        let waiters = {
            let mut pending = lock(&self.pending);
            if pending.closed.is_none() {
                pending.closed = Some(reason.to_string());
            }
            std::mem::take(&mut pending.waiters)
        };
        for (_, waiter) in waiters {
            let _ = waiter.send(Err(self.closed_error(reason)));
        }
        lock(&self.writes).closed = true;
        self.data_ready.notify_one();
        self.space_ready.notify_waiters();
    }

    /// Registers a waiter under a fresh opaque.
    fn register(&self, waiter: Waiter) -> Result<i32, ClientError> {
        let mut pending = lock(&self.pending);
        if let Some(reason) = &pending.closed {
            return Err(self.closed_error(reason));
        }
        loop {
            let opaque = self.next_opaque.fetch_add(1, Ordering::Relaxed);
            if let Entry::Vacant(slot) = pending.waiters.entry(opaque) {
                slot.insert(waiter);
                return Ok(opaque);
            }
        }
    }

    /// Queues an encoded frame, waiting while the buffer is over its limit
    /// (a frame always fits into an empty buffer).
    async fn enqueue(&self, command: &RemotingCommand) -> Result<(), ClientError> {
        loop {
            let space = self.space_ready.notified();
            {
                let mut writes = lock(&self.writes);
                if writes.closed {
                    drop(writes);
                    return Err(self.closed_reason());
                }
                if writes.buf.is_empty() || writes.buf.len() < self.config.write_buffer_bytes_max {
                    command.encode(&mut writes.buf);
                    drop(writes);
                    self.data_ready.notify_one();
                    return Ok(());
                }
            }
            space.await;
        }
    }

    /// Queues a frame without waiting for space (the reader answering the
    /// server must never block behind senders).
    fn enqueue_now(&self, command: &RemotingCommand) {
        let mut writes = lock(&self.writes);
        if writes.closed {
            return;
        }
        command.encode(&mut writes.buf);
        drop(writes);
        self.data_ready.notify_one();
    }

    fn closed_reason(&self) -> ClientError {
        let reason = lock(&self.pending)
            .closed
            .clone()
            .unwrap_or_else(|| "closed".to_string());
        self.closed_error(&reason)
    }

    fn prepare(&self, request: &mut RemotingCommand) {
        request.serialize_type = self.config.serialize_type;
        request.language = self.config.language;
        request.flag &= !FLAG_RESPONSE;
        if let Some(credentials) = &self.config.credentials {
            let (access_key, secret_key) = (&credentials.access_key, &credentials.secret_key);
            // With the code and time stamped: servers with
            // `aclAdminSignatureWindowMs` want them of admin accounts.
            ferrocket_acl::sign_request_stamped(request, access_key, secret_key);
        }
    }
}

/// Removes a request's waiter when its future ends early (timeout, drop).
struct PendingGuard<'a> {
    shared: &'a Shared,
    opaque: i32,
}

impl Drop for PendingGuard<'_> {
    fn drop(&mut self) {
        lock(&self.shared.pending).waiters.remove(&self.opaque);
    }
}

/// Aborts the reader and writer when the last handle goes away.
struct TaskGuard {
    tasks: [JoinHandle<()>; 2],
}

impl Drop for TaskGuard {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

/// A cheap-to-clone handle on one connection.
#[derive(Clone)]
pub struct Connection {
    shared: Arc<Shared>,
    _tasks: Arc<TaskGuard>,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("addr", &self.shared.addr)
            .field("closed", &self.is_closed())
            .finish()
    }
}

impl Connection {
    /// Opens a connection to `addr` ("host:port") and starts its tasks.
    pub async fn connect(
        addr: &str,
        config: ConnectionConfig,
        handler: Option<RequestHandler>,
    ) -> Result<Connection, ClientError> {
        let connect_error = |source| ClientError::Connect {
            addr: addr.to_string(),
            source,
        };
        let timeout = Duration::from_millis(config.connect_timeout_ms);
        let stream = match tokio::time::timeout(timeout, TcpStream::connect(addr)).await {
            Ok(Ok(stream)) => stream,
            Ok(Err(error)) => return Err(connect_error(error)),
            Err(_) => {
                return Err(connect_error(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    format!("no answer within {} ms", config.connect_timeout_ms),
                )))
            }
        };
        // Small frames must not wait for Nagle; failure only costs latency.
        let _ = stream.set_nodelay(true);
        let local_addr = stream.local_addr().ok();
        let (reader, writer) = match &config.tls {
            None => {
                let (reader, writer) = stream.into_split();
                (Box::new(reader) as Reader, Box::new(writer) as Writer)
            }
            Some(tls) => {
                let handshake = tls_handshake(stream, tls.clone());
                let tls = match tokio::time::timeout(timeout, handshake).await {
                    Ok(result) => result.map_err(connect_error)?,
                    Err(_) => {
                        return Err(connect_error(std::io::Error::new(
                            std::io::ErrorKind::TimedOut,
                            format!("no TLS handshake within {} ms", config.connect_timeout_ms),
                        )))
                    }
                };
                let (reader, writer) = tokio::io::split(tls);
                (Box::new(reader) as Reader, Box::new(writer) as Writer)
            }
        };
        let shared = Arc::new(Shared {
            addr: addr.to_string(),
            local_addr,
            config,
            next_opaque: AtomicI32::new(1),
            pending: Mutex::new(PendingTable {
                waiters: HashMap::new(),
                closed: None,
            }),
            writes: Mutex::new(WriteState {
                buf: BytesMut::new(),
                closed: false,
            }),
            data_ready: Notify::new(),
            space_ready: Notify::new(),
            handler,
        });
        let read_task = tokio::spawn({
            let shared = shared.clone();
            async move {
                let reason = read_loop(&shared, reader).await;
                tracing::debug!(addr = %shared.addr, %reason, "connection reader stopped");
                shared.shut(&reason);
            }
        });
        let write_task = tokio::spawn({
            let shared = shared.clone();
            async move {
                if let Err(reason) = write_loop(&shared, writer).await {
                    tracing::debug!(addr = %shared.addr, %reason, "connection writer stopped");
                    shared.shut(&reason);
                }
            }
        });
        Ok(Connection {
            shared,
            _tasks: Arc::new(TaskGuard {
                tasks: [read_task, write_task],
            }),
        })
    }

    /// The address this connection was opened to.
    pub fn addr(&self) -> &str {
        &self.shared.addr
    }

    /// Our end of the TCP connection.
    pub fn local_addr(&self) -> Option<SocketAddr> {
        self.shared.local_addr
    }

    pub fn config(&self) -> &ConnectionConfig {
        &self.shared.config
    }

    pub fn is_closed(&self) -> bool {
        lock(&self.shared.pending).closed.is_some()
    }

    /// Requests sent and still waiting for a response.
    pub fn in_flight(&self) -> usize {
        lock(&self.shared.pending).waiters.len()
    }

    /// Sends `request` and waits for its response, up to the configured
    /// request timeout. Any response code is returned as is.
    pub async fn invoke(&self, request: RemotingCommand) -> Result<RemotingCommand, ClientError> {
        let timeout = Duration::from_millis(self.shared.config.request_timeout_ms);
        self.invoke_timeout(request, timeout).await
    }

    /// Sends `request` and waits up to `timeout` for its response (queueing
    /// included). Any response code is returned as is.
    pub async fn invoke_timeout(
        &self,
        mut request: RemotingCommand,
        timeout: Duration,
    ) -> Result<RemotingCommand, ClientError> {
        let shared = &*self.shared;
        shared.prepare(&mut request);
        request.flag &= !ferrocket_protocol::frame::FLAG_ONEWAY;
        let (tx, rx) = oneshot::channel();
        let opaque = shared.register(tx)?;
        let _guard = PendingGuard { shared, opaque };
        request.opaque = opaque;
        let exchange = async {
            shared.enqueue(&request).await?;
            match rx.await {
                Ok(result) => result,
                Err(_) => Err(shared.closed_reason()),
            }
        };
        match tokio::time::timeout(timeout, exchange).await {
            Ok(result) => result,
            Err(_) => Err(ClientError::timeout(
                &shared.addr,
                request.code,
                timeout.as_millis() as u64,
            )),
        }
    }

    /// Sends `request` marked oneway: the server answers nothing. Returns
    /// once the frame is queued for writing.
    pub async fn invoke_oneway(&self, mut request: RemotingCommand) -> Result<(), ClientError> {
        let shared = &*self.shared;
        shared.prepare(&mut request);
        request.mark_oneway();
        request.opaque = shared.next_opaque.fetch_add(1, Ordering::Relaxed);
        shared.enqueue(&request).await
    }

    /// Closes the connection: frames already queued are still written,
    /// waiting requests fail with [`ClientError::Closed`].
    pub fn close(&self) {
        self.shared.shut("closed by the client");
    }
}

/// The connection's read side, plaintext or TLS.
type Reader = Box<dyn tokio::io::AsyncRead + Send + Unpin>;
/// The connection's write side, plaintext or TLS.
type Writer = Box<dyn tokio::io::AsyncWrite + Send + Unpin>;

async fn tls_handshake(
    stream: TcpStream,
    config: Arc<ferrocket_tls::rustls::ClientConfig>,
) -> std::io::Result<tokio_rustls::client::TlsStream<TcpStream>> {
    let name = ferrocket_tls::server_name(stream.peer_addr()?);
    tokio_rustls::TlsConnector::from(config)
        .connect(name, stream)
        .await
}

async fn read_loop(shared: &Shared, mut reader: Reader) -> String {
    let decoder = FrameDecoder::new(shared.config.frame_bytes_max);
    let mut buf = BytesMut::with_capacity(READ_CHUNK_BYTES);
    loop {
        loop {
            match decoder.next_frame(&mut buf) {
                Ok(Some(command)) => dispatch(shared, command),
                Ok(None) => break,
                Err(_) if buf.starts_with(b"HTTP/") => {
                    return "this is not a RocketMQ server: it answered HTTP (a web, metrics or \
                            gRPC port?)"
                        .to_string()
                }
                Err(error) => return format!("undecodable frame from the server: {error}"),
            }
        }
        let missing = decoder.missing_bytes(&buf).unwrap_or(0);
        buf.reserve(missing.max(READ_CHUNK_BYTES));
        match reader.read_buf(&mut buf).await {
            Ok(0) => return "closed by the server".to_string(),
            Ok(_) => {}
            Err(error) => return format!("read failed: {error}"),
        }
    }
}

fn dispatch(shared: &Shared, command: RemotingCommand) {
    if command.is_response() {
        let waiter = lock(&shared.pending).waiters.remove(&command.opaque);
        match waiter {
            Some(waiter) => {
                let _ = waiter.send(Ok(command));
            }
            None => tracing::debug!(
                addr = %shared.addr,
                opaque = command.opaque,
                "response for no waiting request (timed out?)"
            ),
        }
        return;
    }
    let opaque = command.opaque;
    let oneway = command.is_oneway();
    let answer = match &shared.handler {
        Some(handler) => handler(command),
        None => Some(RemotingCommand::not_supported(&command)),
    };
    if let (Some(mut response), false) = (answer, oneway) {
        response.opaque = opaque;
        response.flag |= FLAG_RESPONSE;
        shared.enqueue_now(&response);
    }
}

async fn write_loop(shared: &Shared, mut writer: Writer) -> Result<(), String> {
    let mut spare = BytesMut::new();
    loop {
        let ready = shared.data_ready.notified();
        let closed = {
            let mut writes = lock(&shared.writes);
            std::mem::swap(&mut writes.buf, &mut spare);
            writes.closed
        };
        if spare.is_empty() {
            if closed {
                let _ = writer.shutdown().await;
                return Ok(());
            }
            ready.await;
            continue;
        }
        shared.space_ready.notify_waiters();
        if let Err(error) = writer.write_all(&spare).await {
            return Err(format!("write failed: {error}"));
        }
        // TLS holds its last records until flushed (a no-op in plaintext).
        if let Err(error) = writer.flush().await {
            return Err(format!("write failed: {error}"));
        }
        if spare.capacity() > SPARE_BUFFER_BYTES_KEPT_MAX {
            spare = BytesMut::new();
        } else {
            spare.clear();
        }
    }
}
