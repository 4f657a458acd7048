//! The timer log: append-only, memory-mapped segments of fixed 32-byte
//! records, named by their 20-digit start position like CommitLog segments.
//!
//! ```text
//! 0..4    crc32 of (position i64 BE ++ bytes 4..32)
//! 4..8    kind: > 0 ADD (the message's size) | -1 DONE | -2 HANDOUT
//!         | -3 TRUNCATE
//! 8..16   deliver_at_ms i64 (TRUNCATE: the CommitLog end)
//! 16..24  physical_offset i64 (CommitLog offset of the timer message;
//!         TRUNCATE: how many pending timers it dropped)
//! 24..32  prev i64: ADD: position of the previous ADD of the same second
//!         (the wheel slot's chain), -1 for none; otherwise -1
//! ```
//!
//! The CRC covers the record's position, so zeros, torn writes and bytes
//! left from another place all read as "end of log".

use std::fs;
use std::path::{Path, PathBuf};

use super::error::TimerError;
use crate::error::IoContext;
use crate::files::{self, list_offset_files, offset_file_name, AllocatedPrefix};

/// Bytes of one record.
pub const RECORD_BYTES: usize = 32;
// CRC (u32), kind or size (i32), then three i64s.
const _: () = assert!(RECORD_BYTES == size_of::<u32>() + size_of::<i32>() + 3 * size_of::<i64>());
// Segments hold whole records (the bounds live in `timer/mod.rs`, full).
const _: () = assert!(super::LOG_SEGMENT_BYTES_MIN % RECORD_BYTES as u64 == 0);
const _: () = assert!(super::LOG_SEGMENT_BYTES_MAX % RECORD_BYTES as u64 == 0);
const _: () = assert!(super::LOG_SEGMENT_BYTES_DEFAULT % RECORD_BYTES as u64 == 0);
const _: () = assert!(
    super::LOG_SEGMENT_BYTES_MIN <= super::LOG_SEGMENT_BYTES_DEFAULT
        && super::LOG_SEGMENT_BYTES_DEFAULT <= super::LOG_SEGMENT_BYTES_MAX
);
const KIND_DONE: i32 = -1;
const KIND_HANDOUT: i32 = -2;
const KIND_TRUNCATE: i32 = -3;

/// Ordering key of a timer: deliver time, then CommitLog offset (unique).
pub(crate) type Key = (i64, i64);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Record {
    Add {
        deliver_at_ms: i64,
        physical_offset: i64,
        size: i32,
        prev: i64,
    },
    Done {
        key: Key,
    },
    Handout {
        key: Key,
    },
    /// The CommitLog was recovered to `commitlog_end`: every ADD written
    /// before this record with a physical offset at or after it is dead;
    /// `dropped` of them were pending.
    Truncate {
        commitlog_end: i64,
        dropped: i64,
    },
}

impl Record {
    fn encode(&self, pos: i64) -> [u8; RECORD_BYTES] {
        let (kind, at, phy, prev) = match *self {
            Record::Add {
                deliver_at_ms,
                physical_offset,
                size,
                prev,
            } => (size, deliver_at_ms, physical_offset, prev),
            Record::Done { key } => (KIND_DONE, key.0, key.1, -1),
            Record::Handout { key } => (KIND_HANDOUT, key.0, key.1, -1),
            Record::Truncate {
                commitlog_end,
                dropped,
            } => (KIND_TRUNCATE, commitlog_end, dropped, -1),
        };
        let mut out = [0u8; RECORD_BYTES];
        out[4..8].copy_from_slice(&kind.to_be_bytes());
        out[8..16].copy_from_slice(&at.to_be_bytes());
        out[16..24].copy_from_slice(&phy.to_be_bytes());
        out[24..32].copy_from_slice(&prev.to_be_bytes());
        let crc = record_crc(pos, &out);
        out[0..4].copy_from_slice(&crc.to_be_bytes());
        out
    }

