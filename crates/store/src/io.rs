//! The storage I/O seam: how the appender opens, writes and flushes CommitLog
//! segments. [`GlommioIo`] is the real one (io_uring through glommio: a
//! `DmaFile` in Direct mode, a `BufferedFile` in Buffered mode; never a
//! DmaFile read, which these VMs refuse). [`crate::FaultyIo`] wraps it to
//! inject failures deterministically in tests.
//!
//! Everything here runs on the appender's executor thread: futures are local
//! (`!Send`); only the factory ([`StorageIo`]) crosses threads.
//!
//! Buffered writes are plain `pwrite`s on the appender's own thread, not
//! io_uring requests: a write into the page cache cannot complete inline in
//! io_uring, so the kernel hands each one to an io-wq worker thread, and the
//! hand-off plus the completion wake-up cost more than the copy itself (on
//! a 2-core host, two context switches per batch). The appender has nothing
//! else to do while its batch is being written, so blocking it is free;
//! under dirty-page throttling it waits just as an io-wq worker would.

use std::future::Future;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::pin::Pin;
use std::rc::Rc;

use glommio::io::{BufferedFile, DmaBuffer, DmaFile, OpenOptions};

use crate::config::WriteMode;

/// A boxed future that stays on its executor.
pub type LocalBoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + 'a>>;

/// Opens CommitLog segment files for the appender.
pub trait StorageIo: Send + Sync + 'static {
    /// Opens `path` for writing, creating it and preallocating `size_bytes`
    /// when new. Called on the appender's executor.
    fn open_segment<'a>(
        &'a self,
        path: &'a Path,
        size_bytes: u64,
        mode: WriteMode,
    ) -> LocalBoxFuture<'a, io::Result<Rc<dyn SegmentFile>>>;
}

/// A buffer ready to be written: aligned memory for O_DIRECT, or a Vec.
pub enum IoBuffer {
    Dma(DmaBuffer),
    Heap(Vec<u8>),
}

impl IoBuffer {
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        match self {
            IoBuffer::Dma(buf) => buf.as_bytes_mut(),
            IoBuffer::Heap(buf) => buf.as_mut_slice(),
        }
    }

    pub fn as_slice(&self) -> &[u8] {
        match self {
            IoBuffer::Dma(buf) => buf.as_bytes(),
            IoBuffer::Heap(buf) => buf.as_slice(),
        }
    }

    pub fn len(&self) -> usize {
        self.as_slice().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// One open segment file.
pub trait SegmentFile {
    /// Alignment that write positions and lengths must have (1: none).
    fn alignment(&self) -> u64;
    /// A buffer of `len` bytes suitable for [`SegmentFile::write_at`]; its
    /// contents are unspecified: the caller fills every byte.
    fn alloc_buffer(&self, len: usize) -> IoBuffer;
    /// Writes all of `buf` at `pos`; a short write is an error.
    fn write_at(&self, buf: IoBuffer, pos: u64) -> LocalBoxFuture<'_, io::Result<()>>;
    /// fdatasync.
    fn sync_data(&self) -> LocalBoxFuture<'_, io::Result<()>>;
}

/// The real thing: glommio's io_uring files.
#[derive(Debug, Default, Clone, Copy)]
pub struct GlommioIo;

impl StorageIo for GlommioIo {
    fn open_segment<'a>(
        &'a self,
        path: &'a Path,
        size_bytes: u64,
        mode: WriteMode,
    ) -> LocalBoxFuture<'a, io::Result<Rc<dyn SegmentFile>>> {
        Box::pin(async move {
            let mut options = OpenOptions::new();
            options.write(true).create(true);
            let file: Rc<dyn SegmentFile> = match mode {
                WriteMode::Direct => {
                    // Readable too: glommio probes whether the device can
                    // poll for completions by reading the file once, and
                    // a write-only descriptor failed that probe with EBADF
                    // (an ERROR in the log on every start).
                    options.read(true);
                    let file = options.dma_open(path).await.map_err(io::Error::from)?;
                    let allocated = file.pre_allocate(size_bytes, false).await;
                    if let Err(e) = allocated.map_err(io::Error::from) {
                        no_room_removes(path, e)?;
                        // No fallocate on this file system: size it sparsely.
                        file.truncate(size_bytes).await.map_err(io::Error::from)?;
                    }
                    Rc::new(DirectSegment { file })
                }
                WriteMode::Buffered => {
                    let file = options.buffered_open(path).await.map_err(io::Error::from)?;
                    let allocated = file.pre_allocate(size_bytes, false).await;
                    if let Err(e) = allocated.map_err(io::Error::from) {
                        no_room_removes(path, e)?;
                        file.truncate(size_bytes).await.map_err(io::Error::from)?;
                    }
                    let writer = std::fs::OpenOptions::new().write(true).open(path)?;
                    Rc::new(BufferedSegment { file, writer })
                }
            };
            Ok(file)
        })
    }
}

