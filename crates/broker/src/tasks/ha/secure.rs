//! Optional protection of the HA stream, both Ferrocket keys and off by
//! default: Java's HA service has neither, so a Java slave cannot follow a
//! master that sets them (nor a Ferrocket slave a Java master).
//! - `haTlsEnable`: the stream runs over TLS. The master serves the
//!   broker port's certificate (`tls.server.*`, so `tls.server.mode` must
//!   not be `disabled`); the slave verifies it as the broker's other client
//!   calls do (`tls.client.authServer`, `tls.client.trustCertPath`) and
//!   presents `tls.client.certPath` when set.
//! - `haAuthSecret`: before any CommitLog byte, the master sends a random
//!   nonce and the slave must answer HMAC-SHA1(secret, context + nonce)
//!   within [`AUTH_TIMEOUT_MS`]; otherwise the master closes the link. The
//!   nonce makes a captured answer useless on another link; without TLS
//!   the stream itself is still readable on the wire.

use std::io::{self, Read};
use std::net::SocketAddr;

use ferrocket_tls::futures_rustls::{TlsAcceptor, TlsConnector};
use ferrocket_tls::MaybeTls;
use futures_lite::{AsyncReadExt, AsyncWriteExt};
use glommio::net::TcpStream;

use crate::shard::Shard;

/// Random bytes the master sends.
pub(crate) const NONCE_BYTES: usize = 16;
/// Bytes of the answer: Base64 of a 20-byte HMAC-SHA1.
pub(crate) const ANSWER_BYTES: usize = 28;
/// Longest the master waits for the TLS handshake and the answer.
pub(crate) const AUTH_TIMEOUT_MS: u64 = 5_000;
/// What the MAC covers before the nonce, so it proves this purpose only.
const CONTEXT: &[u8] = b"ferrocket-ha-v1";

/// The HA stream after the optional TLS handshake.
pub(crate) type HaIo = MaybeTls<TcpStream>;

/// The master's side: TLS, then the challenge, as the settings ask.
pub(crate) async fn accept(shard: &Shard, tcp: TcpStream) -> io::Result<HaIo> {
    let _ = tcp.set_nodelay(true);
    let replication = &shard.config().replication;
    let work = async {
        let mut io = if replication.ha_tls_enable {
            let tls = shard.env().tls.as_ref().ok_or_else(|| {
                io::Error::other("haTlsEnable needs TLS on the broker (tls.server.mode)")
            })?;
            let stream = TlsAcceptor::from(tls.config()).accept(tcp).await?;
            MaybeTls::Server(Box::new(stream))
        } else {
            MaybeTls::Plain(tcp)
        };
        if !replication.ha_auth_secret.is_empty() {
            challenge(&mut io, &replication.ha_auth_secret).await?;
        }
        Ok(io)
    };
    bounded(work).await
}

/// The slave's side of [`accept`].
pub(crate) async fn connect(shard: &Shard, tcp: TcpStream, master: SocketAddr) -> io::Result<HaIo> {
    let _ = tcp.set_nodelay(true);
    let config = shard.config();
    let replication = &config.replication;
    let work = async {
        let mut io = if replication.ha_tls_enable {
            let settings = config.tls.with_file().map_err(io::Error::other)?;
            let client = ferrocket_tls::client_config(&settings, &[]).map_err(io::Error::other)?;
            let name = ferrocket_tls::server_name(master);
            let stream = TlsConnector::from(client).connect(name, tcp).await?;
            MaybeTls::Client(Box::new(stream))
        } else {
            MaybeTls::Plain(tcp)
        };
        if !replication.ha_auth_secret.is_empty() {
            answer(&mut io, &replication.ha_auth_secret).await?;
        }
        Ok(io)
    };
    bounded(work).await
}

/// `work`, or a timeout error after [`AUTH_TIMEOUT_MS`].
async fn bounded<T>(work: impl std::future::Future<Output = io::Result<T>>) -> io::Result<T> {
    let timeout = async {
        glommio::timer::sleep(std::time::Duration::from_millis(AUTH_TIMEOUT_MS)).await;
        Err(io::Error::new(
            io::ErrorKind::TimedOut,
            format!("no TLS handshake and answer within {AUTH_TIMEOUT_MS} ms"),
        ))
    };
    futures_lite::future::or(work, timeout).await
}

async fn challenge(io: &mut HaIo, secret: &str) -> io::Result<()> {
    let nonce = nonce()?;
    io.write_all(&nonce).await?;
    io.flush().await?;
    let mut got = [0u8; ANSWER_BYTES];
    io.read_exact(&mut got).await?;
    let expected = mac(secret, &nonce);
    assert_eq!(expected.len(), ANSWER_BYTES, "Base64 of HMAC-SHA1");
    if !same(expected.as_bytes(), &got) {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            "the slave's answer does not match haAuthSecret",
        ));
    }
    Ok(())
}

async fn answer(io: &mut HaIo, secret: &str) -> io::Result<()> {
    let mut nonce = [0u8; NONCE_BYTES];
    io.read_exact(&mut nonce).await?;
    let answer = mac(secret, &nonce);
    assert_eq!(answer.len(), ANSWER_BYTES, "Base64 of HMAC-SHA1");
    io.write_all(answer.as_bytes()).await?;
    io.flush().await
}

fn mac(secret: &str, nonce: &[u8]) -> String {
    let mut content = Vec::with_capacity(CONTEXT.len() + nonce.len());
    content.extend_from_slice(CONTEXT);
    content.extend_from_slice(nonce);
    ferrocket_acl::sign(&content, secret)
}

fn nonce() -> io::Result<[u8; NONCE_BYTES]> {
    let mut nonce = [0u8; NONCE_BYTES];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut nonce)?;
    Ok(nonce)
}

/// Compares without stopping at the first difference.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_answer_depends_on_secret_and_nonce() {
        let one = mac("secret-1", &[1; NONCE_BYTES]);
        assert_eq!(one.len(), ANSWER_BYTES);
        assert_ne!(one, mac("secret-2", &[1; NONCE_BYTES]));
        assert_ne!(one, mac("secret-1", &[2; NONCE_BYTES]));
        assert!(same(
            one.as_bytes(),
            mac("secret-1", &[1; NONCE_BYTES]).as_bytes()
        ));
        assert!(!same(b"abc", b"abd") && !same(b"abc", b"ab"));
    }
}
