//! `tls.server.mode` over real sockets: TLS and plaintext clients of one
//! port, refusals, and gRPC over TLS handed over by its ALPN.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use ferrocket_protocol::RemotingCommand;
use ferrocket_tls::rustls::{ClientConnection, StreamOwned};
use ferrocket_tls::{ServerTls, TlsSettings};

use super::tests::{echo_works, request, TestServer, ECHO};
use super::{Handoff, ServerLimits};

fn server_tls(mode: &str) -> Option<Arc<ServerTls>> {
    let mut settings = TlsSettings::default();
    settings
        .set("tls.config.file", "/nonexistent/tls.properties")
        .unwrap();
    settings.set("tls.server.mode", mode).unwrap();
    ServerTls::new(&settings, &[]).unwrap()
}

fn start(mode: &str, handoff: Option<Handoff>) -> TestServer {
    TestServer::start_with(ServerLimits::default(), 1000, handoff, server_tls(mode))
}

type TlsClient = StreamOwned<ClientConnection, TcpStream>;

fn tls_connect(server: &TestServer, alpn: &[&[u8]]) -> TlsClient {
    let config = ferrocket_tls::client_config(&TlsSettings::default(), alpn).unwrap();
    let conn = ClientConnection::new(config, ferrocket_tls::server_name(server.addr)).unwrap();
    StreamOwned::new(conn, server.connect())
}

/// One echo over `stream`; `None` when the server closed or refused it.
fn echo(stream: &mut (impl Read + Write), body: &'static str) -> Option<Bytes> {
    let command = request(ECHO, 7).with_body(body);
    stream.write_all(&command.to_bytes()).ok()?;
    stream.flush().ok()?;
    let mut prefix = [0u8; 4];
    stream.read_exact(&mut prefix).ok()?;
    let total = i32::from_be_bytes(prefix) as usize;
    let mut frame = vec![0u8; 4 + total];
    frame[..4].copy_from_slice(&prefix);
    stream.read_exact(&mut frame[4..]).ok()?;
    Some(RemotingCommand::decode(Bytes::from(frame)).unwrap().body)
}

#[test]
fn permissive_serves_tls_and_plaintext_clients_on_one_port() {
    let server = start("permissive", None);
    let mut tls = tls_connect(&server, &[]);
    assert_eq!(echo(&mut tls, "over tls").unwrap(), "over tls");
    assert!(tls.conn.peer_certificates().is_some());
    echo_works(&server);
    assert_eq!(server.handled.load(Ordering::SeqCst), 2);
}

#[test]
fn enforcing_closes_plaintext_clients_unanswered() {
    let server = start("enforcing", None);
    let mut plain = server.connect();
    assert!(echo(&mut plain, "plain").is_none());
    let mut tls = tls_connect(&server, &[]);
    assert_eq!(echo(&mut tls, "over tls").unwrap(), "over tls");
    assert_eq!(server.handled.load(Ordering::SeqCst), 1);
}

#[test]
fn disabled_closes_tls_clients() {
    let server = start("disabled", None);
    let mut tls = tls_connect(&server, &[]);
    assert!(echo(&mut tls, "over tls").is_none());
    echo_works(&server);
}

#[test]
fn grpc_over_tls_is_handed_over_and_remoting_over_tls_is_served() {
    let (given, taken) = std::sync::mpsc::channel::<(TcpStream, bool)>();
    let given = std::sync::Mutex::new(given);
    let handoff = Handoff::new(move |handed| {
        let _ = given.lock().unwrap().send(handed);
    });
    let server = start("permissive", Some(handoff));
    let mut remoting = tls_connect(&server, &[]);
    assert_eq!(echo(&mut remoting, "remoting").unwrap(), "remoting");
    let mut grpc = tls_connect(&server, &[b"h2"]);
    // The handshake starts: the ClientHello goes out and is handed over.
    let _ = grpc.conn.write_tls(&mut grpc.sock);
    let (mut socket, tls) = taken.recv_timeout(Duration::from_secs(10)).unwrap();
    assert!(tls, "handed over as a TLS connection");
    socket.set_nonblocking(false).unwrap();
    let mut first = [0u8; 1];
    socket.read_exact(&mut first).unwrap();
    assert_eq!(
        first[0],
        ferrocket_tls::TLS_HANDSHAKE_BYTE,
        "nothing was read from it"
    );
}
