//! ConsumeQueue: the per-(topic, queueId) index into the CommitLog. Files
//! `consumequeue/{topic}/{queueId}/{20-digit start byte position}` hold
//! fixed 20-byte entries (CommitLog offset i64, size i32, tags code i64),
//! `entries_per_file` each. Entry `n` is queue offset `n`.
//!
//! Single-threaded by design: a queue lives on its owner shard (or on the
//! opening thread during recovery), so there are no locks, only `Cell`s.
//! Entries are written into a shared read-write map of the file (page cache);
//! [`ConsumeQueue::take_dirty_files`] hands out file handles to fdatasync off
//! the shard.

use std::cell::{Cell, RefCell};
use std::fs;
use std::path::{Path, PathBuf};

use crate::error::{IoContext, IoFailure, StoreError};
use crate::files::{self, list_offset_files, offset_file_name, AllocatedPrefix};

mod entry;
mod floor;

pub use entry::{CqEntry, CQ_ENTRY_BYTES, LOST_TAGS_CODE};

struct CqFile {
    /// Queue offset of the first entry.
    start: i64,
    path: PathBuf,
    file: fs::File,
    map: memmap2::MmapMut,
    /// Blocks exist below this: entries are stored only there.
    allocated: AllocatedPrefix,
    dirty: bool,
}

/// One queue's index.
pub struct ConsumeQueue {
    dir: PathBuf,
    entries_per_file: u64,
    files: RefCell<Vec<CqFile>>,
    /// First entry kept in the files (raised by CommitLog retention).
    min_offset: Cell<i64>,
    max_offset: Cell<i64>,
    /// Retention per topic's floor (see `floor`): offsets below it are gone.
    floor: Cell<i64>,
    /// A file was short at open (see [`ConsumeQueue::was_repaired`]).
    repaired: Cell<bool>,
}

impl std::fmt::Debug for ConsumeQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConsumeQueue")
            .field("dir", &self.dir)
            .field("min_offset", &self.min_offset.get())
            .field("max_offset", &self.max_offset.get())
            .finish()
    }
}

impl ConsumeQueue {
    /// Opens the queue's files (none yet is fine: an empty queue).
    pub fn open(dir: PathBuf, entries_per_file: u64) -> Result<Self, StoreError> {
        assert!(entries_per_file > 0);
        let file_bytes = entries_per_file * CQ_ENTRY_BYTES as u64;
        let mut files = Vec::new();
        let mut repaired = false;
        for (start_bytes, path) in list_offset_files(&dir)? {
            if start_bytes as u64 % file_bytes != 0 {
                return Err(StoreError::Corrupt(format!(
                    "ConsumeQueue file {} does not start at a file boundary",
                    path.display()
                )));
            }
            let start = start_bytes / CQ_ENTRY_BYTES as i64;
            if let Some(prev) = files.last() {
                let prev: &CqFile = prev;
                if prev.start + entries_per_file as i64 != start {
                    return Err(StoreError::Corrupt(format!(
                        "ConsumeQueue files in {} are not contiguous at {}",
                        dir.display(),
                        path.display()
                    )));
                }
            }
            repaired |= extend_if_short(&path, file_bytes)?;
            files.push(map_file(&path, start, file_bytes, false)?);
        }
        advise_tail(&files);
        let queue = Self {
            dir,
            entries_per_file,
            files: RefCell::new(files),
            min_offset: Cell::new(0),
            max_offset: Cell::new(0),
            floor: Cell::new(0),
            repaired: Cell::new(repaired),
        };
        queue.compute_bounds();
        if repaired {
            // Entries past a short file's end read as never written: the
            // queue ends at its first hole, and recovery rebuilds the rest
            // from the CommitLog.
            queue.truncate(queue.first_hole())?;
        }
        Ok(queue)
    }

    /// Whether a file of this queue was short when it was opened (a crash
    /// while it was created, a disk that filled): recovery must rescan the
    /// whole CommitLog to rebuild it.
    pub(crate) fn was_repaired(&self) -> bool {
        self.repaired.get()
    }

