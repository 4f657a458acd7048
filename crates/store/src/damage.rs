//! Damaged CommitLog ranges found by recovery: bit rot or a torn header in
//! the middle of the log must not cost the good records after it.
//!
//! When the scan meets bytes that are not a valid record, it looks ahead
//! for the next position where a record checks out completely: magic, every
//! field length within the segment, the body CRC, and PHYSICALOFFSET equal
//! to where it lies (eight bytes that random data or a stale copy of a
//! record elsewhere will not match). If there is one, everything between is
//! a damaged range: its bytes are copied to `{root}/quarantine/` (named by
//! the range, so an operator can see and keep them), the range is reported,
//! and the scan goes on after it. If there is none, the log ends at the bad
//! bytes (a torn tail), as before.
//!
//! RocketMQ's BODYCRC covers the body only, and the record layout is kept
//! (Java tools and slaves read these files), so the header fields are
//! trusted through the cross-checks above instead of a CRC of their own.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use ferrocket_protocol::record::{self, RecordPeek, MAGIC_POS};

use crate::error::{IoContext, StoreError};

/// Directory under the store root that holds quarantined bytes.
pub const QUARANTINE_DIR: &str = "quarantine";
/// Most bytes of one damaged range copied into quarantine (the file name
/// still gives the whole range).
pub const QUARANTINE_COPY_BYTES_MAX: usize = 64 * 1024 * 1024;
const _: () = assert!(QUARANTINE_COPY_BYTES_MAX > 0);
/// The bytes every record's magic starts with (v1 and v2 differ after).
const MAGIC_PREFIX: [u8; 3] = [0xDA, 0xA3, 0x20];

/// A CommitLog range `[start, end)` that recovery found holding no valid
/// record and quarantined (see `damage`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DamagedRange {
    pub start: i64,
    pub end: i64,
}

impl DamagedRange {
    pub fn len_bytes(&self) -> i64 {
        self.end - self.start
    }

    /// Most records that can have been lost in the range.
    pub fn records_max(&self) -> i64 {
        self.len_bytes() / ferrocket_protocol::record::RECORD_BYTES_MIN as i64 + 1
    }
}

/// One CommitLog segment's bytes, as recovery maps them.
pub(crate) struct SegmentView<'a> {
    pub start: i64,
    pub bytes: &'a [u8],
    /// Its file: the search reads only its data extents. `None`: all of it.
    pub path: Option<&'a Path>,
}

impl SegmentView<'_> {
    fn end(&self) -> i64 {
        self.start + self.bytes.len() as i64
    }

    /// The byte ranges from `from` on that may hold a record: the file's
    /// data extents (a preallocated 1 GiB segment with a few records is
    /// searched in microseconds, not by reading a gigabyte of zeros).
    fn searchable(&self, from: usize) -> Vec<std::ops::Range<usize>> {
        let len = self.bytes.len();
        let whole = || std::iter::once(from..len).collect();
        let Some(file) = self.path.and_then(|p| fs::File::open(p).ok()) else {
            return whole();
        };
        crate::files::data_ranges(&file, from as u64, len as u64)
            .into_iter()
            .map(|r| r.start as usize..(r.end as usize).min(len))
            .collect()
    }
}

fn file_name(range: &DamagedRange) -> String {
    format!("{:020}-{:020}", range.start, range.end)
}

fn parse_file_name(name: &str) -> Option<DamagedRange> {
    let (start, end) = name.split_once('-')?;
    let range = DamagedRange {
        start: start.parse().ok()?,
        end: end.parse().ok()?,
    };
    (0 <= range.start && range.start < range.end).then_some(range)
}

/// Whether a whole, valid record starts at `pos` of `segment`.
fn record_at(segment: &SegmentView<'_>, pos: i64) -> bool {
    let at = (pos - segment.start) as usize;
    let bytes = &segment.bytes[at..];
    match record::peek_record(bytes) {
        Ok(RecordPeek::Message { total_size, .. }) if total_size <= bytes.len() => {
            record::decode_record(&bytes[..total_size], true)
                .is_ok_and(|view| view.physical_offset == pos)
        }
        _ => false,
    }
}

