//! A queue's retention floor (retention per topic, see
//! `crate::topic_retention`): offsets below it are no longer readable and
//! the files wholly below it are deleted. It is kept in the queue's
//! directory (`retentionFloor`, decimal), so it survives restarts and goes
//! with the queue when its topic is deleted. Written by rename, not
//! fdatasync'ed: a power loss may bring back an older floor, which the
//! owner shard's next retention pass raises again.

use std::fs;
use std::path::Path;

use super::ConsumeQueue;
use crate::error::{IoContext, IoFailure, StoreError};

/// The floor's file in the queue directory (not a 20-digit offset name,
/// so file listings pass it by).
pub const FLOOR_FILE: &str = "retentionFloor";

/// The floor stored in `dir`, 0 when none is.
fn read(dir: &Path) -> Result<i64, StoreError> {
    let path = dir.join(FLOOR_FILE);
    match fs::read_to_string(&path) {
        Ok(text) => text
            .trim()
            .parse::<i64>()
            .map_err(|_| StoreError::Corrupt(format!("{} holds no queue offset", path.display()))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(0),
        Err(e) => Err(IoFailure::new("read retention floor", &path, e).into()),
    }
}

fn write(dir: &Path, floor: i64) -> Result<(), StoreError> {
    let path = dir.join(FLOOR_FILE);
    let temp = dir.join(format!("{FLOOR_FILE}.tmp"));
    fs::write(&temp, floor.to_string()).io_context("write retention floor", &temp)?;
    fs::rename(&temp, &path).io_context("rename retention floor", &path)?;
    Ok(())
}

impl ConsumeQueue {
    /// Applies the floor stored in the queue's directory (the owner shard
    /// opening the queue; recovery works on the entries below it too).
    /// A floor file that does not parse (a power loss between its write
    /// and rename may leave one empty) counts as no floor: the owner's next
    /// retention pass raises it again, and nothing is hidden meanwhile.
    pub(crate) fn load_floor(&self) -> Result<(), StoreError> {
        let stored = match read(&self.dir) {
            Ok(floor) => floor,
            Err(StoreError::Corrupt(why)) => {
                tracing::warn!(%why, "retention floor unreadable; the next retention pass sets it again");
                0
            }
            Err(e) => return Err(e),
        };
        self.floor.set(stored);
        self.lower_floor_to_end()
    }

    /// A floor above the queue's end (its log was cut back below it:
    /// recovery after a power loss, a controller-mode fork) comes down to
    /// the end, stored first: the messages written from there on are new,
    /// and a floor left above them would hide them.
    pub(crate) fn lower_floor_to_end(&self) -> Result<(), StoreError> {
        let end = self.max_offset();
        if self.floor.get() > end {
            write(&self.dir, end)?;
            self.floor.set(end);
        }
        assert!(self.floor.get() <= end, "a floor above the queue's end");
        debug_assert!(self.min_offset() <= end, "the queue starts past its end");
        Ok(())
    }

    /// Retention per topic: offsets below `floor` go (stored first, then
    /// applied), with the files wholly below it, never the last. Returns
    /// how many files went.
    pub(crate) fn raise_floor(&self, floor: i64) -> Result<usize, StoreError> {
        let floor = floor.min(self.max_offset());
        if floor <= self.min_offset() {
            return Ok(0);
        }
        assert!(floor > 0, "a raised floor is above zero");
        write(&self.dir, floor)?;
        self.floor.set(floor);
        let deleted = self.delete_files_below(floor)?;
        assert!(self.min_offset() <= self.max_offset(), "floor past the end");
        Ok(deleted)
    }

    fn delete_files_below(&self, floor: i64) -> Result<usize, StoreError> {
        let per_file = self.entries_per_file as i64;
        let mut deleted = 0;
        loop {
            let mut files = self.files.borrow_mut();
            if files.len() <= 1 || files[0].start + per_file > floor {
                break;
            }
            let file = files.remove(0);
            let next = files[0].start;
            drop(files);
            fs::remove_file(&file.path).io_context("remove ConsumeQueue file", &file.path)?;
            self.min_offset.set(self.min_offset.get().max(next));
            deleted += 1;
        }
        Ok(deleted)
    }
}
