//! The controller's Remoting server on tokio: one task reads each
//! connection's frames, each request is handled in its own task (a write
//! waits for a Raft commit, and must not hold up heartbeats behind it), and
//! one task per connection writes the answers. A connection's first byte
//! says TLS or plaintext; `tls.server.mode` decides which are served, as on
//! the name server's port (disabled closes TLS, enforcing plaintext).

use std::future::Future;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::BytesMut;
use ferrocket_protocol::limits::FRAME_BYTES_MAX;
use ferrocket_protocol::{FrameDecoder, RemotingCommand};
use ferrocket_tls::{ServerTls, TlsMode, TLS_HANDSHAKE_BYTE};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, Semaphore};

/// Connections served at once; more are closed on accept.
pub const CONNECTIONS_MAX: usize = 4_096;
/// Requests of one connection in flight at once; the reader waits beyond.
pub const IN_FLIGHT_PER_CONNECTION_MAX: usize = 256;
const READ_CHUNK_BYTES: usize = 64 * 1024;
/// Longest wait for a new connection's first byte and TLS handshake.
pub const OPENING_TIMEOUT_MS: u64 = 10_000;

/// What the server calls: the controller.
pub trait Service: Send + Sync + 'static {
    /// Answers one request from `peer`; `None` sends nothing.
    fn handle(
        self: &Arc<Self>,
        request: RemotingCommand,
        connection: u64,
        peer: IpAddr,
    ) -> impl Future<Output = Option<RemotingCommand>> + Send;
    /// A connection closed.
    fn closed(self: &Arc<Self>, connection: u64);
}

/// Accepts connections until the task is dropped or aborted.
pub async fn serve<S: Service>(
    listener: TcpListener,
    service: Arc<S>,
    tls: Option<Arc<ServerTls>>,
) {
    let connections = Arc::new(Semaphore::new(CONNECTIONS_MAX));
    let next_id = AtomicU64::new(1);
    loop {
        let (stream, peer) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(e) => {
                tracing::warn!("controller: accept failed: {e}");
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                continue;
            }
        };
        let Ok(permit) = connections.clone().try_acquire_owned() else {
            tracing::warn!("controller: refusing {peer}: {CONNECTIONS_MAX} connections open");
            continue;
        };
        let _ = stream.set_nodelay(true);
        let id = next_id.fetch_add(1, Ordering::Relaxed);
        let (service, tls) = (service.clone(), tls.clone());
        tokio::spawn(async move {
            let timeout = Duration::from_millis(OPENING_TIMEOUT_MS);
            match tokio::time::timeout(timeout, open(stream, tls.as_deref())).await {
                Ok(Ok(Opened::Plain(stream))) => connection(stream, id, peer.ip(), &service).await,
                Ok(Ok(Opened::Tls(stream))) => connection(*stream, id, peer.ip(), &service).await,
                Ok(Err(why)) => tracing::debug!("controller: closing {peer}: {why}"),
                Err(_) => {
                    tracing::debug!("controller: closing {peer}: silent or slow in its opening")
                }
            }
            service.closed(id);
            drop(permit);
        });
    }
}

enum Opened {
    Plain(TcpStream),
    Tls(Box<tokio_rustls::server::TlsStream<TcpStream>>),
}

/// Plaintext or TLS, from the first byte (left unread) and the mode.
async fn open(stream: TcpStream, tls: Option<&ServerTls>) -> Result<Opened, String> {
    let mut first = [0u8; 1];
    match stream.peek(&mut first).await {
        Ok(1) => {}
        Ok(_) => return Err("closed before its first byte".into()),
        Err(e) => return Err(format!("read failed: {e}")),
    }
    let mode = tls.map_or(TlsMode::Disabled, ServerTls::mode);
    match (first[0] == TLS_HANDSHAKE_BYTE, tls) {
        (true, Some(tls)) => {
            let acceptor = tokio_rustls::TlsAcceptor::from(tls.config());
            let accepted = acceptor.accept(stream).await;
            let accepted = accepted.map_err(|e| format!("TLS handshake failed: {e}"))?;
            Ok(Opened::Tls(Box::new(accepted)))
        }
        (true, None) => Err("a TLS client, but tls.server.mode=disabled".into()),
        (false, _) if mode == TlsMode::Enforcing => {
            Err("a plaintext client, but tls.server.mode=enforcing".into())
        }
        (false, _) => Ok(Opened::Plain(stream)),
    }
}

async fn connection<S, T>(stream: T, id: u64, peer: IpAddr, service: &Arc<S>)
where
    S: Service,
    T: AsyncRead + AsyncWrite + Send + 'static,
{
    let (mut reader, mut writer) = tokio::io::split(stream);
    let (answers, mut queue) = mpsc::channel::<RemotingCommand>(IN_FLIGHT_PER_CONNECTION_MAX);
    let write_task = tokio::spawn(async move {
        let mut buf = BytesMut::new();
        while let Some(answer) = queue.recv().await {
            buf.clear();
            answer.encode(&mut buf);
            while let Ok(more) = queue.try_recv() {
                more.encode(&mut buf);
            }
            if writer.write_all(&buf).await.is_err() || writer.flush().await.is_err() {
                break;
            }
        }
    });
    let in_flight = Arc::new(Semaphore::new(IN_FLIGHT_PER_CONNECTION_MAX));
    let decoder = FrameDecoder::new(FRAME_BYTES_MAX);
    let mut buf = BytesMut::with_capacity(READ_CHUNK_BYTES);
    'read: loop {
        buf.reserve(READ_CHUNK_BYTES);
        match reader.read_buf(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        loop {
            let request = match decoder.next_frame(&mut buf) {
                Ok(Some(request)) => request,
                Ok(None) => break,
                Err(e) => {
                    tracing::warn!("controller: dropping connection {id}: {e}");
                    break 'read;
                }
            };
            if request.is_response() {
                continue;
            }
            let Ok(permit) = in_flight.clone().acquire_owned().await else {
                break 'read;
            };
            let service = service.clone();
            let answers = answers.clone();
            tokio::spawn(async move {
                let oneway = request.is_oneway();
                let answer = service.handle(request, id, peer).await;
                if let Some(answer) = answer.filter(|_| !oneway) {
                    let _ = answers.send(answer).await;
                }
                drop(permit);
            });
        }
    }
    drop(answers);
    write_task.abort();
}
