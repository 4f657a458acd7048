//! The in-broker gRPC endpoint's bounds against one connection that opens
//! 100,000 streams and never finishes them (issue 39): the broker refuses
//! the streams past `grpcMaxConcurrentStreams` with REFUSED_STREAM, its
//! memory grows by less than 128 MiB, and a Remoting client is served
//! meanwhile. The client is the `h2` crate, its reads passed through
//! [`Unlimited`], which hides the broker's SETTINGS_MAX_CONCURRENT_STREAMS
//! from it: so it opens every stream, as an attacker would.

mod harness;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ferrocket_protocol::codes::{request_code, response_code};
use ferrocket_protocol::RemotingCommand;
use harness::{ready_timeout, Broker, BrokerOpts, Namesrv};

const STREAMS: usize = 100_000;
/// The default of `grpcMaxConcurrentStreams`.
const STREAMS_PER_CONNECTION: usize = 128;
const RSS_GROWTH_MAX_KIB: u64 = 128 << 10;
const POLL_MS: u64 = 50;

fn rss_kib(pid: i32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("the broker runs");
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS in /proc/PID/status")
}

fn remoting_served(broker: &Broker) {
    let mut conn = broker.connect();
    let mut request = RemotingCommand::request(request_code::GET_BROKER_RUNTIME_INFO);
    // Signed for the broker with ACL on; one with ACL off ignores it.
    ferrocket_acl::sign_request(&mut request, "appAccess1", "appSecret1");
    let answer = conn.request(request);
    assert_eq!(answer.code, response_code::SUCCESS, "{:?}", answer.remark);
}

/// What became of the streams: refused by the broker (REFUSED_STREAM),
/// ended by its GOAWAY(ENHANCE_YOUR_CALM) (h2 closes a connection after
/// 1,024 refusals), or ended otherwise.
#[derive(Default)]
struct Outcomes {
    refused: AtomicUsize,
    calmed: AtomicUsize,
    other: AtomicUsize,
    /// Answered at once with grpc-status RESOURCE_EXHAUSTED (8).
    exhausted: AtomicUsize,
    /// What the broker sent, read off the wire: RST_STREAM(REFUSED_STREAM)
    /// frames and GOAWAY(ENHANCE_YOUR_CALM) frames.
    wire_refused: AtomicUsize,
    wire_calmed: AtomicUsize,
}

impl Outcomes {
    fn counts(&self) -> (usize, usize, usize) {
        (
            self.refused.load(Ordering::Acquire),
            self.calmed.load(Ordering::Acquire),
            self.other.load(Ordering::Acquire),
        )
    }

    fn resolved(&self) -> usize {
        let (refused, calmed, other) = self.counts();
        refused + calmed + other + self.exhausted.load(Ordering::Acquire)
    }

    fn count(&self, answer: Result<http::Response<h2::RecvStream>, h2::Error>) {
        let outcome = match answer {
            Ok(response)
                if response
                    .headers()
                    .get("grpc-status")
                    .is_some_and(|s| s == "8") =>
            {
                &self.exhausted
            }
            Err(e) if e.reason() == Some(h2::Reason::REFUSED_STREAM) => &self.refused,
            Err(e) if e.is_go_away() && e.reason() == Some(h2::Reason::ENHANCE_YOUR_CALM) => {
                &self.calmed
            }
            _ => &self.other,
        };
        outcome.fetch_add(1, Ordering::AcqRel);
    }
}

