//! One client connection as server code sees it: identity, the outgoing
//! queue its writer drains, and server-to-client requests awaiting answers.
//!
//! Everything here lives on the executor that accepted the connection; the
//! state is a `RefCell` never borrowed across an `.await`.

use std::cell::{Cell, RefCell};
use std::collections::{HashMap, VecDeque};
use std::future::poll_fn;
use std::net::SocketAddr;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use ferrocket_protocol::codes::response_code;
use ferrocket_protocol::frame::{FLAG_ONEWAY, FLAG_RESPONSE};
use ferrocket_protocol::limits::FRAME_BYTES_MAX;
use ferrocket_protocol::{FrameDecoder, RemotingCommand};

use super::client_gone::ClientGone;
use super::ServerLimits;

mod in_process;

/// Bodies at least this large are queued as their own chunk and written
/// without being copied into the coalescing buffer.
pub(crate) const BODY_ZERO_COPY_BYTES_MIN: usize = 16 * 1024;

/// Why a send or a server-to-client request failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConnectionError {
    #[error("connection {conn_id} to {peer} is closed")]
    Closed { conn_id: u64, peer: SocketAddr },
    #[error("no response from {peer} within {timeout_ms} ms")]
    Timeout { peer: SocketAddr, timeout_ms: u64 },
    #[error(
        "write queue to {peer} holds {queued_bytes} bytes, at or over the limit of {max_bytes}"
    )]
    WriteQueueFull {
        peer: SocketAddr,
        queued_bytes: usize,
        max_bytes: usize,
    },
    #[error("frame of {frame_bytes} bytes exceeds the limit of {max_bytes} bytes")]
    FrameTooLarge {
        frame_bytes: usize,
        max_bytes: usize,
    },
}

/// Where a connection is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    /// Reading and answering requests.
    Open,
    /// Server stopping: no more reads; in-flight requests still answered.
    Draining,
    /// The writer flushes what is queued, then the socket closes.
    Finishing,
    /// Closed: nothing more is read or written.
    Closed,
}

/// What the writer task should do next.
pub(crate) enum WriterTurn {
    Write,
    Exit,
}

/// One chunk of output for the writer.
pub(crate) enum WriteBatch {
    /// Small frames copied together into the caller's buffer.
    Coalesced,
    /// One large chunk (a big body), written as is.
    Large(Bytes),
}

/// A server-to-client request waiting for its response.
#[derive(Default)]
struct ReplySlot {
    value: RefCell<Option<Result<RemotingCommand, ConnectionError>>>,
    waker: Cell<Option<Waker>>,
}

impl ReplySlot {
    fn complete(&self, value: Result<RemotingCommand, ConnectionError>) {
        *self.value.borrow_mut() = Some(value);
        if let Some(waker) = self.waker.take() {
            waker.wake();
        }
    }
}

struct State {
    phase: Phase,
    out: VecDeque<Bytes>,
    out_bytes: usize,
    /// Bytes taken by the writer and not yet written (still held).
    writing_bytes: usize,
    writer_waker: Option<Waker>,
    reader_waker: Option<Waker>,
    inflight: usize,
    /// Bytes of the request frames being handled.
    inflight_bytes: usize,
    pending: HashMap<i32, Rc<ReplySlot>>,
    next_opaque: i32,
}

/// A client connection. Handlers get an `Rc<Connection>` with every request
/// and may keep it (to send requests to that client later).
pub struct Connection {
    id: u64,
    peer_addr: SocketAddr,
    local_addr: SocketAddr,
    limits: ServerLimits,
    state: RefCell<State>,
    /// Made when a handler first asks (a long poll): set on close.
    gone: std::cell::OnceCell<ClientGone>,
    /// Last traffic, a partial frame, a blocked writer (for the sweeper).
    pub(crate) watch: super::watch::Watch,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("id", &self.id)
            .field("peer_addr", &self.peer_addr)
            .field("local_addr", &self.local_addr)
            .field("phase", &self.state.borrow().phase)
            .finish()
    }
}

pub(crate) use super::conn_id::next_conn_id;
pub use super::conn_id::{shard_of_conn_id, CONN_ID_SHARD_SHIFT};

impl Connection {
    pub(crate) fn new(
        id: u64,
        peer_addr: SocketAddr,
        local_addr: SocketAddr,
        limits: ServerLimits,
    ) -> Self {
        Self {
            id,
            peer_addr,
            local_addr,
            limits,
            state: RefCell::new(State {
                phase: Phase::Open,
                out: VecDeque::new(),
                out_bytes: 0,
                writing_bytes: 0,
                writer_waker: None,
                reader_waker: None,
                inflight: 0,
                inflight_bytes: 0,
                pending: HashMap::new(),
                next_opaque: 1,
            }),
            gone: std::cell::OnceCell::new(),
            watch: super::watch::Watch::new(),
        }
    }

