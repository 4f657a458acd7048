//! One queue's compacted file (`compaction/{topic}/{queueId}/compacted`):
//! a 32-byte header — magic, version, `upto` (the queue offset the file
//! covers up to, exclusive), record count, CRC32 of the records — then
//! the retained CommitLog records back to back, as stored (their queue
//! offsets unchanged), in queue-offset order. A new file is written
//! beside the old one, fdatasync'd and renamed over it, so a crash leaves
//! one whole file or the other. Read through a memory map; the index
//! (queue offset, position, size) is 16 bytes a record.

use std::fs;
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use ferrocket_protocol::record::decode_record;
use memmap2::Mmap;

const MAGIC: &[u8; 8] = b"FRCOMPAC";
const VERSION: u32 = 1;
pub const HEADER_BYTES: usize = 32;
const FILE_NAME: &str = "compacted";
const NEW_FILE_NAME: &str = "compacted.new";

/// One retained record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slot {
    pub queue_offset: i64,
    pub pos: usize,
    pub size: usize,
}

/// A loaded compacted file: `Send + Sync`, shared with the pass that
/// rewrites it.
#[derive(Debug, Default)]
pub struct CompactedFile {
    upto: i64,
    slots: Vec<Slot>,
    map: Option<Mmap>,
}

impl CompactedFile {
    /// The queue offset the compacted range ends at (exclusive); 0: none.
    pub fn upto(&self) -> i64 {
        self.upto
    }

    pub fn slots(&self) -> &[Slot] {
        &self.slots
    }

    /// The raw record of `slot`.
    pub fn record(&self, slot: &Slot) -> &[u8] {
        self.map
            .as_ref()
            .and_then(|map| map.get(slot.pos..slot.pos + slot.size))
            .unwrap_or(&[])
    }

    /// The index of the first slot at or after `queue_offset`.
    pub fn first_at_or_after(&self, queue_offset: i64) -> usize {
        self.slots
            .partition_point(|s| s.queue_offset < queue_offset)
    }

    /// Loads the file in `dir`; an empty one when there is none.
    pub fn load(dir: &Path) -> Result<Self, String> {
        let path = dir.join(FILE_NAME);
        let file = match fs::File::open(&path) {
            Ok(file) => file,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(Self::default()),
            Err(err) => return Err(format!("{}: {err}", path.display())),
        };
        // SAFETY: the file is only ever replaced by rename, never written
        // in place, so the mapped bytes do not change under the map.
        let map =
            unsafe { Mmap::map(&file) }.map_err(|err| format!("{}: {err}", path.display()))?;
        let (upto, slots) = parse(&map).map_err(|why| format!("{}: {why}", path.display()))?;
        Ok(Self {
            upto,
            slots,
            map: Some(map),
        })
    }
}

/// Reads the header and indexes the records.
fn parse(bytes: &[u8]) -> Result<(i64, Vec<Slot>), String> {
    let header = bytes.get(..HEADER_BYTES).ok_or("shorter than its header")?;
    if &header[..8] != MAGIC || u32_at(header, 8) != VERSION {
        return Err("not a compacted file of this version".into());
    }
    let upto = i64::from_be_bytes(header[12..20].try_into().map_err(|_| "header")?);
    let count = u32_at(header, 20) as usize;
    let crc = u32_at(header, 24);
    let body = &bytes[HEADER_BYTES..];
    if crc32fast::hash(body) != crc {
        return Err("records fail their CRC".into());
    }
    let mut slots = Vec::with_capacity(count.min(body.len() / 64 + 1));
    let mut pos = 0;
    while pos < body.len() {
        let view = decode_record(&body[pos..], false).map_err(|err| err.to_string())?;
        slots.push(Slot {
            queue_offset: view.queue_offset,
            pos: HEADER_BYTES + pos,
            size: view.total_size,
        });
        pos += view.total_size;
    }
    if slots.len() != count {
        return Err(format!("{} records, header says {count}", slots.len()));
    }
    Ok((upto, slots))
}

fn u32_at(bytes: &[u8], at: usize) -> u32 {
    let mut word = [0u8; 4];
    word.copy_from_slice(&bytes[at..at + 4]);
    u32::from_be_bytes(word)
}

/// Writes a new compacted file beside the old one; [`FileWriter::finish`]
/// makes it durable and puts it in the old one's place.
pub struct FileWriter {
    dir: PathBuf,
    out: std::io::BufWriter<fs::File>,
    hasher: crc32fast::Hasher,
    count: u32,
}

impl FileWriter {
    pub fn create(dir: &Path) -> Result<Self, String> {
        fs::create_dir_all(dir).map_err(|err| io_fail(dir, "create", err))?;
        let file =
            fs::File::create(dir.join(NEW_FILE_NAME)).map_err(|err| io_fail(dir, "create", err))?;
        let mut out = std::io::BufWriter::with_capacity(1 << 20, file);
        out.write_all(&[0u8; HEADER_BYTES])
            .map_err(|err| io_fail(dir, "write", err))?;
        Ok(Self {
            dir: dir.to_path_buf(),
            out,
            hasher: crc32fast::Hasher::new(),
            count: 0,
        })
    }

    /// Appends one record (records go in queue-offset order).
    pub fn push(&mut self, record: &[u8]) -> Result<(), String> {
        self.hasher.update(record);
        self.count = self.count.checked_add(1).ok_or("too many records")?;
        self.out
            .write_all(record)
            .map_err(|err| io_fail(&self.dir, "write", err))
    }

    /// Writes the header for `upto`, syncs, and renames over the old file.
    pub fn finish(self, upto: i64) -> Result<(), String> {
        let dir = self.dir;
        let mut header = [0u8; HEADER_BYTES];
        header[..8].copy_from_slice(MAGIC);
        header[8..12].copy_from_slice(&VERSION.to_be_bytes());
        header[12..20].copy_from_slice(&upto.to_be_bytes());
        header[20..24].copy_from_slice(&self.count.to_be_bytes());
        header[24..28].copy_from_slice(&self.hasher.finalize().to_be_bytes());
        let file = self
            .out
            .into_inner()
            .map_err(|err| io_fail(&dir, "write", err.into_error()))?;
        file.write_all_at(&header, 0)
            .and_then(|()| file.sync_data())
            .map_err(|err| io_fail(&dir, "write", err))?;
        fs::rename(dir.join(NEW_FILE_NAME), dir.join(FILE_NAME))
            .map_err(|err| io_fail(&dir, "rename", err))?;
        fs::File::open(&dir)
            .and_then(|d| d.sync_all())
            .map_err(|err| io_fail(&dir, "sync", err))
    }
}

fn io_fail(dir: &Path, what: &str, err: std::io::Error) -> String {
    format!("{} {what}: {err}", dir.display())
}

/// `compaction/{topic}/{queueId}` under the store root.
pub fn queue_dir(root: &Path, topic: &str, queue_id: i32) -> Result<PathBuf, String> {
    ferrocket_store::queue_dir(&root.join("compaction"), topic, queue_id).map_err(|e| e.to_string())
}

/// `compaction/{topic}` under the store root.
pub fn topic_dir(root: &Path, topic: &str) -> Result<PathBuf, String> {
    ferrocket_store::topic_dir(&root.join("compaction"), topic).map_err(|e| e.to_string())
}

/// A shared, loaded file.
pub type SharedFile = Arc<CompactedFile>;