/// Opens `streams` unary calls on one connection, none finished, and
/// returns once the connection runs (the streams' answers counted in
/// `outcomes` as they come).
async fn flood(
    addr: &str,
    streams: usize,
    outcomes: Arc<Outcomes>,
) -> h2::client::SendRequest<bytes::Bytes> {
    let tcp = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let tcp = Unlimited {
        inner: tcp,
        frames: SettingsRewriter {
            outcomes: Arc::clone(&outcomes),
            ..SettingsRewriter::default()
        },
        write_failed: false,
    };
    let (mut client, connection) = h2::client::Builder::new()
        .initial_max_send_streams(streams)
        .handshake::<_, bytes::Bytes>(tcp)
        .await
        .expect("HTTP/2 handshake");
    let uri = format!("http://{addr}/apache.rocketmq.v2.MessagingService/QueryRoute");
    for _ in 0..streams {
        let request = http::Request::post(&uri)
            .header("content-type", "application/grpc")
            .header("te", "trailers")
            .header("x-mq-client-id", "grpc-bounds-test")
            .body(())
            .expect("a request");
        // Headers only: the body never comes.
        let (answer, body) = client.send_request(request, false).expect("opened");
        let outcomes = Arc::clone(&outcomes);
        tokio::spawn(async move {
            let _body = body;
            outcomes.count(answer.await);
            // Held, unfinished, until the test ends.
            std::future::pending::<()>().await;
        });
    }
    tokio::spawn(async move {
        let _ = connection.await;
    });
    client
}

/// Waits until `outcomes` has `wanted` answers, serving a Remoting request
/// meanwhile and sampling the RSS of the process `pid` (the broker, or
/// the proxy); returns the largest sample.
fn watch(broker: &Broker, pid: i32, outcomes: &Outcomes, wanted: usize) -> u64 {
    let deadline = Instant::now() + ready_timeout() * 4;
    let mut peak = rss_kib(pid);
    while outcomes.resolved() < wanted {
        assert!(
            Instant::now() < deadline,
            "only {:?} (refused, calmed, other) of {wanted} streams answered",
            outcomes.counts()
        );
        remoting_served(broker);
        peak = peak.max(rss_kib(pid));
        std::thread::sleep(Duration::from_millis(POLL_MS));
    }
    peak.max(rss_kib(pid))
}

/// SETTINGS_MAX_CONCURRENT_STREAMS's identifier.
const MAX_CONCURRENT_STREAMS: u16 = 0x3;
const FRAME_HEADER: usize = 9;
const SETTINGS: u8 = 0x4;
const ACK: u8 = 0x1;
const SETTING_BYTES: usize = 6;

const RST_STREAM: u8 = 0x3;
const GOAWAY: u8 = 0x7;
const REFUSED_STREAM: u32 = 0x7;
const ENHANCE_YOUR_CALM: u32 = 0xb;

/// A connection whose incoming SETTINGS frames say "no stream limit", and
/// whose writes, once the broker has closed it, are dropped (so h2 goes on
/// reading what the broker sent before closing, instead of failing at the
/// first broken pipe).
struct Unlimited {
    inner: tokio::net::TcpStream,
    frames: SettingsRewriter,
    write_failed: bool,
}

/// Follows the server's frames byte by byte: overwrites the value of each
/// SETTINGS_MAX_CONCURRENT_STREAMS with u32::MAX, counts refusals.
#[derive(Default)]
struct SettingsRewriter {
    outcomes: Arc<Outcomes>,
    header: [u8; FRAME_HEADER],
    header_len: usize,
    payload_left: usize,
    /// The first 8 bytes of the frame's payload.
    payload: Vec<u8>,
    in_settings: bool,
    entry_pos: usize,
    entry_id: u16,
}

impl SettingsRewriter {
    /// Counts a whole RST_STREAM or GOAWAY frame by its error code.
    fn frame_done(&mut self) {
        let code = |at: usize| {
            let bytes: [u8; 4] = self.payload.get(at..at + 4)?.try_into().ok()?;
            Some(u32::from_be_bytes(bytes))
        };
        match self.header[3] {
            RST_STREAM if code(0) == Some(REFUSED_STREAM) => {
                self.outcomes.wire_refused.fetch_add(1, Ordering::AcqRel);
            }
            GOAWAY if code(4) == Some(ENHANCE_YOUR_CALM) => {
                self.outcomes.wire_calmed.fetch_add(1, Ordering::AcqRel);
            }
            _ => {}
        }
        self.payload.clear();
    }

