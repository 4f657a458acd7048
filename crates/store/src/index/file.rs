//! One IndexFile (RocketMQ `IndexFile` + `IndexHeader`), memory-mapped:
//!
//! ```text
//! header   40 bytes: beginTimestamp i64 | endTimestamp i64 | beginPhyOffset i64
//!                    | endPhyOffset i64 | hashSlotCount i32 | indexCount i32
//! slots    hash_slots x 4 bytes: newest entry number of the slot (0: empty)
//! entries  entries_per_file x 20 bytes: key hash i32 | CommitLog offset i64
//!                    | seconds since beginTimestamp i32 | previous entry i32
//! ```
//!
//! Big-endian, the same layout as RocketMQ. Entry number 0 is never used
//! (0 means "none"), so `indexCount` starts at 1 and a file holds
//! `entries_per_file - 1` entries. Each slot heads a chain through the
//! `previous` fields, newest first.
//!
//! Nothing read from the map is trusted: slot and chain numbers are checked
//! against `indexCount`, and a chain must go strictly backwards, so a damaged
//! file gives wrong candidates (the caller verifies keys) but never a panic
//! or an endless walk.

use std::fs;
use std::path::{Path, PathBuf};

use super::error::IndexError;
use crate::error::IoContext;
use crate::files::{advise, AllocatedPrefix, MapUse};

pub(crate) const HEADER_BYTES: usize = 40;
pub(crate) const SLOT_BYTES: usize = 4;
pub(crate) const ENTRY_BYTES: usize = 20;
/// Entry number meaning "no entry" (`invalidIndex`).
const NO_ENTRY: i32 = 0;
/// Stored times are whole seconds after `beginTimestamp`, rounded down, so
/// an entry's real time lies in `[stored, stored + this]`.
pub(crate) const TIME_DIFF_SLACK_MS: i64 = 999;

const BEGIN_TS_AT: usize = 0;
const END_TS_AT: usize = 8;
const BEGIN_PHY_AT: usize = 16;
const END_PHY_AT: usize = 24;
const USED_SLOTS_AT: usize = 32;
const INDEX_COUNT_AT: usize = 36;
// Java's IndexHeader: four i64s, then two i32s; a slot is an i32; an
// entry is the key hash (i32), the CommitLog offset (i64), the time
// difference in seconds (i32) and the previous entry (i32).
const _: () = assert!(END_TS_AT == BEGIN_TS_AT + 8 && BEGIN_PHY_AT == END_TS_AT + 8);
const _: () = assert!(END_PHY_AT == BEGIN_PHY_AT + 8 && USED_SLOTS_AT == END_PHY_AT + 8);
const _: () = assert!(INDEX_COUNT_AT == USED_SLOTS_AT + 4 && HEADER_BYTES == INDEX_COUNT_AT + 4);
const _: () = assert!(SLOT_BYTES == size_of::<i32>());
const _: () = assert!(ENTRY_BYTES == 3 * size_of::<i32>() + size_of::<i64>());

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Header {
    pub begin_ts: i64,
    pub end_ts: i64,
    pub begin_phy: i64,
    pub end_phy: i64,
    pub used_slots: i32,
    /// Next entry number to write (1 when empty).
    pub index_count: i32,
}

pub(crate) struct IndexFile {
    pub path: PathBuf,
    /// Creation time encoded in the file name.
    pub name_ms: i64,
    file: fs::File,
    map: memmap2::MmapMut,
    /// Blocks exist below this: the header and hash slots from creation
    /// (they are written anywhere), the entries as they fill.
    allocated: AllocatedPrefix,
    slots: u32,
    entries: u32,
    pub header: Header,
    dirty: bool,
}

fn read_i32(map: &[u8], at: usize) -> i32 {
    let mut b = [0u8; 4];
    if let Some(src) = map.get(at..at + 4) {
        b.copy_from_slice(src);
    }
    i32::from_be_bytes(b)
}

fn read_i64(map: &[u8], at: usize) -> i64 {
    let mut b = [0u8; 8];
    if let Some(src) = map.get(at..at + 8) {
        b.copy_from_slice(src);
    }
    i64::from_be_bytes(b)
}

