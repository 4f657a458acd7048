//! The lean producer driver: per connection one writer task and one reader
//! task, no per-request task, channel or timer.
//!
//! The writer takes free in-flight slots (at most `--inflight` per
//! connection), encodes one request per slot straight into a buffer, and
//! writes all of them with one system call. The slot number travels in the
//! low 16 bits of the opaque; the slot remembers the request's intended
//! send time. The reader splits the byte stream into responses, looks the
//! slot up by opaque, records the latency, and frees the slot. Requests
//! still unanswered when the run stops (after `--timeout-ms`) count as
//! timeouts.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::BytesMut;
use ferrocket_protocol::codes::response_code;
use ferrocket_protocol::limits::FRAME_BYTES_MAX;
use ferrocket_protocol::{FrameDecoder, ProtocolError, SerializeType};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::Notify;
use tokio::task::JoinHandle;

use crate::control::Control;
use crate::error::BenchError;
use crate::message::{ns_since_anchor, SendFactory};
use crate::pacing::Pacer;
use crate::recorder::{ErrorKind, Recorder, Shard};

/// A connection's read side, plaintext or TLS.
type ReadHalf = Box<dyn AsyncRead + Send + Sync + Unpin>;
/// A connection's write side, plaintext or TLS.
type WriteHalf = Box<dyn AsyncWrite + Send + Sync + Unpin>;

/// Bytes gathered before the writer writes, at most.
const WRITE_CHUNK_BYTES: usize = 256 * 1024;
/// Read buffer growth per read.
const READ_CHUNK_BYTES: usize = 256 * 1024;
/// How often an idle reader checks whether the run is over.
const READER_POLL_MS: u64 = 20;
/// Bits of the opaque that hold the slot.
const SLOT_BITS: u32 = 16;

/// In-flight bookkeeping of one connection.
struct Slots {
    /// Intended send time (ns since the anchor) of the request in each slot.
    intended_ns: Vec<AtomicU64>,
    free: Mutex<Vec<u16>>,
    freed: Notify,
    writer_done: AtomicBool,
    closed: AtomicBool,
    /// The finished writer's half of the socket, kept open until the reader
    /// is done: dropping it sends FIN, and a server may close the
    /// connection before answering what is still in flight.
    parked_writer: Mutex<Option<WriteHalf>>,
}

impl Slots {
    fn new(count: usize) -> Self {
        assert!(
            (1..=1 << SLOT_BITS).contains(&count),
            "slot count {count} out of range"
        );
        Slots {
            intended_ns: (0..count).map(|_| AtomicU64::new(0)).collect(),
            free: Mutex::new((0..count as u32).rev().map(|s| s as u16).collect()),
            freed: Notify::new(),
            writer_done: AtomicBool::new(false),
            closed: AtomicBool::new(false),
            parked_writer: Mutex::new(None),
        }
    }

    fn lock_free(&self) -> std::sync::MutexGuard<'_, Vec<u16>> {
        self.free.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Takes up to `max` free slots.
    fn take(&self, max: usize, out: &mut Vec<u16>) {
        let mut free = self.lock_free();
        let keep = free.len().saturating_sub(max);
        out.extend(free.drain(keep..));
    }

    fn give_back(&self, slots: &[u16]) {
        if slots.is_empty() {
            return;
        }
        self.lock_free().extend_from_slice(slots);
        self.freed.notify_one();
    }

    fn outstanding(&self) -> usize {
        self.intended_ns.len() - self.lock_free().len()
    }
}

/// Builds the opaque of a request: a sequence number above the slot.
pub fn opaque_for(sequence: u32, slot: u16) -> i32 {
    ((sequence << SLOT_BITS) | u32::from(slot)) as i32
}

/// The slot an opaque names.
pub fn slot_of(opaque: i32) -> usize {
    (opaque as u32 & ((1 << SLOT_BITS) - 1)) as usize
}

/// What the raw producers of one window share.
#[derive(Debug, Clone)]
pub struct RawPlan {
    pub factory: Arc<SendFactory>,
    pub inflight: usize,
    pub oneway: bool,
    pub serialize_type: SerializeType,
    /// Signs every request (ACL 1.0), as the client connections do.
    pub credentials: Option<ferrocket_client::Credentials>,
    /// TLS, as the client connections use it; `None`: plaintext.
    pub tls: Option<Arc<ferrocket_tls::rustls::ClientConfig>>,
    pub timeout: Duration,
    pub pacer: Option<Arc<Pacer>>,
}

