//! Another protocol on the same port: a server whose handler offers a
//! [`Handoff`] looks at the first byte of each new connection (without
//! taking it) and gives connections that open with HTTP/2's preface
//! (`PRI * HTTP/2.0`, what a gRPC client sends) to the handoff as a plain
//! std socket; everything else is served as Remoting. A Remoting frame
//! starts with its 4-byte length, whose first byte is 0 for every frame
//! this server accepts (under 16 MiB), so one byte tells them apart, as
//! RocketMQ's protocol negotiation does with its first bytes.

use std::fmt;
use std::os::unix::io::{AsRawFd, FromRawFd};
use std::sync::Arc;
use std::time::Duration;

use futures_lite::future;
use glommio::net::TcpStream;

/// The first byte of HTTP/2's connection preface.
const HTTP2_FIRST_BYTE: u8 = b'P';

/// Where connections of the other protocol go. The callback runs on the
/// accepting executor and must not block (send the socket on a channel).
#[derive(Clone)]
pub struct Handoff(Arc<dyn Fn(std::net::TcpStream) + Send + Sync>);

impl Handoff {
    pub fn new(give: impl Fn(std::net::TcpStream) + Send + Sync + 'static) -> Self {
        Handoff(Arc::new(give))
    }
}

impl fmt::Debug for Handoff {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Handoff")
    }
}

impl PartialEq for Handoff {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for Handoff {}

/// What the first byte of a new connection says.
pub(crate) enum Opening {
    Remoting,
    Http2,
    /// Closed, failed or silent past the timeout.
    Nothing,
}

/// Waits (at most `timeout`) for the connection's first byte, leaving it
/// to be read.
pub(crate) async fn opening(stream: &TcpStream, timeout: Duration) -> Opening {
    let mut first = [0u8; 1];
    let peeked = future::or(async { Some(stream.peek(&mut first).await) }, async {
        glommio::timer::sleep(timeout).await;
        None
    })
    .await;
    match peeked {
        Some(Ok(1)) if first[0] == HTTP2_FIRST_BYTE => Opening::Http2,
        Some(Ok(1)) => Opening::Remoting,
        _ => Opening::Nothing,
    }
}

/// Gives the connection to `handoff` as a non-blocking std socket: a
/// duplicate of its descriptor, so dropping glommio's stream (which closes
/// its own) leaves the connection open.
pub(crate) fn hand_over(stream: TcpStream, handoff: &Handoff) -> std::io::Result<()> {
    // SAFETY: dup of a descriptor this stream owns; the new one is ours.
    let fd = unsafe { libc::dup(stream.as_raw_fd()) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `fd` is a fresh descriptor of a connected TCP socket that
    // nothing else owns.
    let socket = unsafe { std::net::TcpStream::from_raw_fd(fd) };
    socket.set_nonblocking(true)?;
    drop(stream);
    (handoff.0)(socket);
    Ok(())
}
