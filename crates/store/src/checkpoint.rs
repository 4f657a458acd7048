//! `checkpoint`: where recovery may start. Records the CommitLog position
//! known flushed and the position below which every ConsumeQueue entry is
//! flushed (`StoreCheckpoint`: physicMsgTimestamp / logicsMsgTimestamp, here
//! as offsets plus the wall-clock time they were taken).
//!
//! Fixed 44-byte layout with a CRC, written atomically (temp + fsync +
//! rename); a damaged file is ignored and recovery scans everything.

use std::fs;
use std::path::Path;

use crate::error::{IoFailure, StoreError};
use crate::json_file::write_atomic;

const MAGIC: u32 = 0x4652_434B; // "FRCK"
const VERSION: u32 = 1;
const FILE_BYTES: usize = 44;
// Magic, version, four i64 offsets and times, then the CRC of all before it.
const _: () = assert!(FILE_BYTES == 4 + 4 + 4 * size_of::<i64>() + size_of::<u32>());

/// Recovery's starting facts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct StoreCheckpoint {
    /// CommitLog bytes below this are on disk.
    pub commitlog_flushed: i64,
    /// Every record below this has its ConsumeQueue entry on disk.
    pub consumequeue_flushed: i64,
    /// When `commitlog_flushed` was taken (ms since the epoch).
    pub commitlog_timestamp_ms: i64,
    /// When `consumequeue_flushed` was taken (ms since the epoch).
    pub consumequeue_timestamp_ms: i64,
}

impl StoreCheckpoint {
    fn encode(&self) -> [u8; FILE_BYTES] {
        let mut out = [0u8; FILE_BYTES];
        out[0..4].copy_from_slice(&MAGIC.to_be_bytes());
        out[4..8].copy_from_slice(&VERSION.to_be_bytes());
        out[8..16].copy_from_slice(&self.commitlog_flushed.to_be_bytes());
        out[16..24].copy_from_slice(&self.consumequeue_flushed.to_be_bytes());
        out[24..32].copy_from_slice(&self.commitlog_timestamp_ms.to_be_bytes());
        out[32..40].copy_from_slice(&self.consumequeue_timestamp_ms.to_be_bytes());
        let crc = crc32fast::hash(&out[..40]);
        out[40..44].copy_from_slice(&crc.to_be_bytes());
        out
    }

    fn decode(buf: &[u8]) -> Option<Self> {
        if buf.len() != FILE_BYTES {
            return None;
        }
        let u32_at = |at: usize| {
            let mut b = [0u8; 4];
            b.copy_from_slice(&buf[at..at + 4]);
            u32::from_be_bytes(b)
        };
        let i64_at = |at: usize| {
            let mut b = [0u8; 8];
            b.copy_from_slice(&buf[at..at + 8]);
            i64::from_be_bytes(b)
        };
        if u32_at(0) != MAGIC || u32_at(4) != VERSION || u32_at(40) != crc32fast::hash(&buf[..40]) {
            return None;
        }
        let checkpoint = Self {
            commitlog_flushed: i64_at(8),
            consumequeue_flushed: i64_at(16),
            commitlog_timestamp_ms: i64_at(24),
            consumequeue_timestamp_ms: i64_at(32),
        };
        (checkpoint.commitlog_flushed >= 0 && checkpoint.consumequeue_flushed >= 0)
            .then_some(checkpoint)
    }

    /// Reads the checkpoint; `None` when missing or damaged.
    pub fn load(path: &Path) -> Result<Option<Self>, StoreError> {
        match fs::read(path) {
            Ok(bytes) => {
                let checkpoint = Self::decode(&bytes);
                if checkpoint.is_none() {
                    tracing::warn!(path = %path.display(), "damaged checkpoint ignored");
                }
                Ok(checkpoint)
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(IoFailure::new("read checkpoint", path, e).into()),
        }
    }

    /// Writes the checkpoint atomically and durably (blocking).
    pub fn store(&self, path: &Path) -> Result<(), StoreError> {
        write_atomic(path, &self.encode(), false)
    }
}

/// Milliseconds since the Unix epoch.
pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_damage() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("checkpoint");
        assert_eq!(StoreCheckpoint::load(&path).unwrap(), None);
        let cp = StoreCheckpoint {
            commitlog_flushed: 4096,
            consumequeue_flushed: 2048,
            commitlog_timestamp_ms: 1,
            consumequeue_timestamp_ms: 2,
        };
        cp.store(&path).unwrap();
        assert_eq!(StoreCheckpoint::load(&path).unwrap(), Some(cp));
        let mut bytes = fs::read(&path).unwrap();
        bytes[9] ^= 1;
        fs::write(&path, bytes).unwrap();
        assert_eq!(StoreCheckpoint::load(&path).unwrap(), None);
    }
}
