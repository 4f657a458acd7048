//! The appender's write path: one job (the bytes of a batch, all in the
//! current segment) per write, the roll to the next segment, and in Direct
//! mode the partly written block that every aligned write starts with.

use std::rc::Rc;
use std::sync::Arc;

use bytes::Bytes;

use super::ahead::{check_alignment, Lookahead, NextSegment, SegmentFactory};
use super::tasks::{Common, OpenSegment};
use crate::commitlog::{CommitLogShared, SegmentMap};
use crate::config::{FlushMode, StoreConfig, WriteMode};
use crate::error::{IoContext, IoFailure, StoreError};
use crate::files::offset_file_name;
use crate::io::{IoBuffer, SegmentFile, StorageIo};

/// Writes jobs into the current segment and rolls to the next one.
pub(super) struct SegmentWriter {
    factory: SegmentFactory,
    /// The next segment, created once the current one is half written.
    lookahead: Lookahead,
    /// Sync flush: a roll fdatasyncs the segment it leaves (the batch's
    /// group commit covers only the current one).
    sync_at_roll: bool,
    common: Rc<Common>,
    /// Direct mode: bytes of the current segment from the last aligned
    /// boundary up to the written end, rewritten with the next job.
    tail: Vec<u8>,
}

/// Opens the segment holding `end`, creating and publishing it when it is
/// new, and reads its partly written block (Direct mode): where the
/// appender starts.
pub(super) async fn open_current(
    config: &StoreConfig,
    io: &dyn StorageIo,
    shared: &CommitLogShared,
    end: i64,
) -> Result<(OpenSegment, Vec<u8>), StoreError> {
    let seg_bytes = config.segment_bytes as i64;
    let start = end - end.rem_euclid(seg_bytes);
    let dir = config.commitlog_dir();
    let path = dir.join(offset_file_name(start));
    let exists = shared
        .segment_list()
        .last()
        .is_some_and(|last| last.start == start);
    let file = io
        .open_segment(&path, seg_bytes as u64, config.write_mode)
        .await
        .io_context("open segment", &path)?;
    check_alignment(&*file, seg_bytes)?;
    if !exists {
        crate::json_file::sync_dir(&dir)?;
        let map = SegmentMap::open(&path, start, seg_bytes as u64)?;
        shared.push_segment(Arc::new(map));
    }
    let tail = tail_block(shared, &*file, start, end);
    Ok((OpenSegment { start, file }, tail))
}

/// Direct mode: the partly written block at the end, from the segment map.
fn tail_block(
    shared: &CommitLogShared,
    file: &dyn SegmentFile,
    seg_start: i64,
    end: i64,
) -> Vec<u8> {
    let align = file.alignment() as i64;
    if align <= 1 {
        return Vec::new();
    }
    let in_seg = end - seg_start;
    let from = in_seg - in_seg % align;
    let segments = shared.segment_list();
    segments
        .iter()
        .find(|segment| segment.start == seg_start)
        .map(|segment| segment.bytes()[from as usize..in_seg as usize].to_vec())
        .unwrap_or_else(|| vec![0u8; (in_seg - from) as usize])
}

/// Direct mode: the aligned buffer that rewrites the partly written block
/// `tail` and adds `job` after it (zero padded), the aligned file position
/// to write it at, and the block left partly written after it.
fn direct_write(
    file: &dyn SegmentFile,
    tail: &[u8],
    job: &[u8],
    file_pos: u64,
) -> (IoBuffer, u64, Vec<u8>) {
    let align = file.alignment();
    let aligned = file_pos - file_pos % align;
    assert_eq!(
        (file_pos - aligned) as usize,
        tail.len(),
        "tail block out of step"
    );
    let total = tail.len() + job.len();
    let padded = total.div_ceil(align as usize) * align as usize;
    let mut buf = file.alloc_buffer(padded);
    let bytes = buf.as_mut_slice();
    bytes[..tail.len()].copy_from_slice(tail);
    bytes[tail.len()..total].copy_from_slice(job);
    bytes[total..].fill(0);
    let new_end = file_pos + job.len() as u64;
    let keep_from = (new_end - new_end % align - aligned) as usize;
    let new_tail = bytes[keep_from..total].to_vec();
    (buf, aligned, new_tail)
}

impl SegmentWriter {
    pub(super) fn new(
        config: &StoreConfig,
        io: Arc<dyn StorageIo>,
        common: Rc<Common>,
        tail: Vec<u8>,
    ) -> Self {
        SegmentWriter {
            factory: SegmentFactory {
                dir: config.commitlog_dir(),
                seg_bytes: config.segment_bytes as i64,
                write_mode: config.write_mode,
                io,
            },
            lookahead: Lookahead::default(),
            sync_at_roll: matches!(config.flush_mode, FlushMode::Sync { .. }),
            common,
            tail,
        }
    }

