//! The time wheel: one slot per second, `slots` of them, slot `s % slots`
//! holding the newest ADD position of second `s` (the head of that
//! second's chain in the timer log). 16 bytes a slot, in memory and in the
//! `wheel` file (`second i64 | head i64`, big-endian; head -1: empty).
//!
//! The file is written only by [`Wheel::persist`], after the timer log has
//! been synced, so every head on disk points at a durable record. Recovery
//! replays the log after the checkpoint on top of it.

use std::fs;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use super::error::TimerError;
use crate::error::IoContext;

const SLOT_BYTES: usize = 16;
const _: () = assert!(SLOT_BYTES == 2 * size_of::<i64>());
// The largest wheel is 256 MiB, as its limit's doc says.
const _: () = assert!(super::WHEEL_SLOTS_MAX as usize * SLOT_BYTES == 256 << 20);
const _: () = assert!(super::DUE_BATCH_MAX > 0);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Slot {
    pub second: i64,
    pub head: i64,
}

const EMPTY: Slot = Slot {
    second: -1,
    head: -1,
};

impl Slot {
    pub fn is_empty(&self) -> bool {
        self.head < 0
    }
}

pub(crate) struct Wheel {
    path: PathBuf,
    file: fs::File,
    slots: Vec<Slot>,
    /// One bit per slot changed since the last persist.
    dirty: Vec<u64>,
    dirty_count: usize,
}

/// Gives a new wheel file its blocks now, so that its first persist (the
/// whole wheel, megabytes) never finds a nearly full disk and takes its
/// last free bytes with a half-written file. Without room the file stays
/// sparse (what a failed `fallocate` did take, which some file systems
/// keep, is given back): the broker still starts, and persists fail (and
/// are retried) until space is freed.
fn allocate_blocks(file: &fs::File, path: &Path, bytes: u64) {
    let Err(error) = crate::files::allocate(file, 0, bytes) else {
        return;
    };
    tracing::warn!(path = %path.display(), %error, "cannot allocate the timer wheel's blocks");
    let sparse = file.set_len(0).and_then(|()| file.set_len(bytes));
    if let Err(error) = sparse {
        tracing::warn!(path = %path.display(), %error, "cannot size the timer wheel");
    }
}

impl Wheel {
    /// Opens the wheel file; its contents are used only when `load` and the
    /// file has exactly `count` slots. Returns whether they were loaded.
    pub fn open(path: &Path, count: u32, load: bool) -> Result<(Self, bool), TimerError> {
        let file = fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .io_context("open timer wheel", path)?;
        let bytes = u64::from(count) * SLOT_BYTES as u64;
        let len = file.metadata().io_context("stat timer wheel", path)?.len();
        let mut slots = vec![EMPTY; count as usize];
        let loaded = load && len == bytes;
        if loaded {
            let mut buf = vec![0u8; bytes as usize];
            file.read_exact_at(&mut buf, 0)
                .io_context("read timer wheel", path)?;
            for (slot, raw) in slots.iter_mut().zip(buf.chunks_exact(SLOT_BYTES)) {
                let mut second = [0u8; 8];
                second.copy_from_slice(&raw[0..8]);
                let mut head = [0u8; 8];
                head.copy_from_slice(&raw[8..16]);
                *slot = Slot {
                    second: i64::from_be_bytes(second),
                    head: i64::from_be_bytes(head),
                };
                if slot.head < 0 || slot.second < 0 {
                    *slot = EMPTY;
                }
            }
        } else if len != bytes {
            file.set_len(bytes).io_context("size timer wheel", path)?;
            allocate_blocks(&file, path, bytes);
        }
        let mut wheel = Self {
            path: path.to_path_buf(),
            file,
            slots,
            dirty: vec![0; (count as usize).div_ceil(64)],
            dirty_count: 0,
        };
        if !loaded {
            wheel.mark_all_dirty();
        }
        Ok((wheel, loaded))
    }

    pub fn len(&self) -> usize {
        self.slots.len()
    }

    fn index(&self, second: i64) -> usize {
        second.rem_euclid(self.slots.len() as i64) as usize
    }

    /// The slot second `second` maps to, whatever second it holds.
    pub fn slot(&self, second: i64) -> Slot {
        self.slots[self.index(second)]
    }

    /// Head of `second`'s chain, if the slot holds that second.
    pub fn head(&self, second: i64) -> Option<i64> {
        let slot = self.slot(second);
        (!slot.is_empty() && slot.second == second).then_some(slot.head)
    }

    pub fn set(&mut self, second: i64, head: i64) {
        let index = self.index(second);
        self.slots[index] = Slot { second, head };
        let (word, bit) = (index / 64, 1u64 << (index % 64));
        if self.dirty[word] & bit == 0 {
            self.dirty[word] |= bit;
            self.dirty_count += 1;
        }
    }

    /// Forgets every slot (before a rebuild from the log).
    pub fn clear(&mut self) {
        self.slots.fill(EMPTY);
        self.mark_all_dirty();
    }

    fn mark_all_dirty(&mut self) {
        self.dirty.fill(u64::MAX);
        self.dirty_count = self.slots.len();
    }

    /// Live (non-empty) slots, for recovery checks and catch-up.
    pub fn iter(&self) -> impl Iterator<Item = Slot> + '_ {
        self.slots.iter().copied().filter(|s| !s.is_empty())
    }

    /// Writes the changed slots and fdatasyncs the file (blocking).
    pub fn persist(&mut self) -> Result<(), TimerError> {
        if self.dirty_count == 0 {
            return Ok(());
        }
        let encode = |slot: &Slot, out: &mut [u8]| {
            out[0..8].copy_from_slice(&slot.second.to_be_bytes());
            out[8..16].copy_from_slice(&slot.head.to_be_bytes());
        };
        // Many changes: one sequential write of the whole wheel.
        if self.dirty_count * 8 >= self.slots.len() {
            let mut buf = vec![0u8; self.slots.len() * SLOT_BYTES];
            for (slot, out) in self.slots.iter().zip(buf.chunks_exact_mut(SLOT_BYTES)) {
                encode(slot, out);
            }
            self.file
                .write_all_at(&buf, 0)
                .io_context("write timer wheel", &self.path)?;
        } else {
            let mut out = [0u8; SLOT_BYTES];
            for (word_index, word) in self.dirty.iter().enumerate() {
                let mut bits = *word;
                while bits != 0 {
                    let index = word_index * 64 + bits.trailing_zeros() as usize;
                    bits &= bits - 1;
                    let Some(slot) = self.slots.get(index) else {
                        break;
                    };
                    encode(slot, &mut out);
                    self.file
                        .write_all_at(&out, (index * SLOT_BYTES) as u64)
                        .io_context("write timer wheel", &self.path)?;
                }
            }
        }
        self.file
            .sync_data()
            .io_context("fdatasync timer wheel", &self.path)?;
        self.dirty.fill(0);
        self.dirty_count = 0;
        Ok(())
    }
}