/// Opens `per_broker` connections to each broker of `queues` and starts a
/// writer and a reader on each; one shard per connection.
pub async fn spawn_raw_producers(
    brokers: &BTreeMap<String, String>,
    queues: &BTreeMap<String, Vec<i32>>,
    per_broker: usize,
    plan: &RawPlan,
    control: &Arc<Control>,
    recorder: &Recorder,
) -> Result<Vec<JoinHandle<()>>, BenchError> {
    let mut tasks = Vec::new();
    let mut index = 0usize;
    for (broker, queue_ids) in queues {
        let Some(addr) = brokers.get(broker) else {
            continue;
        };
        for _ in 0..per_broker {
            let (reader, writer) = tokio::time::timeout(plan.timeout, connect(addr, &plan.tls))
                .await
                .map_err(|_| BenchError::Setup(format!("connecting to {addr} timed out")))?
                .map_err(|e| BenchError::io(addr.clone(), e))?;
            let slots = Arc::new(Slots::new(if plan.oneway { 1 } else { plan.inflight }));
            let shard = recorder.shard();
            tasks.push(tokio::spawn(write_loop(
                writer,
                Arc::new(queue_ids.clone()),
                index,
                plan.clone(),
                slots.clone(),
                control.clone(),
                shard.clone(),
            )));
            if !plan.oneway {
                tasks.push(tokio::spawn(read_loop(
                    reader,
                    plan.factory.clone(),
                    plan.timeout,
                    slots,
                    control.clone(),
                    shard,
                )));
            }
            index += 1;
        }
    }
    Ok(tasks)
}

/// Opens a connection (over TLS with `tls`), split in halves.
async fn connect(
    addr: &str,
    tls: &Option<Arc<ferrocket_tls::rustls::ClientConfig>>,
) -> std::io::Result<(ReadHalf, WriteHalf)> {
    let stream = TcpStream::connect(addr).await?;
    let _ = stream.set_nodelay(true);
    let Some(tls) = tls else {
        let (reader, writer) = stream.into_split();
        return Ok((Box::new(reader), Box::new(writer)));
    };
    let name = ferrocket_tls::server_name(stream.peer_addr()?);
    let stream = tokio_rustls::TlsConnector::from(tls.clone())
        .connect(name, stream)
        .await?;
    let (reader, writer) = tokio::io::split(stream);
    Ok((Box::new(reader), Box::new(writer)))
}

/// How filling one batch of requests ended.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Fill {
    /// More requests may follow.
    Open,
    /// No more requests will be sent (stopped, budget spent).
    Finished,
    /// A request could not be built: the writer gives up.
    Failed,
}

/// The writer task of one connection.
struct RawWriter {
    writer: WriteHalf,
    queue_ids: Arc<Vec<i32>>,
    next_queue: usize,
    sequence: u32,
    plan: RawPlan,
    slots: Arc<Slots>,
    control: Arc<Control>,
    shard: Arc<Shard>,
    msgs: u64,
    bytes: u64,
    buf: BytesMut,
    taken: Vec<u16>,
    /// Oneway: intended times of the frames in `buf`, recorded once written.
    pending_oneway: Vec<Instant>,
}

async fn write_loop(
    writer: WriteHalf,
    queue_ids: Arc<Vec<i32>>,
    first_queue: usize,
    plan: RawPlan,
    slots: Arc<Slots>,
    control: Arc<Control>,
    shard: Arc<Shard>,
) {
    let mut raw = RawWriter {
        writer,
        queue_ids,
        next_queue: first_queue,
        sequence: 0,
        msgs: plan.factory.per_request() as u64,
        bytes: plan.factory.body_bytes_per_request(),
        buf: BytesMut::with_capacity(WRITE_CHUNK_BYTES),
        taken: Vec::with_capacity(plan.inflight),
        pending_oneway: Vec::new(),
        plan,
        slots,
        control,
        shard,
    };
    raw.run().await;
    let RawWriter { writer, slots, .. } = raw;
    *slots
        .parked_writer
        .lock()
        .unwrap_or_else(|p| p.into_inner()) = Some(writer);
    slots.writer_done.store(true, Ordering::Relaxed);
    slots.freed.notify_one();
}

impl RawWriter {
    async fn run(&mut self) {
        while !self.control.producers_stopped() && !self.slots.closed.load(Ordering::Relaxed) {
            if !self.plan.oneway && !self.take_slots().await {
                continue;
            }
            let fill = self.fill_batch().await;
            if fill == Fill::Failed {
                return;
            }
            if self.buf.is_empty() {
                if fill == Fill::Finished {
                    return;
                }
                continue;
            }
            if !self.flush().await || fill == Fill::Finished {
                return;
            }
        }
    }

