//! What a new connection is, from its first bytes (left unread): Remoting
//! in plaintext, Remoting over TLS, or (when the handler offers a
//! [`Handoff`]) gRPC in plaintext or over TLS. `tls.server.mode` decides
//! which are served: disabled closes TLS openers, enforcing closes
//! plaintext ones, as Java's `TlsModeHandler` does (without an answer).

use std::time::{Duration, Instant};

use ferrocket_tls::TLS_HANDSHAKE_BYTE;
use ferrocket_tls::{client_hello_alpn, HelloAlpn, ServerTls, TlsMode, CLIENT_HELLO_BYTES_MAX};
use futures_lite::future;
use glommio::net::TcpStream;

/// The first byte of HTTP/2's connection preface (`PRI * HTTP/2.0`).
const HTTP2_FIRST_BYTE: u8 = b'P';
/// First pause between looks at a ClientHello that has not all arrived (a
/// peek returns at once while some bytes are there); it doubles up to
/// [`HELLO_PEEK_PAUSE_MS_MAX`], so a client that stalls mid-hello costs few
/// wake-ups.
const HELLO_PEEK_PAUSE_MS: u64 = 1;
const HELLO_PEEK_PAUSE_MS_MAX: u64 = 64;

/// What to do with a new connection.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Opening {
    Remoting,
    TlsRemoting,
    /// gRPC: hand it over, saying whether it opens with TLS.
    Handoff {
        tls: bool,
    },
    /// Closed, failed, silent past the deadline, or refused by the mode.
    Close(&'static str),
}

/// Looks at the connection's first bytes until `deadline`.
pub(crate) async fn classify(
    stream: &TcpStream,
    tls: Option<&ServerTls>,
    handoff: bool,
    deadline: Instant,
) -> Opening {
    let mut first = [0u8; 1];
    match peek_until(stream, &mut first, deadline).await {
        Some(1) => {}
        _ => return Opening::Close("closed or silent before its first byte"),
    }
    let mode = tls.map_or(TlsMode::Disabled, ServerTls::mode);
    match (first[0], mode) {
        (TLS_HANDSHAKE_BYTE, TlsMode::Disabled) => {
            Opening::Close("a TLS client, but tls.server.mode=disabled")
        }
        (TLS_HANDSHAKE_BYTE, _) if handoff => match hello_alpn(stream, deadline).await {
            Some(HelloAlpn::H2) => Opening::Handoff { tls: true },
            Some(_) => Opening::TlsRemoting,
            None => Opening::Close("closed or silent in its ClientHello"),
        },
        (TLS_HANDSHAKE_BYTE, _) => Opening::TlsRemoting,
        (_, TlsMode::Enforcing) => {
            Opening::Close("a plaintext client, but tls.server.mode=enforcing")
        }
        (HTTP2_FIRST_BYTE, _) if handoff => Opening::Handoff { tls: false },
        _ => Opening::Remoting,
    }
}

/// The ALPN verdict of the ClientHello's first record.
async fn hello_alpn(stream: &TcpStream, deadline: Instant) -> Option<HelloAlpn> {
    let mut hello = vec![0u8; CLIENT_HELLO_BYTES_MAX];
    let mut pause_ms = HELLO_PEEK_PAUSE_MS;
    loop {
        let got = peek_until(stream, &mut hello, deadline).await?;
        if got == 0 {
            return None;
        }
        match client_hello_alpn(&hello[..got]) {
            HelloAlpn::NeedBytes(_) if Instant::now() < deadline => {
                glommio::timer::sleep(Duration::from_millis(pause_ms)).await;
                pause_ms = (pause_ms * 2).min(HELLO_PEEK_PAUSE_MS_MAX);
            }
            HelloAlpn::NeedBytes(_) => return None,
            verdict => return Some(verdict),
        }
    }
}

/// Peeks into `buf` (bytes stay unread); `None` on error or past `deadline`.
async fn peek_until(stream: &TcpStream, buf: &mut [u8], deadline: Instant) -> Option<usize> {
    let left = deadline.saturating_duration_since(Instant::now());
    future::or(async { stream.peek(buf).await.ok() }, async {
        glommio::timer::sleep(left).await;
        None
    })
    .await
}

/// The TLS handshake of a Remoting connection, until `deadline`.
pub(crate) async fn accept_tls(
    stream: TcpStream,
    tls: &ServerTls,
    deadline: Instant,
) -> Result<ferrocket_tls::futures_rustls::server::TlsStream<TcpStream>, String> {
    let acceptor = ferrocket_tls::futures_rustls::TlsAcceptor::from(tls.config());
    let left = deadline.saturating_duration_since(Instant::now());
    future::or(
        async {
            acceptor
                .accept(stream)
                .await
                .map_err(|e| format!("TLS handshake failed: {e}"))
        },
        async {
            glommio::timer::sleep(left).await;
            Err("TLS handshake timed out".to_string())
        },
    )
    .await
}