    /// `None` for anything that is not a record written at `pos`.
    fn decode(pos: i64, buf: &[u8]) -> Option<Self> {
        if buf.len() != RECORD_BYTES {
            return None;
        }
        let i32_at = |at: usize| {
            let mut b = [0u8; 4];
            b.copy_from_slice(&buf[at..at + 4]);
            i32::from_be_bytes(b)
        };
        let i64_at = |at: usize| {
            let mut b = [0u8; 8];
            b.copy_from_slice(&buf[at..at + 8]);
            i64::from_be_bytes(b)
        };
        if i32_at(0) as u32 != record_crc(pos, buf) {
            return None;
        }
        let (kind, at, phy, prev) = (i32_at(4), i64_at(8), i64_at(16), i64_at(24));
        if at < 0 || phy < 0 {
            return None;
        }
        match kind {
            size if size > 0 => (prev >= -1 && prev < pos).then_some(Record::Add {
                deliver_at_ms: at,
                physical_offset: phy,
                size,
                prev,
            }),
            KIND_DONE => Some(Record::Done { key: (at, phy) }),
            KIND_HANDOUT => Some(Record::Handout { key: (at, phy) }),
            KIND_TRUNCATE => Some(Record::Truncate {
                commitlog_end: at,
                dropped: phy,
            }),
            _ => None,
        }
    }
}

fn record_crc(pos: i64, record: &[u8]) -> u32 {
    let mut hasher = crc32fast::Hasher::new();
    hasher.update(&pos.to_be_bytes());
    hasher.update(&record[4..RECORD_BYTES]);
    hasher.finalize()
}

pub(crate) struct Segment {
    pub start: i64,
    path: PathBuf,
    file: fs::File,
    map: memmap2::MmapMut,
    /// Blocks exist below this: records are stored only there.
    allocated: AllocatedPrefix,
    dirty: bool,
    /// Latest deliver second of the ADDs in this segment (-1: none).
    pub max_second: i64,
}

pub(crate) struct TimerLog {
    dir: PathBuf,
    segment_bytes: u64,
    pub segments: Vec<Segment>,
    /// Position of the next record.
    end: i64,
}

impl TimerLog {
    /// Maps the existing segments; the end is set by [`TimerLog::scan`].
    pub fn open(dir: &Path, segment_bytes: u64) -> Result<Self, TimerError> {
        debug_assert!(segment_bytes % RECORD_BYTES as u64 == 0);
        fs::create_dir_all(dir).io_context("create timer log dir", dir)?;
        let files = list_offset_files(dir).map_err(|e| TimerError::corrupt(dir, e.to_string()))?;
        let mut segments: Vec<Segment> = Vec::with_capacity(files.len());
        for (start, path) in files {
            if start as u64 % segment_bytes != 0 {
                return Err(TimerError::corrupt(
                    &path,
                    "segment does not start at a segment boundary",
                ));
            }
            if let Some(prev) = segments.last() {
                if prev.start + segment_bytes as i64 != start {
                    return Err(TimerError::corrupt(
                        &path,
                        "timer log segments are not contiguous",
                    ));
                }
            }
            segments.push(map_segment(&path, start, segment_bytes, false)?);
        }
        advise_tail(&segments);
        let end = segments.first().map_or(0, |s| s.start);
        Ok(Self {
            dir: dir.to_path_buf(),
            segment_bytes,
            segments,
            end,
        })
    }

    /// Position of the first retained record (the end when empty).
    pub fn start(&self) -> i64 {
        self.segments.first().map_or(self.end, |s| s.start)
    }

    pub fn end(&self) -> i64 {
        self.end
    }

    fn segment_index(&self, pos: i64) -> Option<usize> {
        let first = self.segments.first()?.start;
        if pos < first {
            return None;
        }
        usize::try_from((pos - first) as u64 / self.segment_bytes).ok()
    }

    fn raw(&self, pos: i64) -> Option<&[u8]> {
        let seg = self.segments.get(self.segment_index(pos)?)?;
        let at = usize::try_from(pos - seg.start).ok()?;
        seg.map.get(at..at + RECORD_BYTES)
    }

    /// The record at `pos` (below the end), verified.
    pub fn read(&self, pos: i64) -> Result<Record, TimerError> {
        if pos < self.start() || pos >= self.end || pos % RECORD_BYTES as i64 != 0 {
            return Err(TimerError::corrupt(
                &self.dir,
                format!(
                    "position {pos} outside the log {}..{}",
                    self.start(),
                    self.end
                ),
            ));
        }
        self.raw(pos)
            .and_then(|buf| Record::decode(pos, buf))
            .ok_or_else(|| TimerError::corrupt(&self.dir, format!("bad record at {pos}")))
    }