    /// A connection with no socket behind it, for tests of request handlers:
    /// whatever is sent to it can be read back with [`Connection::take_sent`].
    pub fn detached(id: u64, peer_addr: SocketAddr, local_addr: SocketAddr) -> Rc<Self> {
        Rc::new(Self::new(
            id,
            peer_addr,
            local_addr,
            ServerLimits::default(),
        ))
    }

    /// Unique across all shards of the process; see [`shard_of_conn_id`].
    pub fn id(&self) -> u64 {
        self.id
    }

    pub fn shard_index(&self) -> u16 {
        shard_of_conn_id(self.id)
    }

    pub fn peer_addr(&self) -> SocketAddr {
        self.peer_addr
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    pub fn is_closed(&self) -> bool {
        self.state.borrow().phase == Phase::Closed
    }

    /// Queues any command for the client exactly as given (a response
    /// answered later, outside the handler's future, for example).
    pub fn send(&self, command: RemotingCommand) -> Result<(), ConnectionError> {
        let (head, body) = encode_chunks(command)?;
        let mut state = self.state.borrow_mut();
        if matches!(state.phase, Phase::Finishing | Phase::Closed) {
            return Err(self.closed_error());
        }
        push_chunks(&mut state, head, body);
        Ok(())
    }

    /// Sends a request the client must not answer (flag bit 1 set).
    pub fn send_oneway(&self, mut command: RemotingCommand) -> Result<(), ConnectionError> {
        command.flag = (command.flag & !FLAG_RESPONSE) | FLAG_ONEWAY;
        self.check_queue_room()?;
        command.opaque = self.allocate_opaque();
        self.send(command)
    }

    /// Sends a request to the client and waits up to `timeout` for its
    /// response (matched by opaque; the client's response never reaches the
    /// request handler).
    pub async fn request(
        &self,
        mut command: RemotingCommand,
        timeout: Duration,
    ) -> Result<RemotingCommand, ConnectionError> {
        command.flag &= !(FLAG_RESPONSE | FLAG_ONEWAY);
        self.check_queue_room()?;
        let opaque = self.allocate_opaque();
        command.opaque = opaque;
        let slot = Rc::new(ReplySlot::default());
        self.state.borrow_mut().pending.insert(opaque, slot.clone());
        if let Err(e) = self.send(command) {
            self.state.borrow_mut().pending.remove(&opaque);
            return Err(e);
        }
        let reply = poll_fn(|cx| match slot.value.borrow_mut().take() {
            Some(value) => Poll::Ready(Some(value)),
            None => {
                slot.waker.set(Some(cx.waker().clone()));
                Poll::Pending
            }
        });
        let expired = async {
            glommio::timer::sleep(timeout).await;
            None
        };
        match futures_lite::future::or(reply, expired).await {
            Some(result) => result,
            None => {
                self.state.borrow_mut().pending.remove(&opaque);
                Err(ConnectionError::Timeout {
                    peer: self.peer_addr,
                    timeout_ms: timeout.as_millis() as u64,
                })
            }
        }
    }

    /// The flag that says this connection's client is gone.
    pub fn client_gone(&self) -> ClientGone {
        let gone = self.gone.get_or_init(ClientGone::default).clone();
        if self.is_closed() {
            gone.set();
        }
        gone
    }

    /// Closes the connection now: queued output is dropped, waiting requests
    /// fail with [`ConnectionError::Closed`], and the socket closes once its
    /// reader and writer notice (on their next poll).
    pub fn close(&self) {
        let (pending, reader, writer) = {
            let mut state = self.state.borrow_mut();
            if state.phase == Phase::Closed {
                return;
            }
            state.phase = Phase::Closed;
            state.out.clear();
            super::budget::sub(state.out_bytes + state.writing_bytes);
            state.out_bytes = 0;
            state.writing_bytes = 0;
            (
                std::mem::take(&mut state.pending),
                state.reader_waker.take(),
                state.writer_waker.take(),
            )
        };
        for slot in pending.into_values() {
            slot.complete(Err(self.closed_error()));
        }
        if let Some(gone) = self.gone.get() {
            gone.set();
        }
        wake(reader);
        wake(writer);
    }

    /// Everything queued so far, decoded, for tests on a
    /// [`Connection::detached`] connection. Clears the queue.
    pub fn take_sent(&self) -> Vec<RemotingCommand> {
        let mut state = self.state.borrow_mut();
        let mut bytes = BytesMut::with_capacity(state.out_bytes);
        for chunk in state.out.drain(..) {
            bytes.extend_from_slice(&chunk);
        }
        super::budget::sub(state.out_bytes);
        state.out_bytes = 0;
        drop(state);
        let decoder = FrameDecoder::default();
        let mut commands = Vec::new();
        while let Ok(Some(command)) = decoder.next_frame(&mut bytes) {
            commands.push(command);
        }
        commands
    }

    /// Number of requests from this client being handled right now.
    pub fn inflight_requests(&self) -> usize {
        self.state.borrow().inflight
    }

    fn closed_error(&self) -> ConnectionError {
        ConnectionError::Closed {
            conn_id: self.id,
            peer: self.peer_addr,
        }
    }

    fn check_queue_room(&self) -> Result<(), ConnectionError> {
        let state = self.state.borrow();
        if state.out_bytes >= self.limits.write_queue_bytes_max {
            return Err(ConnectionError::WriteQueueFull {
                peer: self.peer_addr,
                queued_bytes: state.out_bytes,
                max_bytes: self.limits.write_queue_bytes_max,
            });
        }
        Ok(())
    }

    fn allocate_opaque(&self) -> i32 {
        let mut state = self.state.borrow_mut();
        loop {
            let opaque = state.next_opaque;
            state.next_opaque = opaque.wrapping_add(1);
            if !state.pending.contains_key(&opaque) {
                return opaque;
            }
        }
    }

    // ---- used by the connection loop ----

    pub(crate) fn phase(&self) -> Phase {
        self.state.borrow().phase
    }

    /// Stops reading (server shutdown); in-flight requests still finish.
    pub(crate) fn begin_drain(&self) {
        let reader = {
            let mut state = self.state.borrow_mut();
            if state.phase != Phase::Open {
                return;
            }
            state.phase = Phase::Draining;
            state.reader_waker.take()
        };
        wake(reader);
    }

    /// Lets the writer flush what is queued and then end.
    pub(crate) fn finish(&self) {
        let writer = {
            let mut state = self.state.borrow_mut();
            if state.phase == Phase::Closed {
                return;
            }
            state.phase = Phase::Finishing;
            state.writer_waker.take()
        };
        wake(writer);
    }

    pub(crate) fn set_reader_waker(&self, cx: &Context<'_>) {
        self.state.borrow_mut().reader_waker = Some(cx.waker().clone());
    }

    pub(crate) fn set_writer_waker(&self, cx: &Context<'_>) {
        self.state.borrow_mut().writer_waker = Some(cx.waker().clone());
    }

    /// Ready(true) when another request may be dispatched, Ready(false) when
    /// the reader must stop, Pending (waker kept) while at a limit.
    pub(crate) fn poll_dispatch_room(&self, cx: &Context<'_>) -> Poll<bool> {
        let mut state = self.state.borrow_mut();
        if state.phase != Phase::Open {
            return Poll::Ready(false);
        }
        if state.inflight < self.limits.inflight_requests_max
            && state.out_bytes < self.limits.write_queue_bytes_max
            && state.inflight_bytes < self.limits.inflight_bytes_max
        {
            return Poll::Ready(true);
        }
        state.reader_waker = Some(cx.waker().clone());
        Poll::Pending
    }

    /// Ready once no request is in flight or the connection is closed.
    pub(crate) fn poll_idle(&self, cx: &Context<'_>) -> Poll<()> {
        let mut state = self.state.borrow_mut();
        if state.inflight == 0 || state.phase == Phase::Closed {
            return Poll::Ready(());
        }
        state.reader_waker = Some(cx.waker().clone());
        Poll::Pending
    }

    /// A request whose frame holds `frame_bytes` is being handled.
    pub(crate) fn request_started(&self, frame_bytes: usize) {
        let mut state = self.state.borrow_mut();
        state.inflight += 1;
        state.inflight_bytes += frame_bytes;
        super::budget::add(frame_bytes);
    }

    /// Bytes queued for the writer, or taken by it and not yet written.
    pub(crate) fn queued_bytes(&self) -> usize {
        let state = self.state.borrow();
        state.out_bytes + state.writing_bytes
    }

    /// The writer is done with the batch it took (written or not).
    pub(crate) fn write_done(&self) {
        let mut state = self.state.borrow_mut();
        super::budget::sub(state.writing_bytes);
        state.writing_bytes = 0;
    }

    pub(crate) fn limits(&self) -> &ServerLimits {
        &self.limits
    }

    /// A request's handler has finished (or was dropped); `response` is sent
    /// with the request's opaque unless the request was oneway.
    pub(crate) fn request_finished(
        &self,
        response: Option<RemotingCommand>,
        opaque: i32,
        frame_bytes: usize,
    ) {
        let reader = {
            let mut state = self.state.borrow_mut();
            debug_assert!(state.inflight > 0, "request finished twice");
            debug_assert!(state.inflight_bytes >= frame_bytes);
            state.inflight = state.inflight.saturating_sub(1);
            state.inflight_bytes = state.inflight_bytes.saturating_sub(frame_bytes);
            super::budget::sub(frame_bytes);
            state.reader_waker.take()
        };
        wake(reader);
        let Some(mut response) = response else {
            return;
        };
        response.opaque = opaque;
        response.flag = (response.flag | FLAG_RESPONSE) & !FLAG_ONEWAY;
        let code = response.code;
        match self.send(response) {
            Ok(()) => {}
            Err(ConnectionError::FrameTooLarge {
                frame_bytes,
                max_bytes,
            }) => {
                tracing::warn!(peer = %self.peer_addr, code, frame_bytes, "response too large");
                let mut error = RemotingCommand::request(response_code::SYSTEM_ERROR);
                error.opaque = opaque;
                error.flag = FLAG_RESPONSE;
                error.remark = Some(format!(
                    "response of {frame_bytes} bytes exceeds the frame limit of {max_bytes} bytes"
                ));
                let _ = self.send(error);
            }
            Err(e) => tracing::debug!(peer = %self.peer_addr, code, "response dropped: {e}"),
        }
    }

    /// A response from the client: hands it to the request waiting for it.
    pub(crate) fn deliver_response(&self, response: RemotingCommand) {
        let slot = self.state.borrow_mut().pending.remove(&response.opaque);
        match slot {
            Some(slot) => slot.complete(Ok(response)),
            None => tracing::debug!(
                peer = %self.peer_addr,
                opaque = response.opaque,
                "response for no waiting request (timed out?) dropped"
            ),
        }
    }

    /// What the writer should do next; keeps its waker while there is
    /// nothing to do.
    pub(crate) fn poll_writer_turn(&self, cx: &Context<'_>) -> Poll<WriterTurn> {
        let mut state = self.state.borrow_mut();
        match state.phase {
            Phase::Closed => Poll::Ready(WriterTurn::Exit),
            _ if !state.out.is_empty() => Poll::Ready(WriterTurn::Write),
            Phase::Finishing => Poll::Ready(WriterTurn::Exit),
            Phase::Open | Phase::Draining => {
                state.writer_waker = Some(cx.waker().clone());
                Poll::Pending
            }
        }
    }

    /// Takes the next batch off the queue: small chunks appended to `buf`
    /// (up to `batch_bytes_max`), or one large chunk on its own.
    pub(crate) fn take_write_batch(
        &self,
        buf: &mut BytesMut,
        batch_bytes_max: usize,
    ) -> WriteBatch {
        let mut state = self.state.borrow_mut();
        let mut batch = WriteBatch::Coalesced;
        while let Some(front) = state.out.front() {
            let large = front.len() >= BODY_ZERO_COPY_BYTES_MIN;
            if large && buf.is_empty() {
                if let Some(chunk) = state.out.pop_front() {
                    state.out_bytes -= chunk.len();
                    state.writing_bytes += chunk.len();
                    batch = WriteBatch::Large(chunk);
                }
                break;
            }
            if large || (!buf.is_empty() && buf.len() + front.len() > batch_bytes_max) {
                break;
            }
            if let Some(chunk) = state.out.pop_front() {
                state.out_bytes -= chunk.len();
                state.writing_bytes += chunk.len();
                buf.extend_from_slice(&chunk);
            }
        }
        let reader = state.reader_waker.take();
        drop(state);
        wake(reader);
        batch
    }
}

fn wake(waker: Option<Waker>) {
    if let Some(waker) = waker {
        waker.wake();
    }
}

fn push_chunks(state: &mut State, head: Bytes, body: Option<Bytes>) {
    let bytes = head.len() + body.as_ref().map_or(0, Bytes::len);
    state.out_bytes += bytes;
    super::budget::add(bytes);
    state.out.push_back(head);
    if let Some(body) = body {
        state.out.push_back(body);
    }
    wake(state.writer_waker.take());
}

/// Encodes a command as one chunk, or as head + body when the body is large
/// (so the body is written from its own buffer, never copied).
fn encode_chunks(mut command: RemotingCommand) -> Result<(Bytes, Option<Bytes>), ConnectionError> {
    let body = if command.body.len() >= BODY_ZERO_COPY_BYTES_MIN {
        Some(std::mem::take(&mut command.body))
    } else {
        None
    };
    let mut head = BytesMut::with_capacity(command.encoded_len_max());
    command.encode(&mut head);
    let body_bytes = body.as_ref().map_or(0, Bytes::len);
    let frame_bytes = head.len() - 4 + body_bytes;
    if frame_bytes > FRAME_BYTES_MAX {
        return Err(ConnectionError::FrameTooLarge {
            frame_bytes,
            max_bytes: FRAME_BYTES_MAX,
        });
    }
    // The length prefix counts the body we left out of `encode`.
    head[0..4].copy_from_slice(&(frame_bytes as i32).to_be_bytes());
    Ok((head.freeze(), body))
}
