//! The per-connection tasks: a reader that decodes frames and spawns one
//! task per request, and a writer that drains the outgoing queue in batches.

use std::cell::RefCell;
use std::future::poll_fn;
use std::io;
use std::pin::Pin;
use std::rc::Rc;
use std::task::Poll;

use bytes::BytesMut;
use ferrocket_protocol::{FrameDecoder, ProtocolError};

use super::read_buf::ReadBuf;
use ferrocket_tls::MaybeTls;
use futures_lite::{AsyncRead, AsyncWrite};
use glommio::net::TcpStream;

use super::connection::{Connection, Phase, WriteBatch, WriterTurn};
use super::RequestHandler;

/// Smallest read attempted; a frame larger than what is buffered grows the
/// read up to [`READ_BYTES_MAX`].
pub const READ_CHUNK_BYTES: usize = 16 * 1024;
/// Largest read attempted for small frames: a read that fills its chunk
/// doubles the next one up to this, so a busy pipelined connection is
/// drained in few reads (and its requests dispatched in one burst, which
/// lets the appender batch them), while an idle one keeps a small buffer.
pub const READ_CHUNK_BYTES_BUSY_MAX: usize = 256 * 1024;
/// Largest single read, so a client announcing a huge frame makes us grow
/// the buffer only as its bytes actually arrive.
pub const READ_BYTES_MAX: usize = 1024 * 1024;
/// Most bytes of small frames the writer copies together into one write.
pub const WRITE_BATCH_BYTES_MAX: usize = 256 * 1024;
/// Requests dispatched back to back before the reader yields to other tasks.
pub const DISPATCH_BURST_MAX: usize = 64;
/// A write buffer larger than this is freed when the writer goes idle, so
/// an idle connection holds at most this much for writing.
pub const WRITE_BUF_IDLE_BYTES_MAX: usize = 4 * 1024;

type Stream = Rc<RefCell<MaybeTls<TcpStream>>>;

/// Why the reader stopped.
enum ReadEnd {
    /// Server shutdown or an explicit close.
    Stopped,
    /// End of stream, I/O error or bad input: the connection is closed.
    Failed,
}

/// Runs one connection to its end, then reports it closed to the handler.
pub(crate) async fn run_connection<H: RequestHandler>(
    stream: MaybeTls<TcpStream>,
    conn: Rc<Connection>,
    handler: Rc<H>,
    frame_bytes_max: usize,
) {
    let stream: Stream = Rc::new(RefCell::new(stream));
    let writer = glommio::spawn_local(write_loop(conn.clone(), stream.clone()));
    let end = read_loop(&conn, &stream, &handler, frame_bytes_max).await;
    match end {
        ReadEnd::Stopped if conn.phase() == Phase::Draining => {
            // Answer what is in flight, flush, then close.
            poll_fn(|cx| conn.poll_idle(cx)).await;
            conn.finish();
        }
        _ => conn.close(),
    }
    writer.await;
    conn.close();
    drop(stream);
    handler.on_close(&conn);
    tracing::debug!(conn = conn.id(), peer = %conn.peer_addr(), "connection closed");
}

async fn read_loop<H: RequestHandler>(
    conn: &Rc<Connection>,
    stream: &Stream,
    handler: &Rc<H>,
    frame_bytes_max: usize,
) -> ReadEnd {
    let decoder = FrameDecoder::new(frame_bytes_max);
    let mut buf = ReadBuf::new(READ_CHUNK_BYTES);
    let mut chunk = READ_CHUNK_BYTES;
    loop {
        if let Err(end) = dispatch_buffered(conn, handler, &decoder, &mut buf).await {
            return end;
        }
        conn.watch.partial_frame(!buf.pending().is_empty());
        let missing = match decoder.missing_bytes(buf.pending()) {
            Ok(missing) => missing,
            Err(e) => return bad_frame(conn, &e),
        };
        let want = missing.clamp(chunk, READ_BYTES_MAX);
        match read_some(conn, stream, &mut buf, want).await {
            None => return ReadEnd::Stopped,
            Some(Ok((0, _))) => {
                tracing::debug!(peer = %conn.peer_addr(), "peer closed the connection");
                return ReadEnd::Failed;
            }
            Some(Ok((count, spare_len))) => {
                conn.watch.moved();
                buf.filled(count);
                chunk = next_chunk(chunk, count, spare_len);
            }
            Some(Err(e)) => {
                tracing::debug!(peer = %conn.peer_addr(), "read failed: {e}");
                return ReadEnd::Failed;
            }
        }
    }
}