    /// Takes free slots; false (after waiting a little for one to be freed)
    /// when there are none.
    async fn take_slots(&mut self) -> bool {
        let freed = self.slots.freed.notified();
        self.slots.take(self.plan.inflight, &mut self.taken);
        if !self.taken.is_empty() {
            return true;
        }
        tokio::select! {
            _ = freed => {}
            _ = tokio::time::sleep(Duration::from_millis(READER_POLL_MS)) => {}
        }
        false
    }

    /// Encodes requests into the buffer, one per taken slot (oneway: up to
    /// `--inflight`), while the pacer lets them go and the chunk has room.
    async fn fill_batch(&mut self) -> Fill {
        let batch = if self.plan.oneway {
            self.plan.inflight.max(1)
        } else {
            self.taken.len()
        };
        let mut used = 0usize;
        let fill = loop {
            if used >= batch {
                break Fill::Open;
            }
            let intended = match self.intended_time(used).await {
                Ok(at) => at,
                Err(fill) => break fill,
            };
            if self.control.producers_stopped() || !self.control.claim(self.msgs) {
                break Fill::Finished;
            }
            if !self.encode(intended, used) {
                return Fill::Failed;
            }
            used += 1;
            if self.buf.len() >= WRITE_CHUNK_BYTES {
                break Fill::Open;
            }
        };
        if !self.plan.oneway {
            // Slots prepared but not used go back.
            self.slots.give_back(&self.taken[used..]);
            self.taken.clear();
        }
        fill
    }

    /// When the next request is meant to go: paced, waiting for the first
    /// request of a batch only and taking the rest if due.
    async fn intended_time(&self, used: usize) -> Result<Instant, Fill> {
        match &self.plan.pacer {
            Some(pacer) if used == 0 => pacer.next().await.ok_or(Fill::Finished),
            Some(pacer) => pacer.try_next().ok_or(Fill::Open),
            None => Ok(Instant::now()),
        }
    }

    /// Builds the next request into the buffer, in taken slot `used`
    /// (oneway: none); false, counted as an error, when it cannot be built.
    fn encode(&mut self, intended: Instant, used: usize) -> bool {
        let queue_id = self.queue_ids[self.next_queue % self.queue_ids.len()];
        self.next_queue = self.next_queue.wrapping_add(1);
        let mut request = match self.plan.factory.build(queue_id, intended) {
            Ok(request) => request,
            Err(_) => {
                self.shard.lock().send_failed(&ErrorKind::Protocol);
                return false;
            }
        };
        request.serialize_type = self.plan.serialize_type;
        if let Some(credentials) = &self.plan.credentials {
            let (key, secret) = (&credentials.access_key, &credentials.secret_key);
            ferrocket_acl::sign_request(&mut request, key, secret);
        }
        if self.plan.oneway {
            request.mark_oneway();
            request.opaque = self.sequence as i32;
            self.pending_oneway.push(intended);
        } else {
            let slot = self.taken[used];
            self.slots.intended_ns[usize::from(slot)]
                .store(ns_since_anchor(intended), Ordering::Relaxed);
            request.opaque = opaque_for(self.sequence, slot);
        }
        self.sequence = self.sequence.wrapping_add(1);
        request.encode(&mut self.buf);
        true
    }

    /// Writes the buffer; oneway requests count as sent once written. False
    /// when the connection failed.
    async fn flush(&mut self) -> bool {
        // TLS holds its last records until flushed (a no-op in plaintext).
        let written = match self.writer.write_all(&self.buf).await {
            Ok(()) => self.writer.flush().await,
            Err(e) => Err(e),
        };
        if written.is_err() {
            self.slots.closed.store(true, Ordering::Relaxed);
            self.shard.lock().send_failed(&ErrorKind::Io);
            return false;
        }
        self.buf.clear();
        if self.plan.oneway {
            let now = Instant::now();
            let mut counts = self.shard.lock();
            for intended in self.pending_oneway.drain(..) {
                let latency = now.saturating_duration_since(intended).as_nanos() as u64;
                counts.sent(latency, self.msgs, self.bytes);
            }
        }
        true
    }
}

