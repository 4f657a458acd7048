//! File naming shared by the CommitLog and ConsumeQueue: files named by their
//! 20-digit zero-padded start offset (`UtilAll.offset2FileName`).

use std::fs;
use std::path::{Path, PathBuf};

use crate::error::{IoContext, IoFailure, StoreError};

/// Digits in a segment file name.
pub const FILE_NAME_DIGITS: usize = 20;
// Every offset fits a name: an i64 has at most ilog10(i64::MAX) + 1 = 19 digits.
const _: () = assert!((i64::MAX.ilog10() as usize) < FILE_NAME_DIGITS);

/// `00000000001073741824` for 1 GiB.
pub fn offset_file_name(offset: i64) -> String {
    assert!(offset >= 0, "negative file offset {offset}");
    format!("{offset:0width$}", width = FILE_NAME_DIGITS)
}

/// Files in `dir` whose names are 20-digit offsets, sorted by offset. Other
/// names are ignored (temp files, backups). A missing dir is empty.
pub fn list_offset_files(dir: &Path) -> Result<Vec<(i64, PathBuf)>, StoreError> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(IoFailure::new("list dir", dir, e).into()),
    };
    let mut files = Vec::new();
    for entry in entries {
        let entry = entry.io_context("list dir", dir)?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if name.len() != FILE_NAME_DIGITS || !name.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let Ok(offset) = name.parse::<i64>() else {
            continue;
        };
        files.push((offset, entry.path()));
    }
    files.sort_by_key(|(offset, _)| *offset);
    Ok(files)
}

/// Most data extents [`data_ranges`] lists before it gives the rest whole.
const DATA_RANGES_MAX: usize = 4096;

/// The parts of `[from, len)` of `file` that may hold bytes other than
/// zeros: the file system's data extents (`SEEK_DATA`/`SEEK_HOLE`; holes
/// and preallocated blocks never written read as zeros and are left out).
/// All of `[from, len)` where the file system cannot tell; at most
/// [`DATA_RANGES_MAX`] ranges, the last running to `len`.
pub(crate) fn data_ranges(file: &fs::File, from: u64, len: u64) -> Vec<std::ops::Range<u64>> {
    use std::os::unix::io::AsRawFd;
    let seek = |at: u64, whence: libc::c_int| -> Option<u64> {
        let at = libc::off_t::try_from(at).ok()?;
        // SAFETY: plain syscall on an open descriptor; it moves only the
        // file position, which nothing else here relies on.
        let found = unsafe { libc::lseek(file.as_raw_fd(), at, whence) };
        u64::try_from(found).ok()
    };
    let mut ranges = Vec::new();
    let mut at = from;
    while at < len {
        if ranges.len() == DATA_RANGES_MAX {
            ranges.push(at..len);
            break;
        }
        let Some(data) = seek(at, libc::SEEK_DATA) else {
            // ENXIO: no data past `at`. Anything else: cannot tell.
            let none_left = std::io::Error::last_os_error().raw_os_error() == Some(libc::ENXIO);
            if !none_left {
                ranges.push(at..len);
            }
            break;
        };
        if data >= len {
            break;
        }
        let hole = seek(data, libc::SEEK_HOLE).unwrap_or(len).min(len);
        ranges.push(data..hole.max(data + 1));
        at = hole.max(data + 1);
    }
    ranges
}

/// Zeroes `[from, to)` of a file without writing every byte: punches a hole
/// and allocates it again, falling back to writing zeros.
pub fn zero_range(file: &fs::File, path: &Path, from: u64, to: u64) -> Result<(), StoreError> {
    use std::os::unix::io::AsRawFd;
    if to <= from {
        return Ok(());
    }
    let len = (to - from) as libc::off_t;
    let start = from as libc::off_t;
    // SAFETY: plain syscall on an open descriptor.
    let punched = unsafe {
        libc::fallocate(
            file.as_raw_fd(),
            libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
            start,
            len,
        )
    } == 0;
    if punched {
        // SAFETY: as above. Reallocation failure only loses preallocation.
        let _ = unsafe { libc::fallocate(file.as_raw_fd(), 0, start, len) };
        return Ok(());
    }
    write_zeros(file, from, to).io_context("zero file range", path)?;
    Ok(())
}

/// Writes zeros over `[from, to)`: gives a range real blocks where
/// `fallocate` is not supported.
fn write_zeros(file: &fs::File, from: u64, to: u64) -> std::io::Result<()> {
    use std::os::unix::fs::FileExt;
    const ZEROS_BYTES: usize = 1 << 20;
    let zeros = vec![0u8; ZEROS_BYTES.min((to - from) as usize)];
    let mut pos = from;
    while pos < to {
        let n = ((to - pos) as usize).min(zeros.len());
        file.write_all_at(&zeros[..n], pos)?;
        pos += n as u64;
    }
    Ok(())
}

/// Gives `[from, to)` of a sparse file real blocks, so that stores through
/// a mapping of it can never fault for lack of space: a full disk then
/// surfaces here as an error of kind `StorageFull` instead of a SIGBUS.
/// Uses `fallocate` (cheap, and a no-op where blocks exist, so data in the
/// range is kept). A file system without `fallocate` keeps the file sparse,
/// as before: there a full disk can still fault a mapped store.
pub(crate) fn allocate(file: &fs::File, from: u64, to: u64) -> std::io::Result<()> {
    use std::os::unix::io::AsRawFd;
    if to <= from {
        return Ok(());
    }
    let len = (to - from) as libc::off_t;
    // SAFETY: plain syscall on an open descriptor.
    let done = unsafe { libc::fallocate(file.as_raw_fd(), 0, from as libc::off_t, len) };
    if done == 0 {
        return Ok(());
    }
    let error = std::io::Error::last_os_error();
    match error.raw_os_error() {
        Some(libc::EOPNOTSUPP) => Ok(()),
        _ => Err(error),
    }
}

