//! Server loop tests over real 127.0.0.1 sockets: a glommio executor thread
//! runs `serve`, the test talks to it with blocking std sockets.

use std::cell::RefCell;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use ferrocket_protocol::frame::{FLAG_ONEWAY, FLAG_RESPONSE};
use ferrocket_protocol::{RemotingCommand, SerializeType};

use super::*;

pub(super) const ECHO: i32 = 1;
/// Answered only once a RELEASE request has arrived.
const WAIT: i32 = 2;
const RELEASE: i32 = 3;
/// Makes the server send a request to the client and answer with its remark.
const ASK_CLIENT: i32 = 4;
const SLEEP: i32 = 5;
const SERVER_QUESTION: i32 = 500;

#[derive(Default)]
struct TestHandler {
    release: StopSignal,
    closed: Arc<AtomicUsize>,
    handled: Arc<AtomicUsize>,
    ask_timeout_ms: u64,
    open: RefCell<Vec<u64>>,
    handoff: Option<Handoff>,
}

impl RequestHandler for TestHandler {
    fn handle(self: Rc<Self>, conn: Rc<Connection>, request: RemotingCommand) -> HandlerFuture {
        Box::pin(async move {
            self.handled.fetch_add(1, Ordering::SeqCst);
            let ok = |req: &RemotingCommand| RemotingCommand::response_to(req, 0, None);
            match request.code {
                ECHO => Some(ok(&request).with_body(request.body.clone())),
                WAIT => {
                    self.release.wait().await;
                    Some(ok(&request).with_body("waited"))
                }
                RELEASE => {
                    self.release.trigger();
                    Some(ok(&request).with_body("released"))
                }
                SLEEP => {
                    glommio::timer::sleep(Duration::from_millis(200)).await;
                    Some(ok(&request).with_body("slept"))
                }
                ASK_CLIENT => {
                    let question = RemotingCommand::request(SERVER_QUESTION).with_ext("q", "ping");
                    let timeout = Duration::from_millis(self.ask_timeout_ms);
                    let remark = match conn.request(question, timeout).await {
                        Ok(answer) => answer.remark.unwrap_or_default(),
                        Err(e) => format!("error: {e}"),
                    };
                    Some(RemotingCommand::response_to(&request, 0, Some(remark)))
                }
                _ => Some(RemotingCommand::not_supported(&request)),
            }
        })
    }

    fn on_open(&self, conn: &Rc<Connection>) {
        self.open.borrow_mut().push(conn.id());
    }

    fn on_close(&self, _conn: &Connection) {
        self.closed.fetch_add(1, Ordering::SeqCst);
    }

    fn handoff(&self) -> Option<&Handoff> {
        self.handoff.as_ref()
    }
}

pub(super) struct TestServer {
    pub(super) addr: SocketAddr,
    stop: Arc<AtomicBool>,
    closed: Arc<AtomicUsize>,
    pub(super) handled: Arc<AtomicUsize>,
    thread: Option<glommio::ExecutorJoinHandle<()>>,
}

impl TestServer {
    fn start(limits: ServerLimits, ask_timeout_ms: u64) -> Self {
        Self::start_with(limits, ask_timeout_ms, None, None)
    }

    pub(super) fn start_with(
        limits: ServerLimits,
        ask_timeout_ms: u64,
        handoff: Option<Handoff>,
        tls: Option<Arc<ferrocket_tls::ServerTls>>,
    ) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let closed = Arc::new(AtomicUsize::new(0));
        let handled = Arc::new(AtomicUsize::new(0));
        let (tx, rx) = std::sync::mpsc::channel();
        let (stop2, closed2, handled2) = (stop.clone(), closed.clone(), handled.clone());
        let thread = glommio::LocalExecutorBuilder::default()
            .name("test-server")
            .spawn(move || async move {
                let listener = bind_listener("127.0.0.1:0".parse().unwrap(), false).unwrap();
                tx.send(listener.local_addr().unwrap()).unwrap();
                let handler = Rc::new(TestHandler {
                    closed: closed2,
                    handled: handled2,
                    ask_timeout_ms,
                    handoff,
                    ..TestHandler::default()
                });
                let config = ServerConfig {
                    shard_index: 3,
                    limits,
                    tls,
                };
                serve(
                    listener,
                    handler,
                    config,
                    flag_set(stop2, Duration::from_millis(10)),
                )
                .await;
            })
            .unwrap();
        let addr = rx.recv_timeout(Duration::from_secs(10)).unwrap();
        Self {
            addr,
            stop,
            closed,
            handled,
            thread: Some(thread),
        }
    }

    pub(super) fn connect(&self) -> TcpStream {
        let stream = TcpStream::connect(self.addr).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        stream
    }

    fn stop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(thread) = self.thread.take() {
            thread.join().unwrap();
        }
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.stop();
    }
}

