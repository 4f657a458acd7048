//! Listening sockets: built with socket2 (so SO_REUSEPORT is our choice, not
//! glommio's, whose own `bind` always sets it) and handed to glommio.

use std::io;
use std::net::SocketAddr;
use std::os::fd::{FromRawFd, IntoRawFd};

use socket2::{Domain, Protocol, Socket, Type};

/// Pending-connection queue length passed to `listen(2)`.
pub const LISTEN_BACKLOG: i32 = 1024;
/// How long a bind waits for a busy port to be released.
pub const BIND_WAIT_MS_MAX: u64 = 10_000;
/// Pause between bind attempts while the port is busy.
pub const BIND_RETRY_INTERVAL_MS: u64 = 100;
/// How long another live process may hold the port before the bind fails
/// (a server killed a moment ago can still show its socket while it exits).
pub const PORT_HOLDER_GRACE_MS: u64 = 1_000;

/// Runs `bind` until it stops failing with `AddrInUse` or
/// [`BIND_WAIT_MS_MAX`] passes. After a server is killed with SIGKILL its
/// listening socket can stay in LISTEN for a moment: the kernel tears
/// down the dead process's io_uring (which may hold the socket through a
/// pending accept) asynchronously, so an immediate restart on the same
/// port would fail for no lasting reason. A port that another live process
/// listens on for [`PORT_HOLDER_GRACE_MS`] fails, naming the process.
/// Blocking: call it before
/// a server starts serving (from a plain thread, or on an executor that
/// runs nothing else yet).
pub fn bind_waiting<T>(addr: SocketAddr, mut bind: impl FnMut() -> io::Result<T>) -> io::Result<T> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_millis(BIND_WAIT_MS_MAX);
    let mut warned = false;
    let mut held_since = None;
    loop {
        match bind() {
            Err(e)
                if e.kind() == io::ErrorKind::AddrInUse && std::time::Instant::now() < deadline =>
            {
                match super::port_holder(addr.port()) {
                    Some(holder) => {
                        let since = *held_since.get_or_insert_with(std::time::Instant::now);
                        if since.elapsed() >= std::time::Duration::from_millis(PORT_HOLDER_GRACE_MS)
                        {
                            let why = format!("port {} is in use by {holder}", addr.port());
                            return Err(io::Error::new(io::ErrorKind::AddrInUse, why));
                        }
                    }
                    None => held_since = None,
                }
                if !warned {
                    tracing::warn!(%addr, "port busy; waiting up to {BIND_WAIT_MS_MAX} ms for it to be released");
                    warned = true;
                }
                std::thread::sleep(std::time::Duration::from_millis(BIND_RETRY_INTERVAL_MS));
            }
            other => return other,
        }
    }
}

/// For a bind that failed because the port is in use: what to do about it,
/// naming the setting that chose the port; empty for any other failure.
pub fn in_use_hint(error: &io::Error, port_key: &str) -> String {
    if error.kind() != io::ErrorKind::AddrInUse {
        return String::new();
    }
    format!("; stop that server, or set {port_key} to a free port")
}

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

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;
    use std::time::{Duration, Instant};

    #[test]
    fn bind_waits_for_a_port_that_is_released() {
        let holder = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = holder.local_addr().unwrap();
        let release = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            drop(holder);
        });
        let started = Instant::now();
        let bound = bind_waiting(addr, || TcpListener::bind(addr)).unwrap();
        assert_eq!(bound.local_addr().unwrap(), addr);
        assert!(started.elapsed() >= Duration::from_millis(250));
        release.join().unwrap();
    }

    #[test]
    fn other_bind_errors_are_returned_at_once() {
        let addr: SocketAddr = "127.0.0.1:1".parse().unwrap();
        let mut calls = 0;
        let outcome: io::Result<()> = bind_waiting(addr, || {
            calls += 1;
            Err(io::Error::from(io::ErrorKind::PermissionDenied))
        });
        assert_eq!(outcome.unwrap_err().kind(), io::ErrorKind::PermissionDenied);
        assert_eq!(calls, 1);
    }
}
