//! The broker's name server client: a small glommio client that keeps one
//! connection per name server open between calls, as Java's does (a name
//! server drops the brokers registered over a connection when it closes).

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use bytes::BytesMut;
use ferrocket_protocol::{FrameDecoder, RemotingCommand};
use ferrocket_tls::futures_rustls::TlsConnector;
use ferrocket_tls::rustls::ClientConfig;
use ferrocket_tls::MaybeTls;
use futures_lite::{future, AsyncReadExt, AsyncWriteExt};
use glommio::net::TcpStream;
use glommio::sync::Semaphore;

/// Largest name server answer read.
pub const NAMESRV_FRAME_BYTES_MAX: usize = 16 * 1024 * 1024;
/// Broker heartbeat timeout announced to name servers.
pub const HEARTBEAT_TIMEOUT_MS: i64 = 120_000;
/// Read buffer growth step.
const READ_CHUNK_BYTES: usize = 16 * 1024;

/// Why a name server call failed.
#[derive(Debug, thiserror::Error)]
pub enum NamesrvCallError {
    #[error("connection failed: {0}")]
    Io(String),
    #[error("timed out after {0} ms")]
    Timeout(u64),
    #[error("bad answer: {0}")]
    Protocol(String),
}

/// An open connection and the bytes read past the last answer.
struct Link {
    stream: MaybeTls<TcpStream>,
    buf: BytesMut,
}

/// One name server: its connection (opened on demand, kept while it works)
/// and a lock so calls on it do not interleave.
struct Namesrv {
    link: RefCell<Option<Link>>,
    lock: Semaphore,
}

/// The name server client of shard 0.
pub(crate) struct NamesrvClient {
    servers: RefCell<HashMap<SocketAddr, Rc<Namesrv>>>,
    next_opaque: Cell<i32>,
    /// (access key, secret key) every request is signed with (ACL 1.0).
    credentials: Option<(String, String)>,
    /// TLS for every connection (`useTLS`); `None`: plaintext.
    tls: Option<Arc<ClientConfig>>,
}

impl NamesrvClient {
    pub fn new(credentials: Option<(String, String)>, tls: Option<Arc<ClientConfig>>) -> Self {
        Self {
            servers: RefCell::new(HashMap::new()),
            next_opaque: Cell::new(1),
            credentials,
            tls,
        }
    }

    /// Opens a connection to `addr`, over TLS when configured.
    async fn open(&self, addr: SocketAddr) -> Result<Link, NamesrvCallError> {
        let io = |e: std::io::Error| NamesrvCallError::Io(e.to_string());
        let tcp = TcpStream::connect(addr).await.map_err(|e| io(e.into()))?;
        let stream = match &self.tls {
            None => MaybeTls::Plain(tcp),
            Some(config) => {
                let connector = TlsConnector::from(config.clone());
                let name = ferrocket_tls::server_name(addr);
                let tls = connector.connect(name, tcp).await.map_err(|e| {
                    NamesrvCallError::Io(format!("TLS handshake failed (useTLS): {e}"))
                })?;
                MaybeTls::Client(Box::new(tls))
            }
        };
        Ok(Link {
            stream,
            buf: BytesMut::new(),
        })
    }

    fn server(&self, addr: SocketAddr) -> Rc<Namesrv> {
        self.servers
            .borrow_mut()
            .entry(addr)
            .or_insert_with(|| {
                Rc::new(Namesrv {
                    link: RefCell::new(None),
                    lock: Semaphore::new(1),
                })
            })
            .clone()
    }

    /// Sends `request` to `addr` and returns the matching response. A
    /// failed or timed-out call closes the connection; the next call opens
    /// a new one.
    pub async fn call(
        &self,
        addr: SocketAddr,
        mut request: RemotingCommand,
        timeout_ms: u64,
    ) -> Result<RemotingCommand, NamesrvCallError> {
        let server = self.server(addr);
        let _permit = server
            .lock
            .acquire_permit(1)
            .await
            .map_err(|e| NamesrvCallError::Io(e.to_string()))?;
        if let Some((access_key, secret_key)) = &self.credentials {
            ferrocket_acl::sign_request_stamped(&mut request, access_key, secret_key);
        }
        request.opaque = self.next_opaque.get();
        self.next_opaque.set(request.opaque.wrapping_add(1));
        let held = server.link.borrow_mut().take();
        let exchange = async {
            let mut link = match held {
                Some(link) => link,
                None => self.open(addr).await?,
            };
            let answer = exchange(&mut link, &request).await?;
            Ok((link, answer))
        };
        let timeout = async {
            glommio::timer::sleep(Duration::from_millis(timeout_ms)).await;
            Err(NamesrvCallError::Timeout(timeout_ms))
        };
        let (link, answer) = future::or(exchange, timeout).await?;
        *server.link.borrow_mut() = Some(link);
        Ok(answer)
    }
}

async fn exchange(
    link: &mut Link,
    request: &RemotingCommand,
) -> Result<RemotingCommand, NamesrvCallError> {
    let io = |e: std::io::Error| NamesrvCallError::Io(e.to_string());
    link.stream
        .write_all(&request.to_bytes())
        .await
        .map_err(io)?;
    link.stream.flush().await.map_err(io)?;
    let decoder = FrameDecoder::new(NAMESRV_FRAME_BYTES_MAX);
    let mut chunk = vec![0u8; READ_CHUNK_BYTES];
    loop {
        while let Some(frame) = decoder
            .next_frame(&mut link.buf)
            .map_err(|e| NamesrvCallError::Protocol(e.to_string()))?
        {
            if frame.is_response() && frame.opaque == request.opaque {
                return Ok(frame);
            }
        }
        let read = link
            .stream
            .read(&mut chunk)
            .await
            .map_err(|e| NamesrvCallError::Io(e.to_string()))?;
        if read == 0 {
            return Err(NamesrvCallError::Io("closed before answering".into()));
        }
        link.buf.extend_from_slice(&chunk[..read]);
    }
}
