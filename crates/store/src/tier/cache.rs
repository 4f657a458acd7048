//! The read-through cache: chunks of offloaded segments fetched from object
//! storage (each `read_ahead_bytes` long, aligned within its segment),
//! bounded in bytes, least recently used out first.

use std::collections::BTreeMap;

use bytes::{Bytes, BytesMut};

/// Chunks by their start offset in the CommitLog.
pub(crate) struct ChunkCache {
    chunks: BTreeMap<i64, (Bytes, u64)>,
    bytes: usize,
    bytes_max: usize,
    clock: u64,
}

/// Where `[offset, offset + size)` lies in chunks of `chunk` bytes of
/// segments of `segment` bytes: each chunk start and its length.
pub(crate) fn chunks_of(offset: i64, size: usize, chunk: usize, segment: u64) -> Vec<(i64, usize)> {
    let seg = segment as i64;
    let chunk = chunk.max(1) as i64;
    let end = offset + size.max(1) as i64;
    let mut out = Vec::new();
    let seg_start = offset - offset.rem_euclid(seg);
    let mut at = seg_start + (offset - seg_start) / chunk * chunk;
    while at < end {
        let len = chunk.min(seg_start + seg - at);
        out.push((at, len as usize));
        at += len;
        if at >= seg_start + seg {
            break;
        }
    }
    out
}

impl ChunkCache {
    pub(crate) fn new(bytes_max: usize) -> Self {
        Self {
            chunks: BTreeMap::new(),
            bytes: 0,
            bytes_max,
            clock: 0,
        }
    }

    pub(crate) fn contains(&self, start: i64) -> bool {
        self.chunks.contains_key(&start)
    }

    /// Keeps a fetched chunk, evicting the least recently used past the bound.
    pub(crate) fn insert(&mut self, start: i64, bytes: Bytes) {
        self.clock += 1;
        self.bytes += bytes.len();
        if let Some((old, _)) = self.chunks.insert(start, (bytes, self.clock)) {
            self.bytes -= old.len();
        }
        while self.bytes > self.bytes_max && self.chunks.len() > 1 {
            let Some(oldest) = self
                .chunks
                .iter()
                .filter(|(at, _)| **at != start)
                .min_by_key(|(_, (_, used))| *used)
                .map(|(at, _)| *at)
            else {
                break;
            };
            if let Some((old, _)) = self.chunks.remove(&oldest) {
                self.bytes -= old.len();
            }
        }
    }

    /// `[offset, offset + size)` from cached chunks, or the start of the
    /// first chunk missing.
    pub(crate) fn read(
        &mut self,
        offset: i64,
        size: usize,
        chunk: usize,
        segment: u64,
    ) -> Result<Bytes, i64> {
        let spans = chunks_of(offset, size, chunk, segment);
        self.clock += 1;
        let mut parts = Vec::with_capacity(spans.len());
        for (start, _) in &spans {
            let Some((bytes, used)) = self.chunks.get_mut(start) else {
                return Err(*start);
            };
            *used = self.clock;
            parts.push((*start, bytes.clone()));
        }
        let end = offset + size as i64;
        let slice = |(start, bytes): &(i64, Bytes)| {
            let from = (offset.max(*start) - start) as usize;
            let to = ((end.min(start + bytes.len() as i64)) - start).max(0) as usize;
            bytes.slice(from.min(to)..to)
        };
        if parts.len() == 1 {
            return Ok(slice(&parts[0]));
        }
        let mut joined = BytesMut::with_capacity(size);
        for part in &parts {
            joined.extend_from_slice(&slice(part));
        }
        Ok(joined.freeze())
    }

    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_stay_inside_the_segment() {
        assert_eq!(chunks_of(0, 10, 4, 16), vec![(0, 4), (4, 4), (8, 4)]);
        assert_eq!(chunks_of(18, 2, 4, 16), vec![(16, 4)]);
        assert_eq!(chunks_of(12, 4, 8, 20), vec![(8, 8)]);
        assert_eq!(chunks_of(17, 3, 8, 20), vec![(16, 4)]);
    }

    #[test]
    fn reads_across_chunks_and_evicts_oldest() {
        let mut cache = ChunkCache::new(8);
        cache.insert(0, Bytes::from_static(b"abcd"));
        assert_eq!(cache.read(2, 4, 4, 16), Err(4));
        cache.insert(4, Bytes::from_static(b"efgh"));
        assert_eq!(&cache.read(2, 4, 4, 16).unwrap()[..], b"cdef");
        assert_eq!(&cache.read(4, 2, 4, 16).unwrap()[..], b"ef");
        cache.insert(8, Bytes::from_static(b"ijkl"));
        // 0 was used before 4: it goes.
        assert!(!cache.contains(0) && cache.contains(4) && cache.contains(8));
        assert_eq!(cache.bytes(), 8);
    }
}