    fn pass(&mut self, bytes: &mut [u8]) {
        for byte in bytes {
            if self.payload_left == 0 {
                self.header[self.header_len] = *byte;
                self.header_len += 1;
                if self.header_len == FRAME_HEADER {
                    let h = self.header;
                    self.payload_left =
                        usize::from(h[0]) << 16 | usize::from(h[1]) << 8 | usize::from(h[2]);
                    self.in_settings = h[3] == SETTINGS && h[4] & ACK == 0;
                    (self.header_len, self.entry_pos, self.entry_id) = (0, 0, 0);
                    if self.payload_left == 0 {
                        self.frame_done();
                    }
                }
                continue;
            }
            self.payload_left -= 1;
            if self.payload.len() < 8 {
                self.payload.push(*byte);
            }
            if self.payload_left == 0 {
                self.frame_done();
            }
            if !self.in_settings {
                continue;
            }
            match self.entry_pos {
                0 | 1 => self.entry_id = self.entry_id << 8 | u16::from(*byte),
                _ if self.entry_id == MAX_CONCURRENT_STREAMS => *byte = 0xFF,
                _ => {}
            }
            self.entry_pos += 1;
            if self.entry_pos == SETTING_BYTES {
                (self.entry_pos, self.entry_id) = (0, 0);
            }
        }
    }
}

impl tokio::io::AsyncRead for Unlimited {
    fn poll_read(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let read = std::pin::Pin::new(&mut this.inner).poll_read(cx, buf);
        if let std::task::Poll::Ready(Ok(())) = read {
            this.frames.pass(&mut buf.filled_mut()[before..]);
        }
        read
    }
}

impl tokio::io::AsyncWrite for Unlimited {
    fn poll_write(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        let this = self.get_mut();
        if this.write_failed {
            return std::task::Poll::Ready(Ok(buf.len()));
        }
        match std::pin::Pin::new(&mut this.inner).poll_write(cx, buf) {
            std::task::Poll::Ready(Err(_)) => {
                this.write_failed = true;
                std::task::Poll::Ready(Ok(buf.len()))
            }
            other => other,
        }
    }

