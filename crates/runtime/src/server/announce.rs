//! The readiness line servers print once they serve, written with a single
//! `write` so lines from processes sharing one stderr never interleave
//! (`eprintln!` may split a formatted line over several writes).

use std::io::Write;
use std::net::SocketAddr;

/// Prints `ferrocket {role} listening on {addr}` to stderr as one write.
pub fn announce_listening(role: &str, addr: SocketAddr) {
    let line = format!("ferrocket {role} listening on {addr}\n");
    // A lost readiness line only delays whoever waits for it; nothing to do.
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
}
