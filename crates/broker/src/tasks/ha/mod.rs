//! The HA links of RocketMQ's classic master/slave replication
//! (`protocol::ha` has the byte layout), all on shard 0:
//! - `master`: the HA listener and, per slave, a task that pushes the
//!   CommitLog from the mapped segments and one that reads the slave's
//!   offset reports (SYNC_MASTER sends wait on those,
//!   `services::replication`).
//! - `slave`: the link to the master: report the CommitLog's end, take the
//!   master's bytes, cut them into whole records (`assemble`) and append
//!   them at the master's offsets (`ShardStore::replicate`); reconnects
//!   with back-off.
//! - `auto_master` / `auto_slave` (controller mode): the same stream in
//!   RocketMQ's AutoSwitch form, with a handshake, the epoch of each frame
//!   and the confirm offset.
//! - `gate` (controller mode): ConsumeQueue dispatch on every shard stops
//!   at the confirm offset.
//! - `role` (controller mode): a change of role in place, without a
//!   restart of the data plane.
//! - `progress` (controller mode): publishes the CommitLog's end and each
//!   AutoSwitch follower's ack for the supervisor (`crate::role::progress`).
//! - `secure`: the optional TLS and challenge of a new link
//!   (`haTlsEnable`, `haAuthSecret`; Ferrocket keys).
//! - `metadata`: a slave copies topics, groups, consumer and delay
//!   offsets from the master's broker port (`SlaveSynchronize`).

pub(crate) mod assemble;
pub(crate) mod auto_master;
pub(crate) mod auto_slave;
pub(crate) mod first_copy;
pub(crate) mod gate;
pub(crate) mod master;
pub(crate) mod metadata;
pub(crate) mod progress;
pub(crate) mod role;
pub(crate) mod secure;
pub(crate) mod slave;

use std::cell::RefCell;
use std::future::{poll_fn, Future};
use std::io;
use std::pin::Pin;
use std::rc::Rc;
use std::time::Duration;

use futures_lite::{future, AsyncRead, AsyncWrite};

use crate::clock::now_ms;
use crate::services::replication::{count_in_second, SlaveLink};
use crate::shard::Shard;

/// Longest a connect to the master may take.
pub const HA_CONNECT_TIMEOUT_MS: u64 = 3_000;

/// One HA TCP stream, read by one task and written by another (each
/// borrows it only inside a poll).
pub(crate) struct HaStream {
    stream: RefCell<secure::HaIo>,
}

impl HaStream {
    /// A stream [`secure`] opened (with no delay set: frames are written
    /// whole, and a heartbeat must not wait for more).
    pub fn new(stream: secure::HaIo) -> Rc<Self> {
        Rc::new(Self {
            stream: RefCell::new(stream),
        })
    }

    pub async fn read_some(&self, buf: &mut [u8]) -> io::Result<usize> {
        poll_fn(|cx| Pin::new(&mut *self.stream.borrow_mut()).poll_read(cx, buf)).await
    }

    pub async fn read_exact(&self, buf: &mut [u8]) -> io::Result<()> {
        let mut at = 0;
        while at < buf.len() {
            match self.read_some(&mut buf[at..]).await? {
                0 => return Err(io::ErrorKind::UnexpectedEof.into()),
                n => at += n,
            }
        }
        Ok(())
    }

    pub async fn write_all(&self, bytes: &[u8]) -> io::Result<()> {
        let mut at = 0;
        while at < bytes.len() {
            let n =
                poll_fn(|cx| Pin::new(&mut *self.stream.borrow_mut()).poll_write(cx, &bytes[at..]))
                    .await?;
            if n == 0 {
                return Err(io::ErrorKind::WriteZero.into());
            }
            at += n;
        }
        if self.stream.borrow().is_tls() {
            // TLS holds back the records of the last write until flushed.
            poll_fn(|cx| Pin::new(&mut *self.stream.borrow_mut()).poll_flush(cx)).await?;
        }
        Ok(())
    }
}

/// `work`, or a timeout error after `timeout_ms`.
pub(crate) async fn within<T>(
    timeout_ms: u64,
    what: &str,
    work: impl Future<Output = io::Result<T>>,
) -> io::Result<T> {
    let timeout = async {
        glommio::timer::sleep(Duration::from_millis(timeout_ms)).await;
        Err(io::Error::new(
            io::ErrorKind::TimedOut,
            format!("{what}: nothing for {timeout_ms} ms"),
        ))
    };
    future::or(work, timeout).await
}

/// Where a new link starts: the reported offset, or for a report of 0 the
/// start of the master's last segment.
fn start_offset(shard: &Shard, reported: i64) -> io::Result<i64> {
    let reader = shard.store().reader();
    let written = reader.written_offset();
    let segment = reader.segment_bytes() as i64;
    let start = if reported == 0 {
        written - written % segment
    } else {
        reported
    };
    let refuse = |why: String| Err(io::Error::new(io::ErrorKind::InvalidData, why));
    if start > written {
        return refuse(format!(
            "the slave's CommitLog ends at {start}, past this master's end {written}: \
             it holds data this master does not; clear the slave's store"
        ));
    }
    // Offloaded segments count (tiered storage): they are served from
    // object storage (`frame_body`).
    if start < reader.logical_min_offset() {
        return refuse(format!(
            "the slave's CommitLog ends at {start}, below this master's first offset {}: \
             retention deleted what it needs; clear the slave's store",
            reader.logical_min_offset()
        ));
    }
    Ok(start)
}