/// What a mapped file is used for, told to the kernel with `madvise`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MapUse {
    /// Being written (or looked up at random, as index slots are): a page
    /// fault reads in its own page only. The kernel's default read-around
    /// fills up to `read_ahead_kb` of the file around the fault (8 MiB on
    /// some virtual disks), and in a file written at its tail that is
    /// megabytes of unwritten blocks zeroed on the writing thread at once:
    /// eight ConsumeQueue files rolling together held a shard for 150-290
    /// ms that way.
    Written,
    /// Full and read in order (a consumer catching up): normal read-ahead.
    Filled,
}

/// Tells the kernel how `map` of `path` is used. A hint: a failure is
/// logged and changes nothing else.
pub(crate) fn advise(map: &memmap2::MmapMut, path: &Path, usage: MapUse) {
    let advice = match usage {
        MapUse::Written => memmap2::Advice::Random,
        MapUse::Filled => memmap2::Advice::Normal,
    };
    if let Err(error) = map.advise(advice) {
        tracing::debug!(path = %path.display(), ?usage, %error, "madvise failed");
    }
}

/// Advice for a series of mapped files written in order: the last is
/// written at its tail, the one before it is full now (earlier ones were
/// told so when the next one began).
pub(crate) fn advise_tail<T>(files: &[T], map_of: impl Fn(&T) -> (&memmap2::MmapMut, &Path)) {
    let Some((last, earlier)) = files.split_last() else {
        return;
    };
    if let Some(before) = earlier.last() {
        let (map, path) = map_of(before);
        advise(map, path, MapUse::Filled);
    }
    let (map, path) = map_of(last);
    advise(map, path, MapUse::Written);
}

/// Bytes allocated at a time ahead of a mapped file's writes (see
/// [`AllocatedPrefix`]): one `fallocate` per this many bytes written.
pub(crate) const ALLOCATION_CHUNK_BYTES: u64 = 256 << 10;
const _: () = assert!(ALLOCATION_CHUNK_BYTES % 4096 == 0);

/// How much of a mapped, sparsely created file has real blocks, counted from
/// its start; writes ask [`AllocatedPrefix::cover`] before they store.
/// Chunked so that a large, mostly unwritten file (a ConsumeQueue, an index
/// file's entries, a timer log segment) costs disk only as it fills.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct AllocatedPrefix {
    bytes: u64,
}

impl AllocatedPrefix {
    /// Makes sure `[0, end)` is allocated, extending the prefix a chunk
    /// (at most up to `file_bytes`) at a time.
    pub(crate) fn cover(
        &mut self,
        file: &fs::File,
        end: u64,
        file_bytes: u64,
    ) -> std::io::Result<()> {
        assert!(end <= file_bytes, "a write past the end of its file");
        if end <= self.bytes {
            return Ok(());
        }
        let chunk_end = end.div_ceil(ALLOCATION_CHUNK_BYTES) * ALLOCATION_CHUNK_BYTES;
        let to = chunk_end.min(file_bytes);
        allocate(file, self.bytes, to)?;
        self.bytes = to;
        Ok(())
    }
}

/// Whether this process maps `path` with random-read advice (`rr` in
/// `/proc/self/smaps`); `None` when it does not map it at all.
#[cfg(test)]
pub(crate) fn mapped_for_random_reads(path: &Path) -> Option<bool> {
    let smaps = fs::read_to_string("/proc/self/smaps").ok()?;
    let name = path.to_str()?;
    let mut lines = smaps.lines().skip_while(|l| !l.ends_with(name));
    lines.next()?;
    let flags = lines.find_map(|l| l.strip_prefix("VmFlags:"))?;
    Some(flags.split_whitespace().any(|f| f == "rr"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_sort_by_offset() {
        assert_eq!(offset_file_name(1 << 30), "00000000001073741824");
        let dir = tempfile::tempdir().unwrap();
        for off in [4096i64, 0, 8192] {
            fs::write(dir.path().join(offset_file_name(off)), b"").unwrap();
        }
        fs::write(dir.path().join("00000000000000000000.tmp"), b"").unwrap();
        let found: Vec<i64> = list_offset_files(dir.path())
            .unwrap()
            .into_iter()
            .map(|(o, _)| o)
            .collect();
        assert_eq!(found, vec![0, 4096, 8192]);
    }

    #[test]
    fn zero_range_clears_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        fs::write(&path, vec![7u8; 10_000]).unwrap();
        let file = fs::OpenOptions::new().write(true).open(&path).unwrap();
        zero_range(&file, &path, 100, 9_000).unwrap();
        let data = fs::read(&path).unwrap();
        assert_eq!(data.len(), 10_000);
        assert!(data[..100].iter().all(|b| *b == 7));
        assert!(data[100..9_000].iter().all(|b| *b == 0));
        assert!(data[9_000..].iter().all(|b| *b == 7));
    }
}