fn write_bytes(map: &mut [u8], at: usize, bytes: &[u8]) {
    if let Some(dst) = map.get_mut(at..at + bytes.len()) {
        dst.copy_from_slice(bytes);
    }
}

/// One decoded entry.
#[derive(Debug, Clone, Copy)]
struct Entry {
    hash: i32,
    phy: i64,
    diff_s: i32,
    prev: i32,
}

/// Bytes of a file with these counts.
pub(crate) fn file_bytes(slots: u32, entries: u32) -> u64 {
    HEADER_BYTES as u64
        + u64::from(slots) * SLOT_BYTES as u64
        + u64::from(entries) * ENTRY_BYTES as u64
}

impl IndexFile {
    /// Creates a new file; a rolled file starts its header at the previous
    /// file's end, as RocketMQ does.
    pub fn create(
        path: &Path,
        name_ms: i64,
        slots: u32,
        entries: u32,
        prev_end_phy: i64,
        prev_end_ts: i64,
    ) -> Result<Self, IndexError> {
        let file = fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(path)
            .io_context("create index file", path)?;
        file.set_len(file_bytes(slots, entries))
            .io_context("size index file", path)?;
        let mut this = Self::map(path, name_ms, file, slots, entries)?;
        this.header = Header {
            begin_ts: prev_end_ts.max(0),
            end_ts: prev_end_ts.max(0),
            begin_phy: prev_end_phy.max(0),
            end_phy: prev_end_phy.max(0),
            used_slots: 0,
            index_count: 1,
        };
        this.write_header();
        Ok(this)
    }

    /// Opens an existing file and checks its size and header.
    pub fn open(path: &Path, name_ms: i64, slots: u32, entries: u32) -> Result<Self, IndexError> {
        let file = fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .io_context("open index file", path)?;
        let actual = file.metadata().io_context("stat index file", path)?.len();
        let expected = file_bytes(slots, entries);
        if actual != expected {
            return Err(IndexError::SizeMismatch {
                path: path.display().to_string(),
                expected_bytes: expected,
                actual_bytes: actual,
            });
        }
        let mut this = Self::map(path, name_ms, file, slots, entries)?;
        let map = &this.map[..];
        let mut header = Header {
            begin_ts: read_i64(map, BEGIN_TS_AT),
            end_ts: read_i64(map, END_TS_AT),
            begin_phy: read_i64(map, BEGIN_PHY_AT),
            end_phy: read_i64(map, END_PHY_AT),
            used_slots: read_i32(map, USED_SLOTS_AT),
            index_count: read_i32(map, INDEX_COUNT_AT),
        };
        if header.index_count <= 0 {
            header.index_count = 1; // IndexHeader.load does the same
        }
        if i64::from(header.index_count) > i64::from(entries) {
            return Err(IndexError::corrupt(
                path,
                format!(
                    "index count {} exceeds {entries} entries",
                    header.index_count
                ),
            ));
        }
        if header.begin_phy < 0 || header.end_phy < header.begin_phy {
            return Err(IndexError::corrupt(
                path,
                format!(
                    "physical offsets {}..{} are invalid",
                    header.begin_phy, header.end_phy
                ),
            ));
        }
        header.used_slots = header
            .used_slots
            .clamp(0, slots.min(i32::MAX as u32) as i32);
        this.header = header;
        Ok(this)
    }

    fn map(
        path: &Path,
        name_ms: i64,
        file: fs::File,
        slots: u32,
        entries: u32,
    ) -> Result<Self, IndexError> {
        // SAFETY: the file belongs to this service (one owner thread) and is
        // never truncated while mapped.
        let map =
            unsafe { memmap2::MmapMut::map_mut(&file) }.io_context("mmap index file", path)?;
        advise(&map, path, MapUse::Written);
        let slots_end = HEADER_BYTES as u64 + u64::from(slots) * SLOT_BYTES as u64;
        let mut allocated = AllocatedPrefix::default();
        allocated
            .cover(&file, slots_end, file_bytes(slots, entries))
            .io_context("allocate index file", path)?;
        Ok(Self {
            path: path.to_path_buf(),
            name_ms,
            file,
            map,
            allocated,
            slots,
            entries,
            header: Header::default(),
            dirty: true,
        })
    }