pub(super) fn send(stream: &mut TcpStream, command: &RemotingCommand) {
    stream.write_all(&command.to_bytes()).unwrap();
}

/// The next frame, or `None` once the server closed the connection.
pub(super) fn recv(stream: &mut TcpStream) -> Option<RemotingCommand> {
    let mut prefix = [0u8; 4];
    match stream.read_exact(&mut prefix) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return None,
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return None,
        Err(e) => panic!("read failed: {e}"),
    }
    let total = i32::from_be_bytes(prefix) as usize;
    let mut frame = vec![0u8; 4 + total];
    frame[..4].copy_from_slice(&prefix);
    stream.read_exact(&mut frame[4..]).unwrap();
    Some(RemotingCommand::decode(Bytes::from(frame)).unwrap())
}

pub(super) fn request(code: i32, opaque: i32) -> RemotingCommand {
    let mut command = RemotingCommand::request(code);
    command.opaque = opaque;
    command
}

pub(super) fn echo_works(server: &TestServer) {
    let mut client = server.connect();
    send(&mut client, &request(ECHO, 99).with_body("still here"));
    let response = recv(&mut client).unwrap();
    assert_eq!(response.opaque, 99);
    assert_eq!(&response.body[..], b"still here");
}

#[test]
fn slow_request_does_not_block_later_ones_on_the_same_connection() {
    let server = TestServer::start(ServerLimits::default(), 1000);
    let mut client = server.connect();
    // WAIT can only finish after RELEASE, sent behind it on the same connection.
    let mut both = request(WAIT, 1).to_bytes().to_vec();
    both.extend_from_slice(&request(RELEASE, 2).to_bytes());
    client.write_all(&both).unwrap();
    let first = recv(&mut client).unwrap();
    let second = recv(&mut client).unwrap();
    assert_eq!((first.opaque, &first.body[..]), (2, &b"released"[..]));
    assert_eq!((second.opaque, &second.body[..]), (1, &b"waited"[..]));
    assert!(first.is_response() && second.is_response());
}

#[test]
fn pipelined_requests_all_answered_with_their_opaques() {
    let server = TestServer::start(ServerLimits::default(), 1000);
    let mut client = server.connect();
    let count = 1000;
    let mut burst = Vec::new();
    for opaque in 0..count {
        let mut command = request(ECHO, opaque).with_body(format!("m{opaque}"));
        if opaque % 2 == 1 {
            command.serialize_type = SerializeType::RocketMq;
        }
        burst.extend_from_slice(&command.to_bytes());
    }
    client.write_all(&burst).unwrap();
    let mut seen = vec![false; count as usize];
    for _ in 0..count {
        let response = recv(&mut client).unwrap();
        assert_eq!(response.body, Bytes::from(format!("m{}", response.opaque)));
        let expected_type = if response.opaque % 2 == 1 {
            SerializeType::RocketMq
        } else {
            SerializeType::Json
        };
        assert_eq!(response.serialize_type, expected_type);
        assert!(
            !seen[response.opaque as usize],
            "duplicate {}",
            response.opaque
        );
        seen[response.opaque as usize] = true;
    }
}

#[test]
fn inflight_limit_pauses_reading_and_resumes() {
    let limits = ServerLimits {
        inflight_requests_max: 1,
        ..ServerLimits::default()
    };
    let server = TestServer::start(limits, 1000);
    let mut client = server.connect();
    let mut burst = Vec::new();
    for opaque in 0..50 {
        let code = if opaque % 10 == 0 { SLEEP } else { ECHO };
        burst.extend_from_slice(&request(code, opaque).to_bytes());
    }
    client.write_all(&burst).unwrap();
    // One request at a time: answers come back in request order.
    for opaque in 0..50 {
        assert_eq!(recv(&mut client).unwrap().opaque, opaque);
    }
}

