//! TLS on the gRPC port under `tls.server.mode`, as RocketMQ's proxy
//! negotiates it: permissive tells a TLS ClientHello (first byte 0x16)
//! from plaintext HTTP/2 on one port, enforcing closes plaintext, disabled
//! closes TLS. Handshakes run in their own tasks, never in the accept loop.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use ferrocket_tls::{ServerTls, TlsMode, TLS_HANDSHAKE_BYTE};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_stream::wrappers::ReceiverStream;
use tonic::transport::server::{Connected, TcpConnectInfo};

use crate::budget::Conn;
use crate::guard::ConnInfo;

/// The protocol the gRPC port's TLS offers.
pub const GRPC_ALPN: &[u8] = b"h2";
/// Longest wait for a new connection's first byte and TLS handshake.
pub const OPENING_TIMEOUT_MS: u64 = 10_000;
/// Connections admitted but not yet taken by the server, at most.
const ADMITTED_QUEUE_MAX: usize = 256;
/// Connections in their opening (first byte, handshake) at once, at most;
/// more are closed at once.
pub const OPENINGS_MAX: usize = 1_024;
/// Pause after a failed accept (out of descriptors, say).
const ACCEPT_ERROR_BACKOFF_MS: u64 = 50;

/// A gRPC connection: plaintext HTTP/2 or HTTP/2 over TLS, with its share
/// of the endpoint's budget and its place among `grpcConnectionsMax`
/// (given back when the server drops it, on close).
pub struct GrpcIo {
    stream: Transport,
    conn: Arc<Conn>,
    _slot: OwnedSemaphorePermit,
}

enum Transport {
    Plain(TcpStream),
    Tls(Box<tokio_rustls::server::TlsStream<TcpStream>>),
}

impl GrpcIo {
    fn tcp(&self) -> &TcpStream {
        match &self.stream {
            Transport::Plain(s) => s,
            Transport::Tls(s) => s.get_ref().0,
        }
    }
}

impl Connected for GrpcIo {
    type ConnectInfo = ConnInfo;

    fn connect_info(&self) -> ConnInfo {
        ConnInfo {
            tcp: TcpConnectInfo {
                local_addr: self.tcp().local_addr().ok(),
                remote_addr: self.tcp().peer_addr().ok(),
            },
            conn: Arc::clone(&self.conn),
        }
    }
}

