//! The controller's Raft log on disk: one append-only file of records
//! `[length u32 LE][crc32 u32 LE][payload]`. Appends are synced before they
//! are reported durable; a torn or corrupt tail (a crash mid-append, never
//! acknowledged) is cut off on open. Truncation and purging rewrite the
//! file beside it and rename it over, so a crash leaves the old or the new
//! file, never half of each. The log is small (controller events are rare
//! and snapshots let it be purged), so rewriting is cheap.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

/// Largest record accepted, on write and on read.
pub const RECORD_BYTES_MAX: usize = 16 * 1024 * 1024;
const HEADER_BYTES: usize = 8;

pub struct LogFile {
    path: PathBuf,
    file: File,
}

impl LogFile {
    /// Opens (or creates) the file and returns its intact records.
    pub fn open(path: &Path) -> io::Result<(Self, Vec<Vec<u8>>)> {
        let mut bytes = Vec::new();
        if path.exists() {
            File::open(path)?.read_to_end(&mut bytes)?;
        }
        let (records, intact_len) = parse(&bytes);
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        if intact_len < bytes.len() {
            tracing::warn!(
                "{}: cutting {} bytes of torn tail",
                path.display(),
                bytes.len() - intact_len
            );
            file.set_len(intact_len as u64)?;
            file.sync_all()?;
        }
        let log = Self {
            path: path.to_path_buf(),
            file,
        };
        Ok((log, records))
    }

    /// Appends records and syncs them to disk.
    pub fn append<'a>(&mut self, payloads: impl IntoIterator<Item = &'a [u8]>) -> io::Result<()> {
        let buf = encode(payloads)?;
        self.file.write_all(&buf)?;
        self.file.sync_data()
    }

    /// Replaces the whole file by these records.
    pub fn rewrite<'a>(&mut self, payloads: impl IntoIterator<Item = &'a [u8]>) -> io::Result<()> {
        let buf = encode(payloads)?;
        let tmp = self.path.with_extension("rewrite");
        {
            let mut out = File::create(&tmp)?;
            out.write_all(&buf)?;
            out.sync_all()?;
        }
        fs::rename(&tmp, &self.path)?;
        if let Some(dir) = self.path.parent() {
            File::open(dir)?.sync_all()?;
        }
        self.file = OpenOptions::new().append(true).open(&self.path)?;
        Ok(())
    }
}

fn encode<'a>(payloads: impl IntoIterator<Item = &'a [u8]>) -> io::Result<Vec<u8>> {
    let mut buf = Vec::new();
    for payload in payloads {
        if payload.len() > RECORD_BYTES_MAX {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("a Raft log record of {} bytes is too large", payload.len()),
            ));
        }
        buf.extend_from_slice(&(payload.len() as u32).to_le_bytes());
        buf.extend_from_slice(&crc32fast::hash(payload).to_le_bytes());
        buf.extend_from_slice(payload);
    }
    Ok(buf)
}

/// The intact records at the start of `bytes`, and how many bytes they span.
fn parse(bytes: &[u8]) -> (Vec<Vec<u8>>, usize) {
    let mut records = Vec::new();
    let mut at = 0;
    while let Some(header) = bytes.get(at..at + HEADER_BYTES) {
        let len = u32::from_le_bytes([header[0], header[1], header[2], header[3]]) as usize;
        let crc = u32::from_le_bytes([header[4], header[5], header[6], header[7]]);
        if len > RECORD_BYTES_MAX {
            break;
        }
        let Some(payload) = bytes.get(at + HEADER_BYTES..at + HEADER_BYTES + len) else {
            break;
        };
        if crc32fast::hash(payload) != crc {
            break;
        }
        records.push(payload.to_vec());
        at += HEADER_BYTES + len;
    }
    (records, at)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_survive_reopen_and_a_torn_tail_is_cut() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        let (mut log, records) = LogFile::open(&path).unwrap();
        assert!(records.is_empty());
        log.append([b"one".as_slice(), b"two".as_slice()]).unwrap();
        drop(log);
        // A crash mid-append leaves half a record.
        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(&[9, 0, 0, 0, 1, 2]).unwrap();
        drop(f);
        let (mut log, records) = LogFile::open(&path).unwrap();
        assert_eq!(records, vec![b"one".to_vec(), b"two".to_vec()]);
        log.append([b"three".as_slice()]).unwrap();
        log.rewrite([b"two".as_slice(), b"three".as_slice()])
            .unwrap();
        log.append([b"four".as_slice()]).unwrap();
        drop(log);
        let (_, records) = LogFile::open(&path).unwrap();
        assert_eq!(
            records,
            vec![b"two".to_vec(), b"three".to_vec(), b"four".to_vec()]
        );
    }

    #[test]
    fn a_corrupt_record_ends_the_log() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        let (mut log, _) = LogFile::open(&path).unwrap();
        log.append([b"good".as_slice(), b"flipped".as_slice()])
            .unwrap();
        drop(log);
        let mut bytes = fs::read(&path).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 0xff;
        fs::write(&path, &bytes).unwrap();
        let (_, records) = LogFile::open(&path).unwrap();
        assert_eq!(records, vec![b"good".to_vec()]);
    }
}
