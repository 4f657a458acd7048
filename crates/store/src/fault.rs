//! Deterministic fault injection for the storage seam: fail the next
//! fdatasyncs or writes, tear the next write (part of it lands, then an
//! error), or slow flushes down. Tests hand a [`FaultyIo`] to
//! [`crate::MessageStore::open_with_io`] and steer it through [`FaultPlan`].

use std::io;
use std::path::Path;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::config::WriteMode;
use crate::io::{GlommioIo, IoBuffer, LocalBoxFuture, SegmentFile, StorageIo};

/// Sentinel: no torn write pending.
const NO_TEAR: u64 = u64::MAX;

#[derive(Debug)]
struct FaultState {
    fail_syncs: AtomicU64,
    fail_writes: AtomicU64,
    tear_keep_bytes: AtomicU64,
    sync_delay_ms: AtomicU64,
    syncs_ok: AtomicU64,
    writes_ok: AtomicU64,
}

/// The switches of a [`FaultyIo`]; clone it to keep steering from a test.
#[derive(Debug, Clone)]
pub struct FaultPlan {
    state: Arc<FaultState>,
}

impl Default for FaultPlan {
    fn default() -> Self {
        Self {
            state: Arc::new(FaultState {
                fail_syncs: AtomicU64::new(0),
                fail_writes: AtomicU64::new(0),
                tear_keep_bytes: AtomicU64::new(NO_TEAR),
                sync_delay_ms: AtomicU64::new(0),
                syncs_ok: AtomicU64::new(0),
                writes_ok: AtomicU64::new(0),
            }),
        }
    }
}

impl FaultPlan {
    /// The next `count` fdatasyncs fail with EIO.
    pub fn fail_next_syncs(&self, count: u64) {
        self.state.fail_syncs.store(count, Ordering::SeqCst);
    }

    /// The next `count` writes fail with EIO, writing nothing.
    pub fn fail_next_writes(&self, count: u64) {
        self.state.fail_writes.store(count, Ordering::SeqCst);
    }

    /// The next write lands only its first `keep_bytes` (rounded down to the
    /// file's alignment), then fails with EIO: a torn write.
    pub fn tear_next_write(&self, keep_bytes: u64) {
        self.state
            .tear_keep_bytes
            .store(keep_bytes, Ordering::SeqCst);
    }

    /// Every fdatasync first sleeps this long (0: no delay).
    pub fn delay_syncs_ms(&self, delay_ms: u64) {
        self.state.sync_delay_ms.store(delay_ms, Ordering::SeqCst);
    }

    /// fdatasyncs that succeeded.
    pub fn syncs_ok(&self) -> u64 {
        self.state.syncs_ok.load(Ordering::SeqCst)
    }

    /// Writes that succeeded.
    pub fn writes_ok(&self) -> u64 {
        self.state.writes_ok.load(Ordering::SeqCst)
    }

    fn take(counter: &AtomicU64) -> bool {
        counter
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok()
    }
}

/// Wraps a [`StorageIo`] (by default the real [`GlommioIo`]) and injects the
/// faults its [`FaultPlan`] asks for.
pub struct FaultyIo {
    inner: Arc<dyn StorageIo>,
    plan: FaultPlan,
}

impl FaultyIo {
    /// Real I/O with faults on demand; returns the plan to steer it.
    pub fn new() -> (Self, FaultPlan) {
        Self::wrap(Arc::new(GlommioIo))
    }

    pub fn wrap(inner: Arc<dyn StorageIo>) -> (Self, FaultPlan) {
        let plan = FaultPlan::default();
        (
            Self {
                inner,
                plan: plan.clone(),
            },
            plan,
        )
    }
}

fn injected(what: &str) -> io::Error {
    io::Error::other(format!("injected fault: {what}"))
}

impl StorageIo for FaultyIo {
    fn open_segment<'a>(
        &'a self,
        path: &'a Path,
        size_bytes: u64,
        mode: WriteMode,
    ) -> LocalBoxFuture<'a, io::Result<Rc<dyn SegmentFile>>> {
        Box::pin(async move {
            let inner = self.inner.open_segment(path, size_bytes, mode).await?;
            let file: Rc<dyn SegmentFile> = Rc::new(FaultySegment {
                inner,
                plan: self.plan.clone(),
            });
            Ok(file)
        })
    }
}

struct FaultySegment {
    inner: Rc<dyn SegmentFile>,
    plan: FaultPlan,
}

impl SegmentFile for FaultySegment {
    fn alignment(&self) -> u64 {
        self.inner.alignment()
    }

    fn alloc_buffer(&self, len: usize) -> IoBuffer {
        self.inner.alloc_buffer(len)
    }

    fn write_at(&self, buf: IoBuffer, pos: u64) -> LocalBoxFuture<'_, io::Result<()>> {
        Box::pin(async move {
            let state = &self.plan.state;
            if FaultPlan::take(&state.fail_writes) {
                return Err(injected("write failed"));
            }
            let keep = state.tear_keep_bytes.swap(NO_TEAR, Ordering::SeqCst);
            if keep != NO_TEAR {
                let align = self.inner.alignment().max(1);
                let keep = (keep.min(buf.len() as u64) / align * align) as usize;
                if keep > 0 {
                    let mut part = self.inner.alloc_buffer(keep);
                    part.as_mut_slice().copy_from_slice(&buf.as_slice()[..keep]);
                    self.inner.write_at(part, pos).await?;
                }
                return Err(injected("torn write"));
            }
            self.inner.write_at(buf, pos).await?;
            state.writes_ok.fetch_add(1, Ordering::SeqCst);
            Ok(())
        })
    }

    fn sync_data(&self) -> LocalBoxFuture<'_, io::Result<()>> {
        Box::pin(async move {
            let state = &self.plan.state;
            let delay_ms = state.sync_delay_ms.load(Ordering::SeqCst);
            if delay_ms > 0 {
                glommio::timer::sleep(Duration::from_millis(delay_ms)).await;
            }
            if FaultPlan::take(&state.fail_syncs) {
                return Err(injected("fdatasync failed"));
            }
            self.inner.sync_data().await?;
            state.syncs_ok.fetch_add(1, Ordering::SeqCst);
            Ok(())
        })
    }
}