    /// The first queue offset from the min offset on without an entry (the
    /// max offset when there is none).
    fn first_hole(&self) -> i64 {
        let mut offset = self.min_offset();
        while offset < self.max_offset() && self.entry_at(offset).is_some() {
            offset += 1;
        }
        offset
    }

    fn compute_bounds(&self) {
        let files = self.files.borrow();
        let Some(first) = files.first() else {
            return;
        };
        self.min_offset.set(first.start);
        // Files are created only when the previous one is full, so the queue
        // ends at the first unwritten entry of the last file.
        let last = files.last().unwrap_or(first);
        let mut max = last.start + self.entries_per_file as i64;
        for index in 0..self.entries_per_file as usize {
            let at = index * CQ_ENTRY_BYTES;
            if !CqEntry::decode(&last.map[at..at + CQ_ENTRY_BYTES]).is_valid() {
                max = last.start + index as i64;
                break;
            }
        }
        self.max_offset.set(max);
    }

    /// First queue offset still readable (`getMinOffsetInQueue`): past
    /// what CommitLog retention dropped and below the topic's floor, never
    /// past the end.
    pub fn min_offset(&self) -> i64 {
        let floor = self.floor.get().min(self.max_offset.get());
        self.min_offset.get().max(floor)
    }

    /// Next queue offset to be written (`getMaxOffsetInQueue`).
    pub fn max_offset(&self) -> i64 {
        self.max_offset.get()
    }

    /// The entry at `queue_offset`, if stored.
    pub fn entry(&self, queue_offset: i64) -> Option<CqEntry> {
        self.get(queue_offset, 1).into_iter().next()
    }

    /// Up to `max_count` entries from `queue_offset` on (fewer at the end).
    pub fn get(&self, queue_offset: i64, max_count: usize) -> Vec<CqEntry> {
        let mut out = Vec::new();
        if queue_offset < self.min_offset() {
            return out;
        }
        let end = self
            .max_offset()
            .min(queue_offset.saturating_add(i64::try_from(max_count).unwrap_or(i64::MAX)));
        let files = self.files.borrow();
        let mut offset = queue_offset;
        while offset < end {
            let Some(file) = self.file_for(&files, offset) else {
                break;
            };
            let index = (offset - file.start) as usize;
            let at = index * CQ_ENTRY_BYTES;
            let entry = CqEntry::decode(&file.map[at..at + CQ_ENTRY_BYTES]);
            if !entry.is_valid() {
                tracing::error!(dir = %self.dir.display(), offset, "hole in ConsumeQueue");
                break;
            }
            out.push(entry);
            offset += 1;
        }
        out
    }

    /// The last entry, if any.
    pub fn last_entry(&self) -> Option<CqEntry> {
        let max = self.max_offset();
        if max > self.min_offset() {
            self.entry(max - 1)
        } else {
            None
        }
    }