/// The first position after `bad` where a valid record starts, searching
/// this segment and every later one (records never span segments).
pub(crate) fn next_record(segments: &[SegmentView<'_>], bad: i64) -> Option<i64> {
    let first = segments
        .iter()
        .position(|s| s.start <= bad && bad < s.end())?;
    for segment in &segments[first..] {
        let at = if segment.start <= bad {
            (bad - segment.start) as usize + 1
        } else {
            0
        };
        for range in segment.searchable(at) {
            // A record's magic sits 4 bytes into it.
            let from = range.start.saturating_sub(MAGIC_POS).max(at);
            if let Some(found) = record_in(segment, from, range.end) {
                return Some(segment.start + found as i64);
            }
        }
    }
    None
}

/// The first valid record starting in `[at, end)` of `segment`.
fn record_in(segment: &SegmentView<'_>, mut at: usize, end: usize) -> Option<usize> {
    let bytes = segment.bytes;
    while at + MAGIC_POS < end {
        let from = at + MAGIC_POS;
        let found = memchr::memmem::find(&bytes[from..end], &MAGIC_PREFIX)?;
        let candidate = from + found - MAGIC_POS;
        if record_at(segment, segment.start + candidate as i64) {
            return Some(candidate);
        }
        at = candidate + 1;
    }
    None
}

fn quarantine_dir(root: &Path) -> PathBuf {
    root.join(QUARANTINE_DIR)
}

/// Copies the damaged range's bytes to `{root}/quarantine/START-END`
/// (at most [`QUARANTINE_COPY_BYTES_MAX`]) and fsyncs it.
pub(crate) fn quarantine(
    root: &Path,
    segments: &[SegmentView<'_>],
    range: DamagedRange,
) -> Result<PathBuf, StoreError> {
    let dir = quarantine_dir(root);
    fs::create_dir_all(&dir).io_context("create quarantine dir", &dir)?;
    let path = dir.join(file_name(&range));
    let mut file = fs::File::create(&path).io_context("create quarantine file", &path)?;
    let mut left = QUARANTINE_COPY_BYTES_MAX as i64;
    for segment in segments {
        let from = range.start.max(segment.start);
        let to = range.end.min(segment.end()).min(from + left);
        if from >= to {
            continue;
        }
        let bytes = &segment.bytes[(from - segment.start) as usize..(to - segment.start) as usize];
        file.write_all(bytes)
            .io_context("write quarantine file", &path)?;
        left -= to - from;
    }
    file.sync_all().io_context("fsync quarantine file", &path)?;
    crate::json_file::sync_dir(&dir)?;
    Ok(path)
}

/// Moves a whole CommitLog segment file into quarantine (as
/// `segment-NAME`), for a segment past the log's end that holds bytes.
pub(crate) fn quarantine_segment(root: &Path, segment: &Path) -> Result<PathBuf, StoreError> {
    let dir = quarantine_dir(root);
    fs::create_dir_all(&dir).io_context("create quarantine dir", &dir)?;
    let name = segment
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let kept = dir.join(format!("segment-{name}"));
    fs::rename(segment, &kept).io_context("quarantine segment", segment)?;
    crate::json_file::sync_dir(&dir)?;
    Ok(kept)
}

/// The ranges quarantined by earlier recoveries (from the file names).
pub(crate) fn load_ranges(root: &Path) -> Vec<DamagedRange> {
    let Ok(entries) = fs::read_dir(quarantine_dir(root)) else {
        return Vec::new();
    };
    let mut ranges: Vec<DamagedRange> = entries
        .flatten()
        .filter_map(|e| parse_file_name(e.file_name().to_str()?))
        .collect();
    ranges.sort_by_key(|r| r.start);
    ranges
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn range_file_names_round_trip() {
        let range = DamagedRange { start: 5, end: 900 };
        assert_eq!(parse_file_name(&file_name(&range)), Some(range));
        assert_eq!(parse_file_name("9-3"), None);
        assert_eq!(parse_file_name("x-3"), None);
        let min = ferrocket_protocol::record::RECORD_BYTES_MIN as i64;
        assert_eq!(range.records_max(), 895 / min + 1);
    }
}