async fn read_loop(
    mut reader: ReadHalf,
    factory: Arc<SendFactory>,
    timeout: Duration,
    slots: Arc<Slots>,
    control: Arc<Control>,
    shard: Arc<Shard>,
) {
    let per_request = (
        factory.per_request() as u64,
        factory.body_bytes_per_request(),
    );
    let decoder = FrameDecoder::new(FRAME_BYTES_MAX);
    let mut buf = BytesMut::with_capacity(READ_CHUNK_BYTES);
    let mut done_since: Option<Instant> = None;
    let mut freed = Vec::new();
    loop {
        let decoded = record_responses(&decoder, &mut buf, &slots, &shard, per_request, &mut freed);
        if decoded.is_err() {
            shard.lock().send_failed(&ErrorKind::Protocol);
            slots.closed.store(true, Ordering::Relaxed);
            return;
        }
        slots.give_back(&freed);
        freed.clear();
        if control.producers_stopped()
            && slots.writer_done.load(Ordering::Relaxed)
            && settled(&slots, &shard, timeout, &mut done_since)
        {
            return;
        }
        buf.reserve(READ_CHUNK_BYTES);
        let read = tokio::time::timeout(
            Duration::from_millis(READER_POLL_MS),
            reader.read_buf(&mut buf),
        );
        match read.await {
            Err(_) => {}
            Ok(Ok(0)) | Ok(Err(_)) => {
                slots.closed.store(true, Ordering::Relaxed);
                fail_requests(&shard, slots.outstanding(), &ErrorKind::Closed);
                return;
            }
            Ok(Ok(_)) => {}
        }
    }
}

/// Records every whole response in `buf` against its slot, collecting the
/// slots to free; `per_request` is messages and body bytes per request.
fn record_responses(
    decoder: &FrameDecoder,
    buf: &mut BytesMut,
    slots: &Slots,
    shard: &Shard,
    per_request: (u64, u64),
    freed: &mut Vec<u16>,
) -> Result<(), ProtocolError> {
    let (msgs, bytes) = per_request;
    while let Some(response) = decoder.next_frame(buf)? {
        if !response.is_response() {
            continue; // a request from the server: not answered
        }
        let slot = slot_of(response.opaque);
        let Some(cell) = slots.intended_ns.get(slot) else {
            continue;
        };
        let now_ns = ns_since_anchor(Instant::now());
        let latency = now_ns.saturating_sub(cell.load(Ordering::Relaxed));
        let mut counts = shard.lock();
        if response.code == response_code::SUCCESS {
            counts.sent(latency, msgs, bytes);
        } else {
            counts.send_failed(&ErrorKind::Code(response.code));
        }
        drop(counts);
        freed.push(slot as u16);
    }
    Ok(())
}

/// After the writer is done: true once nothing is outstanding, or once the
/// rest has timed out (counted as timeouts).
fn settled(
    slots: &Slots,
    shard: &Shard,
    timeout: Duration,
    done_since: &mut Option<Instant>,
) -> bool {
    let outstanding = slots.outstanding();
    let since = *done_since.get_or_insert_with(Instant::now);
    if outstanding == 0 {
        return true;
    }
    if since.elapsed() >= timeout {
        fail_requests(shard, outstanding, &ErrorKind::Timeout);
        return true;
    }
    false
}

/// Counts `count` requests as failed with `kind`.
fn fail_requests(shard: &Shard, count: usize, kind: &ErrorKind) {
    let mut counts = shard.lock();
    for _ in 0..count {
        counts.send_failed(kind);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opaques_carry_the_slot_in_their_low_bits() {
        for (sequence, slot) in [(0u32, 0u16), (1, 5), (70_000, 65_535), (u32::MAX, 1)] {
            assert_eq!(slot_of(opaque_for(sequence, slot)), usize::from(slot));
        }
        assert_ne!(opaque_for(1, 3), opaque_for(2, 3));
    }

    #[test]
    fn slots_are_taken_and_returned() {
        let slots = Slots::new(4);
        let mut taken = Vec::new();
        slots.take(3, &mut taken);
        assert_eq!(taken.len(), 3);
        assert_eq!(slots.outstanding(), 3);
        let mut more = Vec::new();
        slots.take(3, &mut more);
        assert_eq!(more.len(), 1);
        assert_eq!(slots.outstanding(), 4);
        let mut all: Vec<u16> = taken.iter().chain(more.iter()).copied().collect();
        all.sort_unstable();
        assert_eq!(all, vec![0, 1, 2, 3]);
        slots.give_back(&taken);
        assert_eq!(slots.outstanding(), 1);
    }
}