impl AsyncRead for GrpcIo {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match &mut self.get_mut().stream {
            Transport::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Transport::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for GrpcIo {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match &mut self.get_mut().stream {
            Transport::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Transport::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &mut self.get_mut().stream {
            Transport::Plain(s) => Pin::new(s).poll_flush(cx),
            Transport::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &mut self.get_mut().stream {
            Transport::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Transport::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}

/// Makes a connection a gRPC connection. `opens_tls`: what its first byte
/// already said (a connection handed over by the broker's port), else it
/// is peeked here.
async fn admit(
    stream: TcpStream,
    opens_tls: Option<bool>,
    tls: Option<&ServerTls>,
) -> Result<Transport, String> {
    let opening = async {
        let opens_tls = match opens_tls {
            Some(known) => known,
            None => first_byte(&stream).await? == TLS_HANDSHAKE_BYTE,
        };
        let mode = tls.map_or(TlsMode::Disabled, ServerTls::mode);
        match (opens_tls, tls) {
            (true, Some(tls)) => {
                let acceptor = tokio_rustls::TlsAcceptor::from(tls.config());
                let accepted = acceptor.accept(stream).await;
                let accepted = accepted.map_err(|e| format!("TLS handshake failed: {e}"))?;
                Ok(Transport::Tls(Box::new(accepted)))
            }
            (true, None) => Err("a TLS client, but tls.server.mode=disabled".to_string()),
            (false, _) if mode == TlsMode::Enforcing => {
                Err("a plaintext client, but tls.server.mode=enforcing".to_string())
            }
            (false, _) => Ok(Transport::Plain(stream)),
        }
    };
    let timeout = Duration::from_millis(OPENING_TIMEOUT_MS);
    tokio::time::timeout(timeout, opening)
        .await
        .map_err(|_| "silent or slow in its opening".to_string())?
}

async fn first_byte(stream: &TcpStream) -> Result<u8, String> {
    let mut first = [0u8; 1];
    match stream.peek(&mut first).await {
        Ok(1) => Ok(first[0]),
        Ok(_) => Err("closed before its first byte".into()),
        Err(e) => Err(format!("read failed: {e}")),
    }
}

/// The connections of `listener`, each admitted in a task of its own.
pub fn incoming(
    listener: TcpListener,
    tls: Option<Arc<ServerTls>>,
    connections_max: usize,
) -> ReceiverStream<io::Result<GrpcIo>> {
    let (admitted, stream) = tokio::sync::mpsc::channel(ADMITTED_QUEUE_MAX);
    tokio::spawn(async move {
        let gates = Gates::new(connections_max);
        loop {
            let socket = match listener.accept().await {
                Ok((socket, _)) => socket,
                Err(e) => {
                    tracing::warn!("gRPC accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(ACCEPT_ERROR_BACKOFF_MS)).await;
                    continue;
                }
            };
            if admitted.is_closed() {
                return;
            }
            spawn_admit(socket, None, &tls, &admitted, &gates);
        }
    });
    ReceiverStream::new(stream)
}

/// The connections the broker's port hands over (socket, opens with TLS),
/// each admitted in a task of its own. Must be called inside the runtime.
pub fn handed_over(
    mut given: tokio::sync::mpsc::UnboundedReceiver<(std::net::TcpStream, bool)>,
    tls: Option<Arc<ServerTls>>,
    connections_max: usize,
) -> ReceiverStream<io::Result<GrpcIo>> {
    let (admitted, stream) = tokio::sync::mpsc::channel(ADMITTED_QUEUE_MAX);
    tokio::spawn(async move {
        let gates = Gates::new(connections_max);
        while let Some((socket, opens_tls)) = given.recv().await {
            match TcpStream::from_std(socket) {
                Ok(socket) => spawn_admit(socket, Some(opens_tls), &tls, &admitted, &gates),
                Err(e) => tracing::warn!("cannot take a handed-over gRPC connection: {e}"),
            }
        }
    });
    ReceiverStream::new(stream)
}

/// The two bounds on connections: in their opening, and in all.
struct Gates {
    openings: Arc<Semaphore>,
    connections: Arc<Semaphore>,
    connections_max: usize,
}

impl Gates {
    fn new(connections_max: usize) -> Gates {
        Gates {
            openings: Arc::new(Semaphore::new(OPENINGS_MAX)),
            connections: Arc::new(Semaphore::new(connections_max)),
            connections_max,
        }
    }
}

fn spawn_admit(
    socket: TcpStream,
    opens_tls: Option<bool>,
    tls: &Option<Arc<ServerTls>>,
    admitted: &tokio::sync::mpsc::Sender<io::Result<GrpcIo>>,
    gates: &Gates,
) {
    let peer = socket.peer_addr().ok();
    let Ok(slot) = gates.connections.clone().try_acquire_owned() else {
        let max = gates.connections_max;
        tracing::warn!(
            ?peer,
            "{max} gRPC connections open (grpcConnectionsMax); closing one"
        );
        return;
    };
    let Ok(permit) = gates.openings.clone().try_acquire_owned() else {
        tracing::warn!(
            ?peer,
            "too many gRPC connections in their opening; closing one"
        );
        return;
    };
    let _ = socket.set_nodelay(true);
    let (admitted, tls) = (admitted.clone(), tls.clone());
    tokio::spawn(async move {
        match admit(socket, opens_tls, tls.as_deref()).await {
            Ok(stream) => {
                let io = GrpcIo {
                    stream,
                    conn: Arc::new(Conn::default()),
                    _slot: slot,
                };
                // Held until the server takes it: admitted connections the
                // server has not taken count against the openings too.
                let _ = admitted.send(Ok(io)).await;
            }
            Err(why) => tracing::info!(?peer, "gRPC connection closed: {why}"),
        }
        drop(permit);
    });
}