#[test]
fn large_bodies_round_trip() {
    let server = TestServer::start(ServerLimits::default(), 1000);
    let mut client = server.connect();
    let big: Vec<u8> = (0..3_000_000u32).map(|i| (i % 251) as u8).collect();
    send(&mut client, &request(ECHO, 7).with_body(big.clone()));
    send(&mut client, &request(ECHO, 8).with_body("small"));
    let first = recv(&mut client).unwrap();
    let second = recv(&mut client).unwrap();
    assert_eq!((first.opaque, first.body.len()), (7, big.len()));
    assert_eq!(&first.body[..], &big[..]);
    assert_eq!((second.opaque, &second.body[..]), (8, &b"small"[..]));
}

#[test]
fn oneway_requests_get_no_response() {
    let server = TestServer::start(ServerLimits::default(), 1000);
    let mut client = server.connect();
    let mut oneway = request(ECHO, 10).with_body("quiet");
    oneway.flag = FLAG_ONEWAY;
    send(&mut client, &oneway);
    send(&mut client, &request(ECHO, 11).with_body("loud"));
    let response = recv(&mut client).unwrap();
    assert_eq!((response.opaque, &response.body[..]), (11, &b"loud"[..]));
    assert_eq!(server.handled.load(Ordering::SeqCst), 2);
}

#[test]
fn unknown_code_is_the_handlers_business() {
    let server = TestServer::start(ServerLimits::default(), 1000);
    let mut client = server.connect();
    send(&mut client, &request(4242, 5));
    let response = recv(&mut client).unwrap();
    assert_eq!(response.code, 3);
    assert_eq!(
        response.remark.as_deref(),
        Some(" request type 4242 not supported")
    );
    echo_works(&server);
}

#[test]
fn bad_input_closes_only_that_connection() {
    let server = TestServer::start(ServerLimits::default(), 1000);
    let mut bystander = server.connect();
    let json = br#"{"code":1,"opaque":1}"#;
    let mut header_too_long = Vec::new();
    header_too_long.extend_from_slice(&(4 + 2i32).to_be_bytes());
    header_too_long.extend_from_slice(&100i32.to_be_bytes());
    header_too_long.extend_from_slice(b"{}");
    let mut bad_json = Vec::new();
    bad_json.extend_from_slice(&(4 + 5i32).to_be_bytes());
    bad_json.extend_from_slice(&5i32.to_be_bytes());
    bad_json.extend_from_slice(b"{nope");
    let mut bad_type = Vec::new();
    bad_type.extend_from_slice(&(4 + json.len() as i32).to_be_bytes());
    bad_type.extend_from_slice(&((7u32 << 24) | json.len() as u32).to_be_bytes());
    bad_type.extend_from_slice(json);
    let cases: Vec<(&str, Vec<u8>)> = vec![
        (
            "oversized length",
            (17 * 1024 * 1024i32).to_be_bytes().to_vec(),
        ),
        ("negative length", (-1i32).to_be_bytes().to_vec()),
        ("length below 4", [0, 0, 0, 2, 0, 0].to_vec()),
        ("header longer than frame", header_too_long),
        ("invalid JSON header", bad_json),
        ("unknown serialize type", bad_type),
    ];
    for (name, bytes) in cases {
        let mut client = server.connect();
        client.write_all(&bytes).unwrap();
        assert!(
            recv(&mut client).is_none(),
            "{name}: connection should be closed"
        );
        send(&mut bystander, &request(ECHO, 1).with_body(name));
        let response = recv(&mut bystander).unwrap();
        assert_eq!(&response.body[..], name.as_bytes());
    }
    echo_works(&server);
}

#[test]
fn server_sends_a_request_to_the_client_and_gets_its_answer() {
    let server = TestServer::start(ServerLimits::default(), 5000);
    let mut client = server.connect();
    send(&mut client, &request(ASK_CLIENT, 21));
    let question = recv(&mut client).unwrap();
    assert_eq!(question.code, SERVER_QUESTION);
    assert!(!question.is_response() && !question.is_oneway());
    assert_eq!(question.ext_fields.get("q"), Some("ping"));
    let mut answer = RemotingCommand::response_to(&question, 0, Some("pong".into()));
    answer.flag = FLAG_RESPONSE;
    send(&mut client, &answer);
    let response = recv(&mut client).unwrap();
    assert_eq!(response.opaque, 21);
    assert_eq!(response.remark.as_deref(), Some("pong"));
    // Only ASK_CLIENT reached the handler, not the client's answer.
    assert_eq!(server.handled.load(Ordering::SeqCst), 1);
}

