//! A tiny blocking Remoting client over `std::net`, independent of
//! `ferrocket-client`, so tests can speak to a server (and send it bad
//! bytes) without the code under test on both ends. It is the one blocking
//! Remoting test client of the workspace: the root tests, the name server's
//! and the broker's all use it.

use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

use bytes::BytesMut;
use ferrocket_protocol::codes::request_code;
use ferrocket_protocol::{FrameDecoder, RemotingCommand};

/// How long a test waits for one answer unless the connection was given
/// another limit ([`RemotingConn::with_answer_timeout`]).
pub const ANSWER_TIMEOUT_MS: u64 = 10_000;
const READ_CHUNK_BYTES: usize = 64 * 1024;

/// What came back after sending something.
#[derive(Debug)]
pub enum Outcome {
    Response(RemotingCommand),
    /// The server closed (or reset) the connection.
    Closed,
    /// Bytes that do not decode as a frame.
    Undecodable(String),
    TimedOut,
}

pub struct RemotingConn {
    stream: TcpStream,
    buf: BytesMut,
    decoder: FrameDecoder,
    next_opaque: i32,
    /// How long [`request`](Self::request) and [`recv`](Self::recv) wait.
    answer_timeout: Duration,
    /// Server-initiated requests that [`request`](Self::request) skipped
    /// while waiting for its answer, oldest first.
    notices: Vec<RemotingCommand>,
}

impl RemotingConn {
    pub fn connect(addr: impl ToSocketAddrs) -> std::io::Result<Self> {
        Self::from_stream(TcpStream::connect(addr)?)
    }

    /// [`RemotingConn::connect`], giving up after `timeout` (a peer behind
    /// a partition never answers the handshake).
    pub fn connect_timeout(addr: &str, timeout: Duration) -> std::io::Result<Self> {
        let addr = addr
            .to_socket_addrs()?
            .next()
            .ok_or_else(|| std::io::Error::other(format!("{addr}: no address")))?;
        Self::from_stream(TcpStream::connect_timeout(&addr, timeout)?)
    }

    fn from_stream(stream: TcpStream) -> std::io::Result<Self> {
        stream.set_nodelay(true)?;
        Ok(Self {
            stream,
            buf: BytesMut::with_capacity(READ_CHUNK_BYTES),
            decoder: FrameDecoder::default(),
            next_opaque: 1,
            answer_timeout: Duration::from_millis(ANSWER_TIMEOUT_MS),
            notices: Vec::new(),
        })
    }

    /// The same connection, waiting up to `timeout` for each answer (for
    /// servers that may hold a request, such as a broker's long poll).
    pub fn with_answer_timeout(mut self, timeout: Duration) -> Self {
        self.answer_timeout = timeout;
        self
    }

    /// How long [`request`](Self::request) and [`recv`](Self::recv) wait.
    pub fn answer_timeout(&self) -> Duration {
        self.answer_timeout
    }

    /// Server-initiated requests (frames without the response flag) that
    /// arrived while [`request`](Self::request) waited for an answer, oldest
    /// first. Frames read by [`recv`](Self::recv) or
    /// [`read_outcome`](Self::read_outcome) go to the caller, not here.
    pub fn notices(&self) -> &[RemotingCommand] {
        &self.notices
    }

    /// Takes the collected [`notices`](Self::notices), leaving none.
    pub fn take_notices(&mut self) -> Vec<RemotingCommand> {
        std::mem::take(&mut self.notices)
    }

    /// Writes raw bytes as they are.
    pub fn send_raw(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.stream.write_all(bytes)?;
        self.stream.flush()
    }

    /// Closes our sending half (the server sees end of stream).
    pub fn shutdown_write(&mut self) {
        let _ = self.stream.shutdown(Shutdown::Write);
    }