    /// Visits every valid record from `from` on and sets the end to the
    /// first invalid one; everything after it is zeroed or removed. An
    /// invalid record before `must_reach` (durable data) is an error and
    /// nothing is removed.
    pub fn scan(
        &mut self,
        from: i64,
        must_reach: i64,
        mut visit: impl FnMut(i64, Record),
    ) -> Result<(), TimerError> {
        let first = self.segments.first().map(|s| s.start);
        let last_end = self
            .segments
            .last()
            .map(|s| s.start + self.segment_bytes as i64);
        match (first, last_end) {
            (None, _) if from == 0 => {
                self.end = 0;
                return Ok(());
            }
            (Some(first), Some(last_end))
                if from >= first && from <= last_end && from % RECORD_BYTES as i64 == 0 => {}
            _ => {
                return Err(TimerError::corrupt(
                    &self.dir,
                    format!(
                        "recovery position {from} is not a record boundary inside the timer log"
                    ),
                ))
            }
        }
        let mut pos = from;
        while let Some(record) = self.raw(pos).and_then(|buf| Record::decode(pos, buf)) {
            visit(pos, record);
            pos += RECORD_BYTES as i64;
        }
        if pos < must_reach {
            return Err(TimerError::corrupt(
                &self.dir,
                format!("bad record at {pos}, below the durable position {must_reach}"),
            ));
        }
        self.end = pos;
        self.truncate_after_end()
    }

    fn truncate_after_end(&mut self) -> Result<(), TimerError> {
        assert!(self.end >= 0, "a timer log end below zero");
        while let Some(last) = self.segments.last() {
            if last.start > self.end {
                if let Some(seg) = self.segments.pop() {
                    let path = seg.path.clone();
                    drop(seg);
                    fs::remove_file(&path).io_context("remove timer log segment", &path)?;
                }
                continue;
            }
            break;
        }
        let end = self.end;
        if let Some(seg) = self.segments.last_mut() {
            let from = usize::try_from(end - seg.start)
                .unwrap_or(usize::MAX)
                .min(seg.map.len());
            if seg.map[from..].iter().any(|b| *b != 0) {
                seg.map[from..].fill(0);
                seg.dirty = true;
            }
        }
        assert!(
            self.segments
                .last()
                .map_or(true, |last| last.start <= self.end),
            "no segment past the end stays"
        );
        Ok(())
    }

    /// Appends a record, rolling to a new segment at a boundary.
    pub fn append(&mut self, record: Record) -> Result<i64, TimerError> {
        let pos = self.end;
        let needs_segment = match self.segments.last() {
            Some(seg) => pos >= seg.start + self.segment_bytes as i64,
            None => true,
        };
        if needs_segment {
            let start = pos - pos.rem_euclid(self.segment_bytes as i64);
            let path = self.dir.join(offset_file_name(start));
            self.segments
                .push(map_segment(&path, start, self.segment_bytes, true)?);
            advise_tail(&self.segments);
        }
        let Some(seg) = self.segments.last_mut() else {
            return Err(TimerError::corrupt(&self.dir, "no timer log segment"));
        };
        assert!(pos >= seg.start, "a timer record lands in the last segment");
        let at = (pos - seg.start) as usize;
        if at + RECORD_BYTES > seg.map.len() {
            return Err(TimerError::corrupt(
                &seg.path,
                format!("append at {pos} outside segment"),
            ));
        }
        seg.allocated
            .cover(&seg.file, (at + RECORD_BYTES) as u64, seg.map.len() as u64)
            .io_context("allocate timer log segment", &seg.path)?;
        let dst = &mut seg.map[at..at + RECORD_BYTES];
        dst.copy_from_slice(&record.encode(pos));
        seg.dirty = true;
        if let Record::Add { deliver_at_ms, .. } = record {
            seg.max_second = seg.max_second.max(deliver_at_ms.div_euclid(1000));
        }
        self.end = pos + RECORD_BYTES as i64;
        debug_assert!(
            self.end <= seg.start + self.segment_bytes as i64,
            "a record stays in its segment"
        );
        Ok(pos)
    }

    /// Records that the segment holding `pos` has an ADD for `second`.
    pub fn note_second(&mut self, pos: i64, second: i64) {
        if let Some(index) = self.segment_index(pos) {
            if let Some(seg) = self.segments.get_mut(index) {
                seg.max_second = seg.max_second.max(second);
            }
        }
    }

    /// msyncs the segments written since the last sync (blocking).
    pub fn sync(&mut self) -> Result<(), TimerError> {
        for seg in self.segments.iter_mut().filter(|s| s.dirty) {
            seg.map.flush().io_context("msync timer log", &seg.path)?;
            seg.dirty = false;
        }
        Ok(())
    }