    fn file_for<'a>(&self, files: &'a [CqFile], offset: i64) -> Option<&'a CqFile> {
        let first = files.first()?;
        let index = (offset - first.start) / self.entries_per_file as i64;
        files.get(usize::try_from(index).ok()?)
    }

    /// An empty queue (a slave's, that never saw the master's first
    /// records) starts at `queue_offset`.
    pub(crate) fn begin_at(&self, queue_offset: i64) {
        assert!(
            self.last_entry().is_none() && self.files.borrow().is_empty(),
            "begin_at on a queue with entries"
        );
        assert!(queue_offset >= self.max_offset(), "a queue never goes back");
        self.min_offset.set(queue_offset);
        self.max_offset.set(queue_offset);
    }

    /// Appends the entry for `queue_offset`, which must be the next one.
    pub(crate) fn append(&self, queue_offset: i64, entry: CqEntry) -> Result<(), StoreError> {
        let max = self.max_offset();
        if queue_offset != max {
            return Err(StoreError::Corrupt(format!(
                "ConsumeQueue {} expects offset {max}, got {queue_offset}",
                self.dir.display()
            )));
        }
        if !entry.is_valid() {
            return Err(StoreError::Corrupt(format!(
                "invalid ConsumeQueue entry {entry:?}"
            )));
        }
        if let Some(last) = self.last_entry() {
            if last.end() > entry.physical_offset {
                return Err(StoreError::Corrupt(format!(
                    "ConsumeQueue {} entries must grow: {last:?} then {entry:?}",
                    self.dir.display()
                )));
            }
        }
        let mut files = self.files.borrow_mut();
        let per_file = self.entries_per_file as i64;
        let needs_file = match files.last() {
            Some(last) => queue_offset >= last.start + per_file,
            None => true,
        };
        if needs_file {
            let start = queue_offset - queue_offset.rem_euclid(per_file);
            fs::create_dir_all(&self.dir).io_context("create ConsumeQueue dir", &self.dir)?;
            let path = self
                .dir
                .join(offset_file_name(start * CQ_ENTRY_BYTES as i64));
            let file_bytes = self.entries_per_file * CQ_ENTRY_BYTES as u64;
            files.push(map_file(&path, start, file_bytes, true)?);
            advise_tail(&files);
            if files.len() == 1 {
                // A queue begun past 0 (`begin_at`) starts at its first entry.
                self.min_offset.set(start.max(self.min_offset()));
            }
        }
        let Some(file) = files.last_mut() else {
            return Err(StoreError::Corrupt("no ConsumeQueue file".into()));
        };
        let index = queue_offset - file.start;
        assert!(
            (0..per_file).contains(&index),
            "queue offset {queue_offset} outside its file at {}",
            file.start
        );
        let at = index as usize * CQ_ENTRY_BYTES;
        let file_bytes = self.entries_per_file * CQ_ENTRY_BYTES as u64;
        file.allocated
            .cover(&file.file, (at + CQ_ENTRY_BYTES) as u64, file_bytes)
            .io_context("allocate ConsumeQueue file", &file.path)?;
        entry.encode(&mut file.map[at..at + CQ_ENTRY_BYTES]);
        file.dirty = true;
        // Dense: the checks above allow only the next offset.
        self.max_offset.set(queue_offset + 1);
        assert!(
            self.min_offset.get() <= queue_offset,
            "floor past an append"
        );
        Ok(())
    }

    /// Retention (`deleteExpiredFile` + `correctMinOffset`): deletes the
    /// files, never the last, whose entries all point below `commitlog_min`,
    /// then moves the min offset to the first entry at or above it (to the
    /// max offset when none is). Returns how many files went.
    pub(crate) fn delete_below(&self, commitlog_min: i64) -> Result<usize, StoreError> {
        let per_file = self.entries_per_file as i64;
        let max_before = self.max_offset();
        let mut deleted = 0;
        loop {
            let mut files = self.files.borrow_mut();
            if files.len() <= 1 {
                break;
            }
            let first = &files[0];
            let last_at = (per_file as usize - 1) * CQ_ENTRY_BYTES;
            let last = CqEntry::decode(&first.map[last_at..last_at + CQ_ENTRY_BYTES]);
            if last.is_valid() && last.physical_offset >= commitlog_min {
                break;
            }
            let file = files.remove(0);
            drop(files);
            fs::remove_file(&file.path).io_context("remove ConsumeQueue file", &file.path)?;
            deleted += 1;
        }
        self.correct_min(commitlog_min);
        assert_eq!(
            self.max_offset(),
            max_before,
            "retention moved a queue's end"
        );
        assert!(self.min_offset() <= self.max_offset(), "floor past the end");
        Ok(deleted)
    }

    /// Sets the min offset to the first stored entry whose record starts at
    /// or after `commitlog_min` (entries grow with the offset: binary search).
    pub(crate) fn correct_min(&self, commitlog_min: i64) {
        let start = match self.files.borrow().first() {
            Some(first) => first.start.max(self.min_offset()),
            None => return,
        };
        let end = self.max_offset();
        let (mut low, mut high) = (start, end);
        while low < high {
            let mid = low + (high - low) / 2;
            match self.entry_at(mid) {
                Some(entry) if entry.physical_offset >= commitlog_min => high = mid,
                _ => low = mid + 1,
            }
        }
        if low > self.min_offset() {
            self.min_offset.set(low);
        }
        assert!(
            self.min_offset.get() <= self.max_offset(),
            "floor past the end"
        );
        debug_assert!(
            low <= end && self.max_offset() == end,
            "the queue's end stays"
        );
    }

    /// Rewrites every entry whose record starts in `[start, end)` (a
    /// damaged CommitLog range) as a lost entry (recovery); returns how many.
    pub(crate) fn mark_lost_within(&self, start: i64, end: i64) -> usize {
        let (mut low, mut high) = (self.min_offset(), self.max_offset());
        while low < high {
            let mid = low + (high - low) / 2;
            match self.entry_at(mid) {
                Some(entry) if entry.physical_offset >= start => high = mid,
                _ => low = mid + 1,
            }
        }
        let mut marked = 0;
        let mut files = self.files.borrow_mut();
        let mut offset = low;
        while offset < self.max_offset() {
            let Some(index) = files.first().and_then(|f| {
                usize::try_from((offset - f.start) / self.entries_per_file as i64).ok()
            }) else {
                break;
            };
            let Some(file) = files.get_mut(index) else {
                break;
            };
            let at = (offset - file.start) as usize * CQ_ENTRY_BYTES;
            let entry = CqEntry::decode(&file.map[at..at + CQ_ENTRY_BYTES]);
            if entry.physical_offset >= end || !entry.is_valid() {
                break;
            }
            if !entry.is_lost() {
                CqEntry::lost(start).encode(&mut file.map[at..at + CQ_ENTRY_BYTES]);
                file.dirty = true;
                marked += 1;
            }
            offset += 1;
        }
        marked
    }

    /// The stored entry at `queue_offset` regardless of the min offset.
    fn entry_at(&self, queue_offset: i64) -> Option<CqEntry> {
        let files = self.files.borrow();
        let file = self.file_for(&files, queue_offset)?;
        let at = usize::try_from(queue_offset - file.start).ok()? * CQ_ENTRY_BYTES;
        let entry = CqEntry::decode(file.map.get(at..at + CQ_ENTRY_BYTES)?);
        entry.is_valid().then_some(entry)
    }

    /// Deletes every file and the queue's directory (topic deletion). The
    /// queue must not be used afterwards.
    pub(crate) fn destroy(&self) -> Result<(), StoreError> {
        let files = std::mem::take(&mut *self.files.borrow_mut());
        for file in &files {
            match fs::remove_file(&file.path) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => {
                    return Err(IoFailure::new("remove ConsumeQueue file", &file.path, e).into())
                }
            }
        }
        self.min_offset.set(0);
        self.max_offset.set(0);
        match fs::remove_dir_all(&self.dir) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(IoFailure::new("remove ConsumeQueue dir", &self.dir, e).into()),
        }
    }

    /// Drops entries from `queue_offset` on (recovery only).
    pub(crate) fn truncate(&self, queue_offset: i64) -> Result<(), StoreError> {
        if queue_offset >= self.max_offset() {
            return Ok(());
        }
        assert!(queue_offset >= 0, "a truncation below zero");
        let mut files = self.files.borrow_mut();
        let per_file = self.entries_per_file as i64;
        while let Some(last) = files.last() {
            if last.start >= queue_offset && last.start > 0 && files.len() > 1 {
                if let Some(file) = files.pop() {
                    fs::remove_file(&file.path)
                        .io_context("remove ConsumeQueue file", &file.path)?;
                }
                continue;
            }
            break;
        }
        if let Some(file) = files.last_mut() {
            let from = (queue_offset.max(file.start) - file.start) as usize * CQ_ENTRY_BYTES;
            let to = per_file as usize * CQ_ENTRY_BYTES;
            file.map[from..to].fill(0);
            file.dirty = true;
        }
        advise_tail(&files);
        drop(files);
        self.max_offset.set(queue_offset.max(self.min_offset.get()));
        assert!(
            self.min_offset.get() <= self.max_offset(),
            "floor past the end"
        );
        self.lower_floor_to_end()
    }

    /// Drops every entry whose record ends past `commitlog_end` (recovery).
    pub(crate) fn truncate_beyond(&self, commitlog_end: i64) -> Result<(), StoreError> {
        assert!(commitlog_end >= 0, "a CommitLog end below zero");
        let mut keep = self.max_offset();
        while keep > self.min_offset.get() {
            match self.entry_at(keep - 1) {
                Some(entry) if entry.end() > commitlog_end => keep -= 1,
                _ => break,
            }
        }
        debug_assert!(
            keep >= self.min_offset.get(),
            "a cut below the queue's start"
        );
        self.truncate(keep)
    }

    /// Handles of the files written since the last call, for an fdatasync
    /// off the calling thread (the writes are in the shared map, so syncing
    /// the file persists them).
    pub(crate) fn take_dirty_files(&self) -> Result<Vec<fs::File>, StoreError> {
        let mut out = Vec::new();
        for file in self.files.borrow_mut().iter_mut().filter(|f| f.dirty) {
            out.push(
                file.file
                    .try_clone()
                    .io_context("dup ConsumeQueue file", &file.path)?,
            );
            file.dirty = false;
        }
        Ok(out)
    }

    /// Flushes dirty files on this thread (recovery, tests).
    pub(crate) fn flush_blocking(&self) -> Result<(), StoreError> {
        for file in self.take_dirty_files()? {
            file.sync_data()
                .io_context("fdatasync ConsumeQueue", &self.dir)?;
        }
        Ok(())
    }
}

