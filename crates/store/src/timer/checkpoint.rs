//! `timer/checkpoint`: the delivery progress and where recovery replays the
//! timer log from (RocketMQ `TimerCheckpoint`). Binary with a CRC, written
//! atomically (temp + fsync + rename) after the log and the wheel are
//! synced; a damaged file is a typed error, never silently ignored (that
//! would re-deliver everything).
//!
//! ```text
//! magic u32 | version u32 | wheel_slots u32 | replay_from i64
//! | floor (at_ms i64, phy i64) | handout present u8 (at_ms i64, phy i64)
//! | ingested_end i64 | pending u64
//! | segment count u32, (start i64, max_second i64)*
//! | ahead count u32, (at_ms i64, phy i64)*
//! | truncation count u32, (log position i64, commitlog_end i64)*  (v2)
//! | crc32 u32
//! ```
//!
//! Version 1 (no truncation list) is still read.

use std::fs;
use std::path::Path;

use super::error::TimerError;
use super::log::Key;
use crate::error::IoFailure;
use crate::json_file::write_atomic;

const MAGIC: u32 = 0x4652_544D; // "FRTM"
const VERSION: u32 = 2;
/// The first version: no truncation list.
const VERSION_1: u32 = 1;

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct TimerCheckpoint {
    pub wheel_slots: u32,
    /// Log position to replay from: records below it are reflected here
    /// and in the wheel file.
    pub replay_from: i64,
    /// Every timer with a key below this is delivered.
    pub floor: Key,
    /// Largest key `due` ever handed out.
    pub handout: Option<Key>,
    /// CommitLog position after the last timer message added.
    pub ingested_end: i64,
    pub pending: u64,
    /// (segment start, latest ADD second in it).
    pub segments: Vec<(i64, i64)>,
    /// Delivered keys at or above `floor`.
    pub ahead: Vec<Key>,
    /// (log position of a TRUNCATE record, its CommitLog end), in log
    /// order: the truncations that can still kill a retained ADD.
    pub truncations: Vec<(i64, i64)>,
}

struct Reader<'a> {
    buf: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn take<const N: usize>(&mut self) -> Option<[u8; N]> {
        let src = self.buf.get(self.at..self.at + N)?;
        self.at += N;
        let mut out = [0u8; N];
        out.copy_from_slice(src);
        Some(out)
    }
    fn u8(&mut self) -> Option<u8> {
        self.take::<1>().map(|b| b[0])
    }
    fn u32(&mut self) -> Option<u32> {
        self.take::<4>().map(u32::from_be_bytes)
    }
    fn i64(&mut self) -> Option<i64> {
        self.take::<8>().map(i64::from_be_bytes)
    }
    fn key(&mut self) -> Option<Key> {
        Some((self.i64()?, self.i64()?))
    }
}

impl TimerCheckpoint {
    fn encode(&self) -> Vec<u8> {
        let pairs = self.segments.len() + self.ahead.len() + self.truncations.len();
        let mut out = Vec::with_capacity(84 + 16 * pairs);
        out.extend_from_slice(&MAGIC.to_be_bytes());
        out.extend_from_slice(&VERSION.to_be_bytes());
        out.extend_from_slice(&self.wheel_slots.to_be_bytes());
        out.extend_from_slice(&self.replay_from.to_be_bytes());
        let key = |out: &mut Vec<u8>, k: Key| {
            out.extend_from_slice(&k.0.to_be_bytes());
            out.extend_from_slice(&k.1.to_be_bytes());
        };
        key(&mut out, self.floor);
        out.push(u8::from(self.handout.is_some()));
        key(&mut out, self.handout.unwrap_or((0, 0)));
        out.extend_from_slice(&self.ingested_end.to_be_bytes());
        out.extend_from_slice(&self.pending.to_be_bytes());
        out.extend_from_slice(&(self.segments.len() as u32).to_be_bytes());
        for &(start, max_second) in &self.segments {
            key(&mut out, (start, max_second));
        }
        out.extend_from_slice(&(self.ahead.len() as u32).to_be_bytes());
        for &k in &self.ahead {
            key(&mut out, k);
        }
        out.extend_from_slice(&(self.truncations.len() as u32).to_be_bytes());
        for &pair in &self.truncations {
            key(&mut out, pair);
        }
        let crc = crc32fast::hash(&out);
        out.extend_from_slice(&crc.to_be_bytes());
        out
    }

