//! A tiny blocking Remoting client over `std::net`, independent of
//! `ferrocket-client`, so tests can speak to a server (and send it bad
//! bytes) without the code under test on both ends.

use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

use bytes::BytesMut;
use ferrocket_protocol::codes::request_code;
use ferrocket_protocol::{FrameDecoder, RemotingCommand};

/// How long a test waits for one answer.
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
}

impl RemotingConn {
    pub fn connect(addr: impl ToSocketAddrs) -> std::io::Result<Self> {
        let stream = TcpStream::connect(addr)?;
        stream.set_nodelay(true)?;
        Ok(Self {
            stream,
            buf: BytesMut::with_capacity(READ_CHUNK_BYTES),
            decoder: FrameDecoder::default(),
            next_opaque: 1,
        })
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
    /// Panics on anything else (closed connection, timeout, bad bytes).
    pub fn request(&mut self, mut command: RemotingCommand) -> RemotingCommand {
        let code = command.code;
        let opaque = self.send(&mut command).unwrap();
        let deadline = Instant::now() + Duration::from_millis(ANSWER_TIMEOUT_MS);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.read_outcome(left) {
                // A server-initiated request may carry the same opaque; an
                // answer without the response flag is never taken (and the
                // wait times out).
                Outcome::Response(response)
                    if response.opaque == opaque && response.is_response() =>
                {
                    return response;
                }
                Outcome::Response(_) => continue, // a server-initiated request
                other => panic!("request code {code}: expected a response, got {other:?}"),
            }
        }
    }

    /// The next frame, or `None` once the server closed the connection.
    /// Panics on anything else (timeout, bad bytes).
    pub fn recv(&mut self) -> Option<RemotingCommand> {
        match self.read_outcome(Duration::from_millis(ANSWER_TIMEOUT_MS)) {
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