/// Delivers every whole frame in `buf`: responses to their waiters,
/// requests to the handler (yielding after each burst).
async fn dispatch_buffered<H: RequestHandler>(
    conn: &Rc<Connection>,
    handler: &Rc<H>,
    decoder: &FrameDecoder,
    buf: &mut ReadBuf,
) -> Result<(), ReadEnd> {
    let mut burst = 0;
    loop {
        let command = match buf.next_frame(decoder) {
            Ok(Some(command)) => command,
            Ok(None) => return Ok(()),
            Err(e) => return Err(bad_frame(conn, &e)),
        };
        // A frame came out whole: any partial frame now is a new one.
        conn.watch.partial_frame(false);
        if command.is_response() {
            conn.deliver_response(command);
            continue;
        }
        if !poll_fn(|cx| conn.poll_dispatch_room(cx)).await {
            return Err(ReadEnd::Stopped);
        }
        dispatch(conn, handler, command);
        burst += 1;
        if burst >= DISPATCH_BURST_MAX {
            burst = 0;
            glommio::yield_if_needed().await;
        }
    }
}

fn bad_frame(conn: &Connection, error: &ProtocolError) -> ReadEnd {
    tracing::warn!(peer = %conn.peer_addr(), "closing connection on bad frame: {error}");
    ReadEnd::Failed
}

/// Reads up to `want` bytes into `buf`: the count read and the room there
/// was, or `None` once the connection no longer reads.
async fn read_some(
    conn: &Connection,
    stream: &Stream,
    buf: &mut ReadBuf,
    want: usize,
) -> Option<io::Result<(usize, usize)>> {
    poll_fn(|cx| {
        if conn.phase() != Phase::Open {
            return Poll::Ready(None);
        }
        conn.set_reader_waker(cx);
        let mut socket = stream.borrow_mut();
        let spare = buf.spare(want);
        let spare_len = spare.len();
        let polled = Pin::new(&mut *socket).poll_read(cx, spare);
        if polled.is_pending() {
            // Waiting for the peer: an empty buffer goes back to the pool.
            buf.release_if_empty();
        }
        polled.map(|read| Some(read.map(|count| (count, spare_len))))
    })
    .await
}

/// The next read's size: doubled after a read that filled its room, halved
/// after one that used under a quarter of it.
fn next_chunk(chunk: usize, count: usize, spare_len: usize) -> usize {
    if count == spare_len {
        (chunk * 2).min(READ_CHUNK_BYTES_BUSY_MAX)
    } else if count < chunk / 4 {
        (chunk / 2).max(READ_CHUNK_BYTES)
    } else {
        chunk
    }
}

/// Decrements the connection's in-flight count however the request task
/// ends (answered, or dropped with its executor).
struct InflightGuard {
    conn: Rc<Connection>,
    opaque: i32,
    frame_bytes: usize,
    done: bool,
}

impl Drop for InflightGuard {
    fn drop(&mut self) {
        if !self.done {
            self.conn
                .request_finished(None, self.opaque, self.frame_bytes);
        }
    }
}

/// Header bytes counted for every request in flight (its extFields are
/// bounded by the frame limit; the body is what can be large).
const HEADER_ESTIMATE_BYTES: usize = 512;