    fn write_header(&mut self) {
        let h = self.header;
        let map = &mut self.map[..];
        write_bytes(map, BEGIN_TS_AT, &h.begin_ts.to_be_bytes());
        write_bytes(map, END_TS_AT, &h.end_ts.to_be_bytes());
        write_bytes(map, BEGIN_PHY_AT, &h.begin_phy.to_be_bytes());
        write_bytes(map, END_PHY_AT, &h.end_phy.to_be_bytes());
        write_bytes(map, USED_SLOTS_AT, &h.used_slots.to_be_bytes());
        write_bytes(map, INDEX_COUNT_AT, &h.index_count.to_be_bytes());
        self.dirty = true;
    }

    fn slot_at(&self, hash: i32) -> usize {
        HEADER_BYTES + (hash.unsigned_abs() % self.slots) as usize * SLOT_BYTES
    }

    fn entry_at(&self, number: i32) -> usize {
        HEADER_BYTES + self.slots as usize * SLOT_BYTES + number.max(0) as usize * ENTRY_BYTES
    }

    fn read_entry(&self, number: i32) -> Entry {
        let at = self.entry_at(number);
        Entry {
            hash: read_i32(&self.map, at),
            phy: read_i64(&self.map, at + 4),
            diff_s: read_i32(&self.map, at + 12),
            prev: read_i32(&self.map, at + 16),
        }
    }

    /// Entries stored.
    pub fn entry_count(&self) -> u32 {
        (self.header.index_count - 1).max(0) as u32
    }

    /// No room for another entry (`isWriteFull`).
    pub fn is_full(&self) -> bool {
        i64::from(self.header.index_count) >= i64::from(self.entries)
    }

    /// Gives the next entry's bytes real blocks, so that [`IndexFile::put`]
    /// cannot fault on a full disk.
    pub fn reserve_next(&mut self) -> Result<(), IndexError> {
        let end = self.entry_at(self.header.index_count) + ENTRY_BYTES;
        let file_bytes = self.map.len() as u64;
        self.allocated
            .cover(&self.file, (end as u64).min(file_bytes), file_bytes)
            .io_context("allocate index file", &self.path)?;
        Ok(())
    }

    /// Adds one entry; `false` when the file is full.
    pub fn put(&mut self, hash: i32, phy: i64, ts: i64) -> bool {
        debug_assert!(hash >= 0 && phy >= 0);
        if self.is_full() {
            return false;
        }
        let number = self.header.index_count;
        assert!(number >= 1, "entry 0 is never used");
        let slot_at = self.slot_at(hash);
        let mut prev = read_i32(&self.map, slot_at);
        if prev <= NO_ENTRY || prev >= number {
            prev = NO_ENTRY;
        }
        if number == 1 {
            self.header.begin_ts = ts;
            self.header.begin_phy = phy;
        }
        let diff_s = ((ts - self.header.begin_ts) / 1000).clamp(0, i64::from(i32::MAX)) as i32;
        let at = self.entry_at(number);
        let map = &mut self.map[..];
        write_bytes(map, at, &hash.to_be_bytes());
        write_bytes(map, at + 4, &phy.to_be_bytes());
        write_bytes(map, at + 12, &diff_s.to_be_bytes());
        write_bytes(map, at + 16, &prev.to_be_bytes());
        write_bytes(map, slot_at, &number.to_be_bytes());
        if prev == NO_ENTRY {
            self.header.used_slots += 1;
        }
        self.header.index_count += 1;
        self.header.end_phy = phy;
        self.header.end_ts = ts;
        self.write_header();
        true
    }

    /// Whether `[begin, end]` overlaps the times this file holds.
    pub fn time_matches(&self, begin: i64, end: i64) -> bool {
        self.entry_count() > 0 && begin <= self.header.end_ts && end >= self.header.begin_ts
    }