    /// Gives `command` a fresh opaque and sends it; returns the opaque.
    pub fn send(&mut self, command: &mut RemotingCommand) -> std::io::Result<i32> {
        command.opaque = self.next_opaque;
        self.next_opaque += 1;
        self.send_raw(&command.to_bytes())?;
        Ok(command.opaque)
    }

    /// Sends `command` and waits for the response with its opaque.
    /// Server-initiated requests arriving meanwhile are kept in
    /// [`notices`](Self::notices); responses to other opaques are dropped.
    /// Panics on anything else (closed connection, timeout, bad bytes).
    pub fn request(&mut self, mut command: RemotingCommand) -> RemotingCommand {
        let code = command.code;
        let opaque = self.send(&mut command).unwrap();
        match self.await_response(opaque) {
            Outcome::Response(response) => response,
            other => panic!("request code {code}: expected a response, got {other:?}"),
        }
    }

    /// Like [`request`](Self::request), but `None` instead of a panic when
    /// the connection fails, closes or times out (a server being killed).
    pub fn try_request(&mut self, mut command: RemotingCommand) -> Option<RemotingCommand> {
        let opaque = self.send(&mut command).ok()?;
        match self.await_response(opaque) {
            Outcome::Response(response) => Some(response),
            _ => None,
        }
    }

    /// The response with `opaque` as `Outcome::Response`, or what ended
    /// the wait.
    fn await_response(&mut self, opaque: i32) -> Outcome {
        let deadline = Instant::now() + self.answer_timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.read_outcome(left) {
                // A server-initiated request may carry the same opaque; an
                // answer without the response flag is never taken (and the
                // wait times out).
                Outcome::Response(response)
                    if response.opaque == opaque && response.is_response() =>
                {
                    return Outcome::Response(response);
                }
                Outcome::Response(notice) if !notice.is_response() => self.notices.push(notice),
                Outcome::Response(_) => continue, // an answer to another request
                other => return other,
            }
        }
    }

    /// The next frame, or `None` once the server closed the connection.
    /// Panics on anything else (timeout, bad bytes).
    pub fn recv(&mut self) -> Option<RemotingCommand> {
        match self.read_outcome(self.answer_timeout) {
            Outcome::Response(frame) => Some(frame),
            Outcome::Closed => None,
            other => panic!("expected a frame or the end of the connection, got {other:?}"),
        }
    }

    /// Reads until one frame arrives, the connection closes, the bytes turn
    /// out not to be a frame, or `timeout` passes.
    pub fn read_outcome(&mut self, timeout: Duration) -> Outcome {
        let deadline = Instant::now() + timeout;
        let mut chunk = vec![0u8; READ_CHUNK_BYTES];
        loop {
            match self.decoder.next_frame(&mut self.buf) {
                Ok(Some(frame)) => return Outcome::Response(frame),
                Ok(None) => {}
                Err(e) => return Outcome::Undecodable(e.to_string()),
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Outcome::TimedOut;
            }
            self.stream.set_read_timeout(Some(left)).unwrap();
            match self.stream.read(&mut chunk) {
                Ok(0) => return Outcome::Closed,
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                    return Outcome::TimedOut
                }
                Err(e)
                    if matches!(e.kind(), ErrorKind::ConnectionReset | ErrorKind::BrokenPipe) =>
                {
                    return Outcome::Closed
                }
                Err(e) => panic!("reading from the server failed: {e}"),
            }
        }
    }
}

/// GET_ROUTEINFO_BY_TOPIC request.
pub fn route_request(topic: &str) -> RemotingCommand {
    RemotingCommand::request(request_code::GET_ROUTEINFO_BY_TOPIC).with_ext("topic", topic)
}

#[cfg(test)]
mod tests {
    use std::net::TcpListener;
    use std::panic::{catch_unwind, AssertUnwindSafe};
    use std::thread::JoinHandle;

    use ferrocket_protocol::codes::response_code;

    use super::*;