/// A failed preallocation of a new segment: for lack of space the file is
/// removed again and the error returned (a sparse segment would fail its
/// writes later instead); any other failure (no `fallocate` here) is `Ok`.
fn no_room_removes(path: &Path, error: io::Error) -> io::Result<()> {
    if !crate::error::is_no_space(error.kind()) {
        return Ok(());
    }
    if let Err(e) = std::fs::remove_file(path) {
        tracing::warn!(path = %path.display(), error = %e, "cannot remove an unallocated segment");
    }
    Err(error)
}

struct DirectSegment {
    file: DmaFile,
}

impl SegmentFile for DirectSegment {
    fn alignment(&self) -> u64 {
        self.file.alignment().max(1)
    }

    fn alloc_buffer(&self, len: usize) -> IoBuffer {
        IoBuffer::Dma(self.file.alloc_dma_buffer(len))
    }

    fn write_at(&self, buf: IoBuffer, pos: u64) -> LocalBoxFuture<'_, io::Result<()>> {
        Box::pin(async move {
            let buf = match buf {
                IoBuffer::Dma(buf) => buf,
                IoBuffer::Heap(vec) => {
                    let mut dma = self.file.alloc_dma_buffer(vec.len());
                    dma.as_bytes_mut().copy_from_slice(&vec);
                    dma
                }
            };
            let len = buf.len();
            let written = self
                .file
                .write_at(buf, pos)
                .await
                .map_err(io::Error::from)?;
            if written != len {
                return Err(io::Error::new(
                    io::ErrorKind::WriteZero,
                    format!("short O_DIRECT write: {written} of {len} bytes at {pos}"),
                ));
            }
            Ok(())
        })
    }

    fn sync_data(&self) -> LocalBoxFuture<'_, io::Result<()>> {
        Box::pin(async move { self.file.fdatasync().await.map_err(io::Error::from) })
    }
}

struct BufferedSegment {
    /// fdatasync goes through io_uring (it can take milliseconds).
    file: BufferedFile,
    /// The same file for synchronous `pwrite`s (see the module doc).
    writer: std::fs::File,
}

impl SegmentFile for BufferedSegment {
    fn alignment(&self) -> u64 {
        1
    }

    fn alloc_buffer(&self, len: usize) -> IoBuffer {
        IoBuffer::Heap(vec![0u8; len])
    }

    fn write_at(&self, buf: IoBuffer, pos: u64) -> LocalBoxFuture<'_, io::Result<()>> {
        Box::pin(async move {
            let data = match buf {
                IoBuffer::Heap(vec) => vec,
                IoBuffer::Dma(dma) => dma.as_bytes().to_vec(),
            };
            let len = data.len();
            // Segments are preallocated, so a write that makes no progress
            // means the disk is in trouble: report it (the appender stops).
            self.writer.write_all_at(&data, pos).map_err(|e| {
                io::Error::new(
                    e.kind(),
                    format!("buffered write of {len} bytes at {pos}: {e}"),
                )
            })
        })
    }

    fn sync_data(&self) -> LocalBoxFuture<'_, io::Result<()>> {
        Box::pin(async move { self.file.fdatasync().await.map_err(io::Error::from) })
    }
}