/// Bytes a request holds while it is handled: its body and a fixed header
/// estimate, so the hot path does not walk its extFields.
fn frame_bytes(request: &ferrocket_protocol::RemotingCommand) -> usize {
    request.body.len() + HEADER_ESTIMATE_BYTES
}

fn dispatch<H: RequestHandler>(
    conn: &Rc<Connection>,
    handler: &Rc<H>,
    request: ferrocket_protocol::RemotingCommand,
) {
    let opaque = request.opaque;
    let oneway = request.is_oneway();
    let code = request.code;
    let frame_bytes = frame_bytes(&request);
    conn.request_started(frame_bytes);
    let mut guard = InflightGuard {
        conn: conn.clone(),
        opaque,
        frame_bytes,
        done: false,
    };
    let future = handler.clone().handle(conn.clone(), request);
    glommio::spawn_local(async move {
        let response = future.await;
        guard.done = true;
        let response = match response {
            Some(_) if oneway => {
                tracing::trace!(code, "response to a oneway request dropped");
                None
            }
            other => other,
        };
        guard.conn.request_finished(response, opaque, frame_bytes);
    })
    .detach();
}

async fn write_loop(conn: Rc<Connection>, stream: Stream) {
    // Grows with the batches it copies; freed when idle if it grew large.
    let mut buf = BytesMut::new();
    loop {
        let turn = poll_fn(|cx| {
            let turn = conn.poll_writer_turn(cx);
            if turn.is_pending() && buf.capacity() > WRITE_BUF_IDLE_BYTES_MAX {
                buf = BytesMut::new();
            }
            turn
        });
        match turn.await {
            WriterTurn::Exit => return,
            WriterTurn::Write => {}
        }
        buf.clear();
        let result = match conn.take_write_batch(&mut buf, WRITE_BATCH_BYTES_MAX) {
            WriteBatch::Coalesced => write_all(&conn, &stream, &buf).await,
            WriteBatch::Large(chunk) => write_all(&conn, &stream, &chunk).await,
        };
        conn.write_done();
        if let Err(e) = result {
            if !conn.is_closed() {
                tracing::debug!(peer = %conn.peer_addr(), "write failed: {e}");
                conn.close();
            }
            return;
        }
    }
}

/// Writes all of `data`, giving up when the connection is closed meanwhile.
async fn write_all(conn: &Connection, stream: &Stream, mut data: &[u8]) -> io::Result<()> {
    while !data.is_empty() {
        let written = poll_writer(conn, stream, |socket, cx| socket.poll_write(cx, data)).await?;
        conn.watch.moved();
        if written == 0 {
            return Err(io::Error::new(
                io::ErrorKind::WriteZero,
                "socket wrote 0 bytes",
            ));
        }
        data = &data[written..];
    }
    if stream.borrow().is_tls() {
        // Pushes out the TLS records still held after the last write.
        poll_writer(conn, stream, |socket, cx| socket.poll_flush(cx)).await?;
    }
    Ok(())
}

/// Polls the socket's write side with `op` until it is ready, giving up
/// when the connection is closed meanwhile; a pending poll counts as a
/// blocked write.
async fn poll_writer<T>(
    conn: &Connection,
    stream: &Stream,
    mut op: impl FnMut(
        Pin<&mut MaybeTls<TcpStream>>,
        &mut std::task::Context<'_>,
    ) -> Poll<io::Result<T>>,
) -> io::Result<T> {
    poll_fn(|cx| {
        if conn.is_closed() {
            return Poll::Ready(Err(io::Error::new(
                io::ErrorKind::NotConnected,
                "connection closed",
            )));
        }
        conn.set_writer_waker(cx);
        let mut socket = stream.borrow_mut();
        let polled = op(Pin::new(&mut *socket), cx);
        conn.watch.write_blocked(polled.is_pending());
        polled
    })
    .await
}