#[test]
fn server_request_times_out_when_the_client_stays_silent() {
    let server = TestServer::start(ServerLimits::default(), 50);
    let mut client = server.connect();
    send(&mut client, &request(ASK_CLIENT, 22));
    let question = recv(&mut client).unwrap();
    assert_eq!(question.code, SERVER_QUESTION);
    let response = recv(&mut client).unwrap();
    assert_eq!(response.opaque, 22);
    let remark = response.remark.unwrap_or_default();
    assert!(remark.contains("no response"), "{remark}");
    // A late answer is dropped, not dispatched.
    let mut late = RemotingCommand::response_to(&question, 0, None);
    late.flag = FLAG_RESPONSE;
    send(&mut client, &late);
    echo_works(&server);
    assert_eq!(server.handled.load(Ordering::SeqCst), 2);
}

#[test]
fn connection_limit_closes_extra_connections() {
    let limits = ServerLimits {
        connections_max: 1,
        ..ServerLimits::default()
    };
    let server = TestServer::start(limits, 1000);
    let mut first = server.connect();
    send(&mut first, &request(ECHO, 1));
    assert!(recv(&mut first).is_some());
    let mut second = server.connect();
    let _ = second.write_all(&request(ECHO, 2).to_bytes());
    assert!(recv(&mut second).is_none());
    send(&mut first, &request(ECHO, 3));
    assert_eq!(recv(&mut first).unwrap().opaque, 3);
}

#[test]
fn graceful_stop_answers_in_flight_requests_then_closes() {
    let mut server = TestServer::start(ServerLimits::default(), 1000);
    let mut client = server.connect();
    send(&mut client, &request(SLEEP, 31));
    // Make sure the request is in flight before stopping.
    while server.handled.load(Ordering::SeqCst) == 0 {
        std::thread::sleep(Duration::from_millis(1));
    }
    server.stop();
    let response = recv(&mut client).unwrap();
    assert_eq!((response.opaque, &response.body[..]), (31, &b"slept"[..]));
    assert!(recv(&mut client).is_none());
    assert_eq!(server.closed.load(Ordering::SeqCst), 1);
    assert!(TcpStream::connect(server.addr).is_err());
}

#[test]
fn detached_connection_collects_what_is_sent() {
    let executor = glommio::LocalExecutor::default();
    executor.run(async {
        let addr: SocketAddr = "127.0.0.1:1".parse().unwrap();
        let conn = Connection::detached(5 << CONN_ID_SHARD_SHIFT | 9, addr, addr);
        assert_eq!(conn.shard_index(), 5);
        conn.send_oneway(RemotingCommand::request(40)).unwrap();
        conn.send(RemotingCommand::request(41).with_body(vec![1u8; 40_000]))
            .unwrap();
        let sent = conn.take_sent();
        assert_eq!(sent.len(), 2);
        assert!(sent[0].is_oneway());
        assert_eq!(sent[1].body.len(), 40_000);
        conn.close();
        assert!(conn.send(RemotingCommand::request(42)).is_err());
    });
}

#[test]
fn http2_connections_are_handed_over_and_remoting_is_served_beside_them() {
    const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
    let (given, taken) = std::sync::mpsc::channel::<TcpStream>();
    let given = std::sync::Mutex::new(given);
    let handoff = Handoff::new(move |(socket, tls)| {
        assert!(!tls);
        let _ = given.lock().unwrap().send(socket);
    });
    let server = TestServer::start_with(ServerLimits::default(), 1000, Some(handoff), None);
    let mut h2 = server.connect();
    h2.write_all(PREFACE).unwrap();
    let mut socket = taken.recv_timeout(Duration::from_secs(10)).unwrap();
    socket.set_nonblocking(false).unwrap();
    socket
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    // Nothing was taken from it: the new owner reads the preface.
    let mut read = vec![0u8; PREFACE.len()];
    socket.read_exact(&mut read).unwrap();
    assert_eq!(read, PREFACE);
    socket.write_all(b"settings").unwrap();
    let mut answer = [0u8; 8];
    h2.read_exact(&mut answer).unwrap();
    assert_eq!(
        &answer, b"settings",
        "the handed-over socket is the client's connection"
    );
    // Remoting connections on the same port are served as before.
    echo_works(&server);
    assert_eq!(server.handled.load(Ordering::SeqCst), 1);
}