/// Gives a file shorter than `file_bytes` its full size (the missing
/// entries read as never written); says whether it was short.
fn extend_if_short(path: &Path, file_bytes: u64) -> Result<bool, StoreError> {
    let len = fs::metadata(path)
        .io_context("stat ConsumeQueue file", path)?
        .len();
    if len >= file_bytes {
        return Ok(false);
    }
    tracing::warn!(path = %path.display(), len, file_bytes,
        "short ConsumeQueue file; extending it and rebuilding the queue from the CommitLog");
    fs::OpenOptions::new()
        .write(true)
        .open(path)
        .and_then(|file| file.set_len(file_bytes))
        .io_context("extend ConsumeQueue file", path)?;
    Ok(true)
}

/// See [`files::advise_tail`].
fn advise_tail(files: &[CqFile]) {
    files::advise_tail(files, |f| (&f.map, &f.path));
}

fn map_file(path: &Path, start: i64, file_bytes: u64, create: bool) -> Result<CqFile, StoreError> {
    let file = fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(create)
        .truncate(false)
        .open(path)
        .io_context("open ConsumeQueue file", path)?;
    let len = file
        .metadata()
        .io_context("stat ConsumeQueue file", path)?
        .len();
    if create && len == 0 {
        file.set_len(file_bytes)
            .io_context("size ConsumeQueue file", path)?;
    } else if len != file_bytes {
        return Err(StoreError::Corrupt(format!(
            "ConsumeQueue file {} has {len} bytes, expected {file_bytes}",
            path.display()
        )));
    }
    // SAFETY: the file is owned by this queue (one thread) and never
    // truncated while mapped.
    let map =
        unsafe { memmap2::MmapMut::map_mut(&file) }.io_context("mmap ConsumeQueue file", path)?;
    Ok(CqFile {
        start,
        path: path.to_path_buf(),
        file,
        map,
        allocated: AllocatedPrefix::default(),
        dirty: create,
    })
}

#[cfg(test)]
mod tests;