    /// Deletes the leading segments that end at or before `below` and hold
    /// no ADD for `live_second` or later. The last segment stays.
    pub fn remove_dead_segments(
        &mut self,
        below: i64,
        live_second: i64,
    ) -> Result<usize, TimerError> {
        let mut removed = 0;
        while self.segments.len() > 1 {
            let seg = &self.segments[0];
            if seg.start + self.segment_bytes as i64 > below || seg.max_second >= live_second {
                break;
            }
            let seg = self.segments.remove(0);
            let path = seg.path.clone();
            drop(seg);
            fs::remove_file(&path).io_context("remove timer log segment", &path)?;
            removed += 1;
        }
        Ok(removed)
    }
}

/// See [`files::advise_tail`].
fn advise_tail(segments: &[Segment]) {
    files::advise_tail(segments, |f| (&f.map, &f.path));
}

fn map_segment(path: &Path, start: i64, bytes: u64, create: bool) -> Result<Segment, TimerError> {
    let file = fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(create)
        .open(path)
        .io_context("open timer log segment", path)?;
    if create {
        file.set_len(bytes)
            .io_context("size timer log segment", path)?;
    }
    let len = file
        .metadata()
        .io_context("stat timer log segment", path)?
        .len();
    if len != bytes {
        return Err(TimerError::corrupt(
            path,
            format!("segment has {len} bytes, expected {bytes}"),
        ));
    }
    // SAFETY: the segment belongs to this store (one owner thread) and is
    // never truncated while mapped.
    let map =
        unsafe { memmap2::MmapMut::map_mut(&file) }.io_context("mmap timer log segment", path)?;
    Ok(Segment {
        start,
        path: path.to_path_buf(),
        file,
        map,
        allocated: AllocatedPrefix::default(),
        dirty: create,
        max_second: -1,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_and_bind_to_their_position() {
        let add = Record::Add {
            deliver_at_ms: 1_234,
            physical_offset: 99,
            size: 300,
            prev: 32,
        };
        let bytes = add.encode(64);
        assert_eq!(Record::decode(64, &bytes), Some(add));
        assert_eq!(Record::decode(96, &bytes), None);
        assert_eq!(Record::decode(0, &[0u8; RECORD_BYTES]), None);
        let done = Record::Done { key: (5, 6) };
        assert_eq!(Record::decode(0, &done.encode(0)), Some(done));
        let truncate = Record::Truncate {
            commitlog_end: 4_096,
            dropped: 3,
        };
        assert_eq!(Record::decode(32, &truncate.encode(32)), Some(truncate));
        let mut torn = bytes;
        torn[20] ^= 0x40;
        assert_eq!(Record::decode(64, &torn), None);
    }

    #[test]
    fn appends_roll_and_scan_stops_at_damage() {
        let dir = tempfile::tempdir().unwrap();
        let seg = 4 * RECORD_BYTES as u64;
        let mut log = TimerLog::open(dir.path(), seg).unwrap();
        log.scan(0, 0, |_, _| {}).unwrap();
        for n in 0..10i64 {
            let pos = log.append(Record::Done { key: (n, n) }).unwrap();
            assert_eq!(pos, n * RECORD_BYTES as i64);
        }
        assert_eq!(log.segments.len(), 3);
        assert_eq!(log.read(96).unwrap(), Record::Done { key: (3, 3) });
        assert!(log.read(320).is_err());
        // Damage record 6: a rescan ends there and drops what follows.
        log.segments[1].map[2 * RECORD_BYTES + 9] ^= 1;
        drop(log);
        let mut log = TimerLog::open(dir.path(), seg).unwrap();
        let mut seen = 0;
        log.scan(0, 0, |_, _| seen += 1).unwrap();
        assert_eq!(seen, 6);
        assert_eq!(log.end(), 6 * RECORD_BYTES as i64);
        assert_eq!(log.segments.len(), 2);
        assert_eq!(log.append(Record::Done { key: (0, 0) }).unwrap(), 192);
        assert!(log.scan(10_000, 0, |_, _| {}).is_err());
        // A recovery position between records (from disk) is refused: the
        // end would be misaligned and every later append with it.
        assert!(log.scan(RECORD_BYTES as i64 + 1, 0, |_, _| {}).is_err());
        assert!(log.scan(0, 320, |_, _| {}).is_err());
        assert_eq!(log.end(), 7 * RECORD_BYTES as i64);
    }
}
