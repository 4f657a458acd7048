//! Another protocol on the same port: a server whose handler offers a
//! [`Handoff`] gives connections that open with HTTP/2's preface
//! (`PRI * HTTP/2.0`, what a gRPC client sends), or with a TLS ClientHello
//! that asks for `h2`, to the handoff as a plain std socket, bytes unread;
//! everything else is served as Remoting (see `opening`).

use std::os::unix::io::{AsRawFd, FromRawFd};
use std::sync::Arc;

use glommio::net::TcpStream;

/// A connection handed over: its socket, and whether it opens with TLS
/// (the receiver then runs the handshake).
pub type HandedOver = (std::net::TcpStream, bool);

/// Where connections of the other protocol go. The callback runs on the
/// accepting executor and must not block (send the socket on a channel).
#[derive(Clone)]
pub struct Handoff(Arc<dyn Fn(HandedOver) + Send + Sync>);

impl Handoff {
    pub fn new(give: impl Fn(HandedOver) + Send + Sync + 'static) -> Self {
        Handoff(Arc::new(give))
    }
}

/// Gives the connection to `handoff` as a non-blocking std socket: a
/// duplicate of its descriptor, so dropping glommio's stream (which closes
/// its own) leaves the connection open.
pub(crate) fn hand_over(stream: TcpStream, tls: bool, handoff: &Handoff) -> std::io::Result<()> {
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
    (handoff.0)((socket, tls));
    Ok(())
}
