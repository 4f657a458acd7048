//! Listening sockets: built with socket2 (so SO_REUSEPORT is our choice, not
//! glommio's, whose own `bind` always sets it) and handed to glommio.

use std::io;
use std::net::SocketAddr;
use std::os::fd::{FromRawFd, IntoRawFd};

use socket2::{Domain, Protocol, Socket, Type};

/// Pending-connection queue length passed to `listen(2)`.
pub const LISTEN_BACKLOG: i32 = 1024;

/// Binds a TCP listener on `addr` for the current glommio executor.
///
/// With `reuse_port`, several executors (one per broker shard) may bind the
/// same address and the kernel spreads connections over them. Without it a
/// second bind of a busy port fails with `AddrInUse`, which is what a single
/// process such as the name server wants. SO_REUSEADDR is always set so a
/// restarted server can bind while old connections sit in TIME_WAIT.
///
/// Must be called on a glommio executor thread: the listener registers with
/// that executor's reactor.
pub fn bind_listener(addr: SocketAddr, reuse_port: bool) -> io::Result<glommio::net::TcpListener> {
    let domain = if addr.is_ipv6() {
        Domain::IPV6
    } else {
        Domain::IPV4
    };
    let socket = Socket::new(domain, Type::STREAM, Some(Protocol::TCP))?;
    socket.set_reuse_address(true)?;
    if reuse_port {
        socket.set_reuse_port(true)?;
    }
    socket.bind(&addr.into())?;
    socket.listen(LISTEN_BACKLOG)?;
    let fd = socket.into_raw_fd();
    // SAFETY: `fd` is a bound, listening TCP socket we own exclusively (taken
    // out of `socket` just above); the glommio listener takes ownership and
    // closes it when dropped.
    let listener = unsafe { glommio::net::TcpListener::from_raw_fd(fd) };
    Ok(listener)
}