    /// Appends to `out` (up to `max` in all) the offsets of entries with
    /// `hash` stored in `[begin, end]`, newest first (`selectPhyOffset`).
    pub fn select(&self, hash: i32, max: usize, begin: i64, end: i64, out: &mut Vec<i64>) {
        let count = self.header.index_count;
        if count <= 1 {
            return;
        }
        let mut number = read_i32(&self.map, self.slot_at(hash));
        if number <= NO_ENTRY || number >= count {
            return;
        }
        while out.len() < max {
            let entry = self.read_entry(number);
            if entry.diff_s < 0 {
                break; // damaged entry
            }
            let time = self.header.begin_ts + i64::from(entry.diff_s) * 1000;
            let in_range = time + TIME_DIFF_SLACK_MS >= begin && time <= end;
            if entry.hash == hash && in_range && entry.phy >= 0 && !out.contains(&entry.phy) {
                out.push(entry.phy);
            }
            // Chains only go backwards; anything else is damage.
            if entry.prev <= NO_ENTRY || entry.prev >= number || time + TIME_DIFF_SLACK_MS < begin {
                break;
            }
            number = entry.prev;
        }
    }

    /// Removes the trailing entries whose CommitLog offset is at or past
    /// `phy`, restoring each slot to its previous chain head. Returns how
    /// many were removed.
    pub fn truncate_from(&mut self, phy: i64) -> usize {
        let before = self.header.index_count;
        let mut removed = 0;
        while self.header.index_count > 1 {
            let number = self.header.index_count - 1;
            let entry = self.read_entry(number);
            if entry.phy < phy {
                break;
            }
            let slot_at = self.slot_at(entry.hash);
            if read_i32(&self.map, slot_at) == number {
                let restored = if entry.prev > NO_ENTRY && entry.prev < number {
                    entry.prev
                } else {
                    NO_ENTRY
                };
                write_bytes(&mut self.map, slot_at, &restored.to_be_bytes());
                if restored == NO_ENTRY {
                    self.header.used_slots = (self.header.used_slots - 1).max(0);
                }
            }
            let at = self.entry_at(number);
            write_bytes(&mut self.map, at, &[0u8; ENTRY_BYTES]);
            self.header.index_count -= 1;
            removed += 1;
        }
        if removed > 0 {
            if self.header.index_count > 1 {
                let last = self.read_entry(self.header.index_count - 1);
                self.header.end_phy = last.phy.max(self.header.begin_phy);
                self.header.end_ts = self.header.begin_ts + i64::from(last.diff_s.max(0)) * 1000;
            } else {
                self.header.end_phy = self.header.begin_phy;
                self.header.end_ts = self.header.begin_ts;
            }
            self.write_header();
        }
        assert!(
            (1..=before.max(1)).contains(&self.header.index_count),
            "a truncation keeps entry 0's place and never grows"
        );
        debug_assert_eq!(
            i64::from(before.max(1) - self.header.index_count),
            removed as i64
        );
        removed
    }

    /// msyncs the file if written since the last flush.
    pub fn flush(&mut self) -> Result<(), IndexError> {
        if self.dirty {
            self.map
                .flush()
                .io_context("msync index file", &self.path)?;
            self.dirty = false;
        }
        Ok(())
    }

    /// A handle for an fdatasync elsewhere, if written since the last call.
    pub fn take_dirty(&mut self) -> Result<Option<fs::File>, IndexError> {
        if !self.dirty {
            return Ok(None);
        }
        let handle = self
            .file
            .try_clone()
            .io_context("dup index file", &self.path)?;
        self.dirty = false;
        Ok(Some(handle))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_index_file_is_mapped_without_read_around() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("20261205000000000");
        let file = IndexFile::create(&path, 0, 64, 256, 0, 0).unwrap();
        assert_eq!(crate::files::mapped_for_random_reads(&path), Some(true));
        drop(file);
        assert_eq!(crate::files::mapped_for_random_reads(&path), None);
    }
}