    pub(super) fn current(&self) -> Rc<OpenSegment> {
        Rc::clone(&self.common.current.borrow())
    }

    /// Start of the current segment.
    pub(super) fn segment_start(&self) -> i64 {
        self.common.current.borrow().start
    }

    /// Writes `job`: the bytes for `[job_start, job_start + len)`, all in
    /// the current segment.
    pub(super) async fn write(&mut self, job_start: i64, job: Bytes) -> Result<(), StoreError> {
        let segment = self.current();
        assert!(
            segment.start <= job_start,
            "a write must not start before its segment"
        );
        let file_pos = (job_start - segment.start) as u64;
        assert!(
            file_pos + job.len() as u64 <= self.factory.seg_bytes as u64,
            "a write must stay within its segment"
        );
        // Named lazily: the write path formats nothing unless a write fails.
        let io_error = |e| IoFailure::new("write segment", format!("segment {}", segment.start), e);
        let written = (file_pos + job.len() as u64) as i64;
        match self.factory.write_mode {
            WriteMode::Buffered => {
                // Zero-copy: the batch buffer becomes the write buffer.
                let buf = IoBuffer::Heap(Vec::from(job));
                segment
                    .file
                    .write_at(buf, file_pos)
                    .await
                    .map_err(io_error)?;
            }
            WriteMode::Direct => {
                let (buf, aligned, new_tail) =
                    direct_write(&*segment.file, &self.tail, &job, file_pos);
                segment
                    .file
                    .write_at(buf, aligned)
                    .await
                    .map_err(io_error)?;
                self.tail = new_tail;
                self.common.shared.push_hot(job_start, job);
            }
        }
        self.lookahead
            .after_write(&self.factory, segment.start, written);
        Ok(())
    }

    /// A new slave's empty CommitLog: replaces the empty first segment by a
    /// new one at `start` (a segment boundary past it), deleting the old file.
    pub(super) async fn restart_at(&mut self, start: i64) -> Result<(), StoreError> {
        let old = self.current();
        assert!(
            start > old.start && start % self.factory.seg_bytes == 0,
            "restart at a later segment start"
        );
        self.lookahead.discard(&self.factory).await;
        let NextSegment { file, map, .. } = self.factory.create(start).await?;
        self.common.shared.replace_only(map);
        *self.common.current.borrow_mut() = Rc::new(OpenSegment { start, file });
        self.tail.clear();
        assert_eq!(
            self.common.shared.min_offset(),
            start,
            "the only segment moved"
        );
        let dir = &self.factory.dir;
        let old_path = dir.join(offset_file_name(old.start));
        std::fs::remove_file(&old_path).io_context("remove empty segment", &old_path)?;
        crate::json_file::sync_dir(dir)?;
        Ok(())
    }

    /// The segment after the current one, created (ahead, or now) and
    /// allocated but not yet published: the first half of a roll, the one
    /// that can find the disk full.
    pub(super) async fn create_next(&mut self) -> Result<NextSegment, StoreError> {
        let start = self.segment_start() + self.factory.seg_bytes;
        self.lookahead.take(&self.factory, start).await
    }

    /// Shutdown: removes a segment created ahead and never used.
    pub(super) async fn discard_ahead(&mut self) {
        self.lookahead.discard(&self.factory).await;
    }

    /// Writes the last bytes of the current segment (ending in the blank
    /// filler), makes them durable (sync flush) or leaves them to the flush
    /// task (async flush), and moves on to `next`.
    pub(super) async fn roll(
        &mut self,
        job_start: i64,
        job: Bytes,
        next: NextSegment,
    ) -> Result<(), StoreError> {
        let job_end = job_start + job.len() as i64;
        self.write(job_start, job).await?;
        let old = self.current();
        match self.sync_at_roll {
            true => old.file.sync_data().await.map_err(|e| {
                StoreError::FlushFailed(format!("fdatasync before segment roll: {e}"))
            })?,
            // The flush task syncs it (before the new one): the sends
            // behind this roll do not wait for the old segment's flush.
            false => self.common.unsynced.borrow_mut().push(Rc::clone(&old.file)),
        }
        let NextSegment { start, file, map } = next;
        assert_eq!(
            start,
            old.start + self.factory.seg_bytes,
            "rolls go to the next segment"
        );
        assert_eq!(job_end, start, "a segment must be full before the next one");
        self.common.shared.push_segment(map);
        *self.common.current.borrow_mut() = Rc::new(OpenSegment { start, file });
        self.tail.clear();
        Ok(())
    }
}
