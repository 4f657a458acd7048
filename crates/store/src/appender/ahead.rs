//! The next CommitLog segment, created while the current one fills (Java's
//! `AllocateMappedFileService` does the same), so that a roll only switches
//! files. Created at the roll itself, a segment (open, fallocate, the
//! directory's fsync, the map) stalled every append behind it: 110 ms for
//! 1 GiB on tmpfs, where fallocate zeroes every page.

use std::path::PathBuf;
use std::rc::Rc;
use std::sync::Arc;

use glommio::Task;

use crate::commitlog::SegmentMap;
use crate::config::WriteMode;
use crate::error::{IoContext, StoreError};
use crate::files::offset_file_name;
use crate::io::{SegmentFile, StorageIo};

/// A segment created for the next roll, not yet in the published list.
pub(super) struct NextSegment {
    pub(super) start: i64,
    pub(super) file: Rc<dyn SegmentFile>,
    pub(super) map: Arc<SegmentMap>,
}

/// Where and how the appender's segments are created.
#[derive(Clone)]
pub(super) struct SegmentFactory {
    pub(super) dir: PathBuf,
    pub(super) seg_bytes: i64,
    pub(super) write_mode: WriteMode,
    pub(super) io: Arc<dyn StorageIo>,
}

impl SegmentFactory {
    /// Creates (and allocates) the segment file at `start` and maps it. The
    /// directory's fsync and the map run on the blocking pool, off the
    /// executor that serves requests.
    pub(super) async fn create(&self, start: i64) -> Result<NextSegment, StoreError> {
        assert!(
            start >= 0 && start % self.seg_bytes == 0,
            "segments start at a multiple of the segment size"
        );
        let path = self.dir.join(offset_file_name(start));
        let file = self
            .io
            .open_segment(&path, self.seg_bytes as u64, self.write_mode)
            .await
            .io_context("create segment", &path)?;
        check_alignment(&*file, self.seg_bytes)?;
        let dir = self.dir.clone();
        let seg_bytes = self.seg_bytes as u64;
        let map = glommio::executor()
            .spawn_blocking(move || {
                crate::json_file::sync_dir(&dir)?;
                SegmentMap::open(&path, start, seg_bytes)
            })
            .await?;
        Ok(NextSegment {
            start,
            file,
            map: Arc::new(map),
        })
    }

    /// Removes a created segment that was never published (nothing was
    /// written to it), so that a clean restart finds no file past the end.
    pub(super) async fn remove(&self, next: NextSegment) {
        let NextSegment { start, file, map } = next;
        drop((file, map));
        let path = self.dir.join(offset_file_name(start));
        let dir = self.dir.clone();
        let removed = glommio::executor()
            .spawn_blocking(move || {
                std::fs::remove_file(&path).io_context("remove unused segment", &path)?;
                crate::json_file::sync_dir(&dir)
            })
            .await;
        if let Err(e) = removed {
            tracing::warn!(start, error = %e, "cannot remove the segment created ahead");
        }
    }
}

/// Aligned writes must never pass the segment's end.
pub(super) fn check_alignment(file: &dyn SegmentFile, seg_bytes: i64) -> Result<(), StoreError> {
    let align = file.alignment() as i64;
    if align < 1 || seg_bytes % align != 0 {
        return Err(StoreError::Config(format!(
            "segment size {seg_bytes} is not a multiple of the write alignment {align}"
        )));
    }
    Ok(())
}

/// The next segment being created in the background.
pub(super) struct Ahead {
    /// Start of the segment the task creates.
    start: i64,
    task: Task<Result<NextSegment, StoreError>>,
}

/// The appender's look-ahead: at most one segment in creation, started
/// once the current segment is half written, at most once per segment.
#[derive(Default)]
pub(super) struct Lookahead {
    ahead: Option<Ahead>,
    /// The last start a creation was started for: a failed one (the disk
    /// is full) is not retried in the background; the roll retries it.
    started_for: Option<i64>,
}

impl Lookahead {
    /// After a write ending `written` bytes into the segment at
    /// `segment_start`: starts creating the next one once half is written.
    pub(super) fn after_write(
        &mut self,
        factory: &SegmentFactory,
        segment_start: i64,
        written: i64,
    ) {
        let next = segment_start + factory.seg_bytes;
        if written * 2 < factory.seg_bytes || self.started_for == Some(next) {
            return;
        }
        assert!(
            self.ahead.is_none(),
            "one segment is created ahead at a time"
        );
        let factory = factory.clone();
        let task = glommio::spawn_local(async move { factory.create(next).await });
        self.ahead = Some(Ahead { start: next, task });
        self.started_for = Some(next);
    }

    /// The segment at `start` for a roll: the one created ahead when that
    /// worked, else created now (a background failure is retried: the
    /// disk may have room again).
    pub(super) async fn take(
        &mut self,
        factory: &SegmentFactory,
        start: i64,
    ) -> Result<NextSegment, StoreError> {
        if let Some(ahead) = self.ahead.take() {
            assert_eq!(ahead.start, start, "the segment ahead is the next one");
            match ahead.task.await {
                Ok(next) => return Ok(next),
                Err(e) => {
                    tracing::debug!(start, error = %e, "creating the next segment ahead failed; retrying at the roll")
                }
            }
        }
        self.started_for = Some(start);
        factory.create(start).await
    }

    /// Waits for a segment in creation and removes it (shutdown, or a
    /// restart of an empty log at another position).
    pub(super) async fn discard(&mut self, factory: &SegmentFactory) {
        self.started_for = None;
        if let Some(ahead) = self.ahead.take() {
            if let Ok(next) = ahead.task.await {
                factory.remove(next).await;
            }
        }
    }
}