    /// A one-connection server on a thread: `script` gets the accepted
    /// stream and a way to read the client's frames from it.
    fn serve_once(
        script: impl FnOnce(&mut TcpStream, &mut dyn FnMut(&mut TcpStream) -> RemotingCommand)
            + Send
            + 'static,
    ) -> (String, JoinHandle<()>) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let thread = std::thread::spawn(move || {
            let (mut stream, _) = listener.accept().unwrap();
            let mut buf = BytesMut::new();
            let decoder = FrameDecoder::default();
            let mut next = |stream: &mut TcpStream| loop {
                if let Some(frame) = decoder.next_frame(&mut buf).unwrap() {
                    return frame;
                }
                let mut chunk = [0u8; 4096];
                let n = stream.read(&mut chunk).unwrap();
                assert!(n > 0, "the client closed before sending a frame");
                buf.extend_from_slice(&chunk[..n]);
            };
            script(&mut stream, &mut next);
        });
        (addr, thread)
    }

    #[test]
    fn request_keeps_server_requests_and_drops_stray_answers() {
        let (addr, server) = serve_once(|stream, next| {
            let request = next(stream);
            // A server-initiated request with the very same opaque, an
            // answer to some other request, then the real answer.
            let mut notice = RemotingCommand::request(40).with_ext("n", 1);
            notice.opaque = request.opaque;
            let mut stray =
                RemotingCommand::response_to(&request, response_code::SYSTEM_ERROR, None);
            stray.opaque = request.opaque + 100;
            let answer = RemotingCommand::response_to(&request, response_code::SUCCESS, None);
            for frame in [notice, stray, answer] {
                stream.write_all(&frame.to_bytes()).unwrap();
            }
        });
        let mut conn = RemotingConn::connect(&addr).unwrap();
        assert_eq!(
            conn.answer_timeout(),
            Duration::from_millis(ANSWER_TIMEOUT_MS)
        );
        assert!(conn.notices().is_empty());
        let response = conn.request(RemotingCommand::request(
            request_code::GET_ROUTEINFO_BY_TOPIC,
        ));
        assert_eq!(response.code, response_code::SUCCESS);
        assert!(response.is_response());
        let notices = conn.notices();
        assert_eq!(notices.len(), 1, "{notices:?}");
        assert_eq!(notices[0].code, 40);
        assert!(!notices[0].is_response());
        assert_eq!(conn.take_notices().len(), 1);
        assert!(conn.notices().is_empty());
        server.join().unwrap();
    }

    #[test]
    fn answer_timeout_is_settable() {
        let (addr, server) = serve_once(|stream, next| {
            next(stream);
            // Never answer; wait for the client to give up and close.
            let mut rest = Vec::new();
            let _ = stream.read_to_end(&mut rest);
        });
        let mut conn = RemotingConn::connect(&addr)
            .unwrap()
            .with_answer_timeout(Duration::from_millis(200));
        assert_eq!(conn.answer_timeout(), Duration::from_millis(200));
        let started = Instant::now();
        let waited = catch_unwind(AssertUnwindSafe(|| {
            conn.request(RemotingCommand::request(
                request_code::GET_ROUTEINFO_BY_TOPIC,
            ))
        }));
        assert!(waited.is_err(), "a missing answer panics");
        assert!(started.elapsed() < Duration::from_millis(ANSWER_TIMEOUT_MS / 2));
        drop(conn);
        server.join().unwrap();
    }

    #[test]
    fn recv_sees_the_end_of_the_connection() {
        let (addr, server) = serve_once(|stream, next| {
            next(stream);
            let _ = stream.shutdown(Shutdown::Both);
        });
        let mut conn = RemotingConn::connect(&addr).unwrap();
        conn.send_raw(&RemotingCommand::request(request_code::GET_ROUTEINFO_BY_TOPIC).to_bytes())
            .unwrap();
        assert!(conn.recv().is_none());
        server.join().unwrap();
    }
}
