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
use ferrocket_protocol::{FrameDecoder, SerializeType};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;
use tokio::sync::Notify;
use tokio::task::JoinHandle;

use crate::control::Control;
use crate::error::BenchError;
use crate::message::{ns_since_anchor, SendFactory};
use crate::pacing::Pacer;
use crate::recorder::{ErrorKind, Recorder, Shard};

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
    parked_writer: Mutex<Option<OwnedWriteHalf>>,
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
            let stream = tokio::time::timeout(plan.timeout, TcpStream::connect(addr))
                .await
                .map_err(|_| BenchError::Setup(format!("connecting to {addr} timed out")))?
                .map_err(|e| BenchError::io(addr.clone(), e))?;
            let _ = stream.set_nodelay(true);
            let (reader, writer) = stream.into_split();
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

async fn write_loop(
    mut writer: OwnedWriteHalf,
    queue_ids: Arc<Vec<i32>>,
    first_queue: usize,
    plan: RawPlan,
    slots: Arc<Slots>,
    control: Arc<Control>,
    shard: Arc<Shard>,
) {
    let msgs = plan.factory.per_request() as u64;
    let bytes = plan.factory.body_bytes_per_request();
    let mut buf = BytesMut::with_capacity(WRITE_CHUNK_BYTES);
    let mut taken: Vec<u16> = Vec::with_capacity(plan.inflight);
    // Oneway: intended times of the frames in `buf`, recorded once written.
    let mut pending_oneway: Vec<Instant> = Vec::new();
    let mut next_queue = first_queue;
    let mut sequence = 0u32;
    'run: while !control.producers_stopped() && !slots.closed.load(Ordering::Relaxed) {
        if !plan.oneway {
            let freed = slots.freed.notified();
            slots.take(plan.inflight, &mut taken);
            if taken.is_empty() {
                tokio::select! {
                    _ = freed => {}
                    _ = tokio::time::sleep(Duration::from_millis(READER_POLL_MS)) => {}
                }
                continue;
            }
        }
        let batch = if plan.oneway {
            plan.inflight.max(1)
        } else {
            taken.len()
        };
        let mut used = 0usize;
        // Set when no more requests will be sent (stopped, budget spent).
        let mut finished = false;
        while used < batch {
            let intended = match &plan.pacer {
                // Wait for the first request only; take the rest if due.
                Some(pacer) if used == 0 => match pacer.next().await {
                    Some(at) => at,
                    None => {
                        finished = true;
                        break;
                    }
                },
                Some(pacer) => match pacer.try_next() {
                    Some(at) => at,
                    None => break,
                },
                None => Instant::now(),
            };
            if control.producers_stopped() || !control.claim(msgs) {
                finished = true;
                break;
            }
            let queue_id = queue_ids[next_queue % queue_ids.len()];
            next_queue = next_queue.wrapping_add(1);
            let mut request = match plan.factory.build(queue_id, intended) {
                Ok(request) => request,
                Err(_) => {
                    shard.lock().send_failed(&ErrorKind::Protocol);
                    break 'run;
                }
            };
            request.serialize_type = plan.serialize_type;
            if plan.oneway {
                request.mark_oneway();
                request.opaque = sequence as i32;
                pending_oneway.push(intended);
            } else {
                let slot = taken[used];
                slots.intended_ns[usize::from(slot)]
                    .store(ns_since_anchor(intended), Ordering::Relaxed);
                request.opaque = opaque_for(sequence, slot);
            }
            sequence = sequence.wrapping_add(1);
            request.encode(&mut buf);
            used += 1;
            if buf.len() >= WRITE_CHUNK_BYTES {
                break;
            }
        }
        if !plan.oneway {
            // Slots prepared but not used go back.
            slots.give_back(&taken[used..]);
            taken.clear();
        }
        if buf.is_empty() {
            if finished {
                break;
            }
            continue;
        }
        if writer.write_all(&buf).await.is_err() {
            slots.closed.store(true, Ordering::Relaxed);
            shard.lock().send_failed(&ErrorKind::Io);
            break;
        }
        buf.clear();
        if plan.oneway {
            let now = Instant::now();
            let mut counts = shard.lock();
            for intended in pending_oneway.drain(..) {
                let latency = now.saturating_duration_since(intended).as_nanos() as u64;
                counts.sent(latency, msgs, bytes);
            }
        }
        if finished {
            break;
        }
    }
    *slots
        .parked_writer
        .lock()
        .unwrap_or_else(|p| p.into_inner()) = Some(writer);
    slots.writer_done.store(true, Ordering::Relaxed);
    slots.freed.notify_one();
}

async fn read_loop(
    mut reader: OwnedReadHalf,
    factory: Arc<SendFactory>,
    timeout: Duration,
    slots: Arc<Slots>,
    control: Arc<Control>,
    shard: Arc<Shard>,
) {
    let msgs = factory.per_request() as u64;
    let bytes = factory.body_bytes_per_request();
    let decoder = FrameDecoder::new(FRAME_BYTES_MAX);
    let mut buf = BytesMut::with_capacity(READ_CHUNK_BYTES);
    let mut done_since: Option<Instant> = None;
    let mut freed = Vec::new();
    loop {
        loop {
            match decoder.next_frame(&mut buf) {
                Ok(Some(response)) if response.is_response() => {
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
                Ok(Some(_)) => {} // a request from the server: not answered
                Ok(None) => break,
                Err(_) => {
                    shard.lock().send_failed(&ErrorKind::Protocol);
                    slots.closed.store(true, Ordering::Relaxed);
                    return;
                }
            }
        }
        slots.give_back(&freed);
        freed.clear();
        if control.producers_stopped() && slots.writer_done.load(Ordering::Relaxed) {
            let outstanding = slots.outstanding();
            let since = *done_since.get_or_insert_with(Instant::now);
            if outstanding == 0 {
                return;
            }
            if since.elapsed() >= timeout {
                let mut counts = shard.lock();
                for _ in 0..outstanding {
                    counts.send_failed(&ErrorKind::Timeout);
                }
                return;
            }
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
                let outstanding = slots.outstanding();
                let mut counts = shard.lock();
                for _ in 0..outstanding {
                    counts.send_failed(&ErrorKind::Closed);
                }
                return;
            }
            Ok(Ok(_)) => {}
        }
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