/// `haFlowControlEnable`: at most `maxHaTransferByteInSecond` per slave.
async fn throttle(shard: &Shard, link: &SlaveLink, len: usize) {
    let ha_config = &shard.config().replication;
    let now = now_ms();
    let sent = count_in_second(&link.sent_in_second, now, len as u64);
    if ha_config.ha_flow_control_enable && sent > ha_config.ha_transfer_bytes_per_sec_max {
        let wait_ms = 1000 - now.rem_euclid(1000) as u64;
        glommio::timer::sleep(Duration::from_millis(wait_ms)).await;
    }
}

fn note_read(shard: &Shard, bytes: usize) {
    if let Ok(control) = shard.control() {
        let mut master = control.ha.master.borrow_mut();
        let now = now_ms();
        master.last_read_ms = now;
        let counter = std::cell::Cell::new(master.received_in_second);
        count_in_second(&counter, now, bytes as u64);
        master.received_in_second = counter.get();
    }
}

fn invalid(why: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, why)
}

/// A slave's intake of the master's frames, classic or AutoSwitch: where
/// the next frame must start, and the records being assembled from them.
pub(crate) struct Intake {
    assembler: assemble::Assembler,
    local_end: i64,
    first: bool,
}

impl Intake {
    pub(crate) fn new(local_end: i64) -> Self {
        Self {
            assembler: assemble::Assembler::new(local_end),
            local_end,
            first: true,
        }
    }

    /// Checks a frame's offset; an empty slave takes whatever the master
    /// starts with.
    pub(crate) fn check(&mut self, offset: i64, body_bytes: usize) -> io::Result<()> {
        if self.first && self.local_end == 0 && body_bytes > 0 {
            self.assembler = assemble::Assembler::new(offset);
        }
        if offset != self.assembler.next_offset() {
            return Err(invalid(format!(
                "the master sent offset {offset}, this slave expects {}",
                self.assembler.next_offset()
            )));
        }
        self.first = self.first && body_bytes == 0;
        Ok(())
    }

    /// Reads a frame's body and appends its whole records.
    pub(crate) async fn take(
        &mut self,
        shard: &Shard,
        stream: &HaStream,
        len: usize,
        grew: &ferrocket_runtime::sync::Notify,
    ) -> io::Result<()> {
        let housekeeping_ms = shard.config().replication.ha_housekeeping_interval_ms;
        let mut body = bytes::BytesMut::zeroed(len);
        within(
            housekeeping_ms,
            "a frame body",
            stream.read_exact(&mut body),
        )
        .await?;
        note_read(shard, body.len());
        for (start, chunk) in self.assembler.push(&body).map_err(invalid)? {
            shard.store().replicate(start, chunk).await.map_err(|e| {
                io::Error::other(format!("appending the master's bytes at {start}: {e}"))
            })?;
            grew.notify();
        }
        Ok(())
    }
}

/// The end of the next frame from `next`: within its segment, at most
/// `haTransferBatchSize`, and not past `limit` (an epoch's end).
fn frame_end(shard: &Shard, next: i64, written: i64, limit: i64) -> i64 {
    let segment = shard.store().reader().segment_bytes() as i64;
    let batch = shard.config().replication.ha_transfer_batch_bytes as i64;
    written
        .min(next - next % segment + segment)
        .min(next + batch)
        .min(limit)
        .max(next)
}

/// Tries at reading an offloaded frame (a chunk fetched may be evicted
/// again by other readers before it is read).
const OFFLOADED_READ_TRIES: usize = 3;

/// The CommitLog bytes `[next, end)` for a frame (none for a heartbeat).
/// Bytes only object storage holds now (a lagging slave, tiered storage)
/// are fetched by the tier's thread while this shard goes on serving.
async fn frame_body(shard: &Shard, next: i64, end: i64) -> io::Result<bytes::Bytes> {
    if end == next {
        return Ok(bytes::Bytes::new());
    }
    let len = (end - next) as usize;
    for _ in 0..OFFLOADED_READ_TRIES {
        if let Some(bytes) = shard.store().read_records(next, len) {
            return Ok(bytes);
        }
        if !shard.store().reader().is_offloaded(next) {
            break;
        }
        shard
            .store()
            .fetch_offloaded(next, len)
            .await
            .map_err(|e| {
                // NotFound only for an object definitely missing or damaged
                // (`first_copy` skips those and nothing else).
                let kind = match e {
                    ferrocket_store::StoreError::OffloadedGone(_) => io::ErrorKind::NotFound,
                    _ => io::ErrorKind::Other,
                };
                io::Error::new(kind, format!("serving a slave from object storage: {e}"))
            })?;
    }
    Err(io::Error::other(format!(
        "CommitLog bytes [{next}, {end}) are not readable"
    )))
}
