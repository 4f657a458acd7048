//! One ConsumeQueue entry as it lies in a file: 20 bytes, big-endian
//! CommitLog offset (i64), record size (i32) and tags code (i64).

/// Bytes of one entry (`CQ_STORE_UNIT_SIZE`).
pub const CQ_ENTRY_BYTES: usize = 20;
const _: () = assert!(CQ_ENTRY_BYTES == size_of::<i64>() + size_of::<i32>() + size_of::<i64>());
/// Tags code of a lost entry (see [`CqEntry::lost`]).
pub const LOST_TAGS_CODE: i64 = i64::MIN;
// A default file is Java's (`mappedFileSizeConsumeQueue`, 300,000 entries).
const _: () =
    assert!(crate::config::CQ_ENTRIES_PER_FILE_DEFAULT * CQ_ENTRY_BYTES as u64 == 6_000_000);

/// One ConsumeQueue entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CqEntry {
    pub physical_offset: i64,
    pub size: i32,
    pub tags_code: i64,
}

impl CqEntry {
    pub(super) fn encode(&self, out: &mut [u8]) {
        out[0..8].copy_from_slice(&self.physical_offset.to_be_bytes());
        out[8..12].copy_from_slice(&self.size.to_be_bytes());
        out[12..20].copy_from_slice(&self.tags_code.to_be_bytes());
    }

    pub(super) fn decode(buf: &[u8]) -> Self {
        let mut off = [0u8; 8];
        off.copy_from_slice(&buf[0..8]);
        let mut size = [0u8; 4];
        size.copy_from_slice(&buf[8..12]);
        let mut tags = [0u8; 8];
        tags.copy_from_slice(&buf[12..20]);
        Self {
            physical_offset: i64::from_be_bytes(off),
            size: i32::from_be_bytes(size),
            tags_code: i64::from_be_bytes(tags),
        }
    }

    /// The entry of a queue offset whose record recovery found damaged
    /// (it lay in a quarantined CommitLog range starting at
    /// `physical_offset`): it keeps the queue's offsets dense, and readers
    /// skip it as they skip a message retention removed.
    pub fn lost(physical_offset: i64) -> Self {
        Self {
            physical_offset,
            size: 0,
            tags_code: LOST_TAGS_CODE,
        }
    }

    /// Whether this is a [`CqEntry::lost`] entry.
    pub fn is_lost(&self) -> bool {
        self.size == 0 && self.tags_code == LOST_TAGS_CODE && self.physical_offset >= 0
    }

    /// A written entry (`offset >= 0 && size > 0`, or lost); zeros mean
    /// never written.
    pub(super) fn is_valid(&self) -> bool {
        self.physical_offset >= 0 && (self.size > 0 || self.is_lost())
    }

    /// CommitLog position just past the record. Saturating: an entry read
    /// from a damaged file may hold any offset, and must not overflow.
    pub fn end(&self) -> i64 {
        self.physical_offset.saturating_add(i64::from(self.size))
    }
}