    fn poll_flush(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

/// Streams of the second connection: past the limit, but fewer refusals
/// than make h2 close the connection, so the streams it took stay open.
const HELD_STREAMS: usize = 1_000;

#[test]
fn a_hundred_thousand_unfinished_streams_are_refused_and_remoting_is_served() {
    let namesrv = Namesrv::start();
    let broker = Broker::start(
        &namesrv.addr(),
        BrokerOpts {
            extra_args: vec!["--set".into(), "enableProxy=true".into()],
            ..Default::default()
        },
    );
    remoting_served(&broker);
    let before = rss_kib(broker.process.pid());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");

    // One connection, 100,000 streams, no bodies.
    let flooded = Arc::new(Outcomes::default());
    let _flooding = runtime.block_on(flood(&broker.addr(), STREAMS, Arc::clone(&flooded)));
    let pid = broker.process.pid();
    let peak = watch(&broker, pid, &flooded, STREAMS - STREAMS_PER_CONNECTION);
    let (refused, calmed, other) = flooded.counts();
    let on_wire = (
        flooded.wire_refused.load(Ordering::Acquire),
        flooded.wire_calmed.load(Ordering::Acquire),
    );
    assert!(on_wire.0 > 0, "no RST_STREAM(REFUSED_STREAM) came");
    assert!(
        on_wire.0 >= STREAMS - STREAMS_PER_CONNECTION || on_wire.1 > 0,
        "streams past the limit neither refused nor the connection closed: {on_wire:?} \
         (REFUSED_STREAM, GOAWAY(ENHANCE_YOUR_CALM)) on the wire"
    );
    let growth = peak.saturating_sub(before);
    assert!(
        growth < RSS_GROWTH_MAX_KIB,
        "the broker grew by {growth} KiB with {STREAMS} streams opened"
    );
    eprintln!(
        "flood: {on_wire:?} REFUSED_STREAM, GOAWAY frames; streams: {refused} refused, \
         {calmed} by GOAWAY, {other} other; RSS peak +{growth} KiB"
    );

    // A second connection keeps what the broker takes, unfinished.
    let held = Arc::new(Outcomes::default());
    let _holding = runtime.block_on(flood(&broker.addr(), HELD_STREAMS, Arc::clone(&held)));
    let peak = watch(&broker, pid, &held, HELD_STREAMS - STREAMS_PER_CONNECTION);
    assert_eq!(
        held.counts(),
        (HELD_STREAMS - STREAMS_PER_CONNECTION, 0, 0),
        "exactly the streams past the limit refused, the rest held"
    );
    let growth = peak.saturating_sub(before);
    assert!(growth < RSS_GROWTH_MAX_KIB, "grew by {growth} KiB");
    remoting_served(&broker);
    eprintln!("held: {STREAMS_PER_CONNECTION} streams open; RSS peak +{growth} KiB");
    drop(runtime);
    remoting_served(&broker);
}

/// Calls at once of a connection that has shown no credentials, ACL on.
const UNAUTHENTICATED_STREAMS_MAX: usize = 4;
const UNSIGNED_STREAMS: usize = 10;

#[test]
fn with_acl_on_a_connection_without_credentials_gets_the_small_budget() {
    let home = tempfile::tempdir().expect("a home");
    std::fs::create_dir_all(home.path().join("conf")).expect("conf");
    let accounts =
        "accounts:\n  - accessKey: appAccess1\n    secretKey: appSecret1\n    admin: true\n";
    std::fs::write(home.path().join("conf/plain_acl.yml"), accounts).expect("accounts");
    let set = |pair: String| ["--set".to_string(), pair];
    let namesrv = Namesrv::start();
    let broker = Broker::start(
        &namesrv.addr(),
        BrokerOpts {
            extra_args: [
                set("enableProxy=true".into()),
                set("aclEnable=true".into()),
                set(format!("rocketmqHome={}", home.path().display())),
                set(format!(
                    "grpcUnauthenticatedStreamsMax={UNAUTHENTICATED_STREAMS_MAX}"
                )),
            ]
            .concat(),
            ..Default::default()
        },
    );
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    let unsigned = Arc::new(Outcomes::default());
    let _held = runtime.block_on(flood(
        &broker.addr(),
        UNSIGNED_STREAMS,
        Arc::clone(&unsigned),
    ));
    let past_budget = UNSIGNED_STREAMS - UNAUTHENTICATED_STREAMS_MAX;
    watch(&broker, broker.process.pid(), &unsigned, past_budget);
    assert_eq!(
        unsigned.exhausted.load(Ordering::Acquire),
        past_budget,
        "the calls past the unauthenticated budget answered RESOURCE_EXHAUSTED; {:?}",
        unsigned.counts()
    );
    assert_eq!(unsigned.counts(), (0, 0, 0), "and nothing else ended");
    remoting_served(&broker);
}

#[test]
fn ferrocket_proxy_refuses_the_same_flood() {
    let namesrv = Namesrv::start();
    let broker = Broker::start(&namesrv.addr(), BrokerOpts::default());
    let home = tempfile::tempdir().expect("a home");
    let port = harness::process::free_port();
    let args: Vec<String> = ["proxy", "--namesrv-addr", &namesrv.addr(), "--listen-port"]
        .iter()
        .map(|s| s.to_string())
        .chain([port.to_string()])
        .collect();
    let proxy = harness::process::ServerProcess::start("proxy", &args, home.path(), port)
        .unwrap_or_else(|e| panic!("{e}"));
    let before = rss_kib(proxy.pid());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    let flooded = Arc::new(Outcomes::default());
    let _flooding = runtime.block_on(flood(proxy.addr(), STREAMS, Arc::clone(&flooded)));
    let peak = watch(
        &broker,
        proxy.pid(),
        &flooded,
        STREAMS - STREAMS_PER_CONNECTION,
    );
    let on_wire = (
        flooded.wire_refused.load(Ordering::Acquire),
        flooded.wire_calmed.load(Ordering::Acquire),
    );
    assert!(on_wire.0 > 0, "no RST_STREAM(REFUSED_STREAM) came");
    let growth = peak.saturating_sub(before);
    assert!(
        growth < RSS_GROWTH_MAX_KIB,
        "the proxy grew by {growth} KiB"
    );
    eprintln!("proxy flood: {on_wire:?} REFUSED_STREAM, GOAWAY frames; RSS peak +{growth} KiB");
}