    fn decode(buf: &[u8]) -> Option<Self> {
        let body_len = buf.len().checked_sub(4)?;
        let (body, crc) = buf.split_at(body_len);
        let mut crc_bytes = [0u8; 4];
        crc_bytes.copy_from_slice(crc);
        if crc32fast::hash(body) != u32::from_be_bytes(crc_bytes) {
            return None;
        }
        let mut r = Reader { buf: body, at: 0 };
        if r.u32()? != MAGIC {
            return None;
        }
        let version = r.u32()?;
        if version != VERSION && version != VERSION_1 {
            return None;
        }
        let wheel_slots = r.u32()?;
        let replay_from = r.i64()?;
        let floor = r.key()?;
        let has_handout = r.u8()? != 0;
        let handout = r.key()?;
        let ingested_end = r.i64()?;
        let pending = r.i64()? as u64;
        let segment_count = r.u32()? as usize;
        // Counts are bounded by the bytes actually present.
        if segment_count > body.len() / 16 {
            return None;
        }
        let mut segments = Vec::with_capacity(segment_count);
        for _ in 0..segment_count {
            segments.push(r.key()?);
        }
        let ahead_count = r.u32()? as usize;
        if ahead_count > body.len() / 16 {
            return None;
        }
        let mut ahead = Vec::with_capacity(ahead_count);
        for _ in 0..ahead_count {
            ahead.push(r.key()?);
        }
        let mut truncations = Vec::new();
        if version >= VERSION {
            let count = r.u32()? as usize;
            if count > body.len() / 16 {
                return None;
            }
            truncations.reserve(count);
            for _ in 0..count {
                truncations.push(r.key()?);
            }
        }
        if r.at != body.len() || replay_from < 0 || ingested_end < 0 {
            return None;
        }
        Some(Self {
            wheel_slots,
            replay_from,
            floor,
            handout: has_handout.then_some(handout),
            ingested_end,
            pending,
            segments,
            ahead,
            truncations,
        })
    }

    /// `None` when there is no checkpoint yet; an error when it is damaged.
    pub fn load(path: &Path) -> Result<Option<Self>, TimerError> {
        match fs::read(path) {
            Ok(bytes) => Self::decode(&bytes)
                .map(Some)
                .ok_or_else(|| TimerError::corrupt(path, "damaged timer checkpoint")),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(IoFailure::new("read timer checkpoint", path, e).into()),
        }
    }

    pub fn store(&self, path: &Path) -> Result<(), TimerError> {
        write_atomic(path, &self.encode(), false).map_err(|e| TimerError::Io {
            op: "write timer checkpoint",
            path: path.display().to_string(),
            kind: match &e {
                crate::error::StoreError::Io { kind, .. } => *kind,
                _ => std::io::ErrorKind::Other,
            },
            message: e.to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_damage() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("checkpoint");
        assert_eq!(TimerCheckpoint::load(&path).unwrap(), None);
        let cp = TimerCheckpoint {
            wheel_slots: 100,
            replay_from: 320,
            floor: (5_000, i64::MIN),
            handout: Some((6_000, 7)),
            ingested_end: 1_000,
            pending: 3,
            segments: vec![(0, 9), (256, 12)],
            ahead: vec![(6_000, 9)],
            truncations: vec![(288, 700)],
        };
        cp.store(&path).unwrap();
        assert_eq!(TimerCheckpoint::load(&path).unwrap(), Some(cp.clone()));
        // Version 1: the same without the truncation list.
        let v2 = cp.encode();
        let mut v1 = v2[..v2.len() - 4 - 4 - 16].to_vec();
        v1[4..8].copy_from_slice(&VERSION_1.to_be_bytes());
        let crc = crc32fast::hash(&v1);
        v1.extend_from_slice(&crc.to_be_bytes());
        assert_eq!(
            TimerCheckpoint::decode(&v1),
            Some(TimerCheckpoint {
                truncations: Vec::new(),
                ..cp
            })
        );
        let mut bytes = fs::read(&path).unwrap();
        bytes[13] ^= 1;
        fs::write(&path, &bytes).unwrap();
        assert!(matches!(
            TimerCheckpoint::load(&path),
            Err(TimerError::Corrupt { .. })
        ));
        fs::write(&path, &bytes[..3]).unwrap();
        assert!(TimerCheckpoint::load(&path).is_err());
    }
}
