//! A connection's read buffer: bytes from the socket land in a reused,
//! initialised-once vector, and each complete frame is copied out into a buffer
//! of its own.
//!
//! Why copy: a frame split off a shared buffer keeps the whole buffer alive
//! until the request finishes, so with a hundred requests in flight every
//! read had to allocate (and zero) a fresh buffer, and freeing it waited for
//! the slowest request. Copying a frame costs one allocation of its own
//! size and a memcpy; the read buffer itself is never reallocated while its
//! size fits the traffic.
//!
//! An idle connection holds no buffer: when a read would wait and nothing
//! is buffered, the buffer goes back to a per-thread (per-shard) pool of
//! initialised buffers, and the next read takes one. Ten thousand idle
//! clients then cost no read buffers at all, and a busy connection, whose
//! reads rarely wait, keeps its own. A pooled buffer keeps the length it
//! grew to (up to [`RETAINED_BYTES_MAX`]): a busy connection's reads ask for
//! up to 256 KiB, and cutting its buffer back on every wait made the next
//! read zero the same bytes again (a saturated send profile: 0.8% in
//! `memset` under `ReadBuf::spare`).

use std::cell::RefCell;

use bytes::Bytes;
use ferrocket_protocol::{FrameDecoder, ProtocolError, RemotingCommand};

/// A buffer that grew past this for one large frame is given back once it
/// holds nothing (and is never pooled).
const RETAINED_BYTES_MAX: usize = 512 * 1024;
/// Most idle buffers a thread's pool keeps; more are freed.
pub(crate) const POOLED_BUFFERS_MAX: usize = 256;
/// Most bytes (by capacity) a thread's pool keeps; more are freed.
pub(crate) const POOLED_BYTES_MAX: usize = 8 * 1024 * 1024;

/// Idle, initialised buffers of one thread and the bytes they hold.
struct Pool {
    buffers: Vec<Vec<u8>>,
    bytes: usize,
}

thread_local! {
    static POOL: RefCell<Pool> = const {
        RefCell::new(Pool {
            buffers: Vec::new(),
            bytes: 0,
        })
    };
}

/// An initialised buffer of at least `bytes`: a pooled one, or a new one.
fn take_buffer(bytes: usize) -> Vec<u8> {
    let pooled = POOL.with(|pool| {
        let mut pool = pool.borrow_mut();
        let buf = pool.buffers.pop()?;
        pool.bytes -= buf.capacity();
        Some(buf)
    });
    pooled
        .filter(|buf| buf.len() >= bytes)
        .unwrap_or_else(|| vec![0; bytes])
}

fn give_buffer(buf: Vec<u8>) {
    POOL.with(|pool| {
        let mut pool = pool.borrow_mut();
        let bytes = pool.bytes + buf.capacity();
        if pool.buffers.len() < POOLED_BUFFERS_MAX && bytes <= POOLED_BYTES_MAX {
            pool.bytes = bytes;
            pool.buffers.push(buf);
        }
    });
}

pub(crate) struct ReadBuf {
    /// Always fully initialised; `data[start..end]` is unread input.
    data: Vec<u8>,
    start: usize,
    end: usize,
    initial_bytes: usize,
}

impl ReadBuf {
    /// A buffer that takes its storage when first read into.
    pub(crate) fn new(initial_bytes: usize) -> Self {
        Self {
            data: Vec::new(),
            start: 0,
            end: 0,
            initial_bytes,
        }
    }

    /// Gives the storage back to the pool when nothing is buffered (the
    /// connection is about to wait for the peer). The storage stays
    /// initialised; its stale bytes are never read (only
    /// `data[start..end]` is).
    pub(crate) fn release_if_empty(&mut self) {
        if self.start != self.end || self.data.is_empty() {
            return;
        }
        let data = std::mem::take(&mut self.data);
        self.start = 0;
        self.end = 0;
        // Pooled whole (still initialised, its length kept); one that grew
        // for a large frame is freed.
        if data.len() >= self.initial_bytes && data.capacity() <= RETAINED_BYTES_MAX {
            give_buffer(data);
        }
    }

    /// Bytes of storage held now.
    #[cfg(test)]
    pub(crate) fn held_bytes(&self) -> usize {
        self.data.len()
    }

    /// Unread bytes.
    pub(crate) fn pending(&self) -> &[u8] {
        &self.data[self.start..self.end]
    }

    /// The next complete frame, decoded from its own copy.
    pub(crate) fn next_frame(
        &mut self,
        decoder: &FrameDecoder,
    ) -> Result<Option<RemotingCommand>, ProtocolError> {
        if decoder.missing_bytes(self.pending())? > 0 {
            return Ok(None);
        }
        let pending = self.pending();
        let total = i32::from_be_bytes([pending[0], pending[1], pending[2], pending[3]]) as usize;
        let frame = Bytes::copy_from_slice(&pending[..4 + total]);
        self.start += 4 + total;
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
            if self.data.len() > RETAINED_BYTES_MAX {
                self.data = vec![0; self.initial_bytes];
            }
        }
        RemotingCommand::decode(frame).map(Some)
    }

    /// Room for at least `want` more bytes after the unread ones; returns
    /// the writable region (already initialised).
    pub(crate) fn spare(&mut self, want: usize) -> &mut [u8] {
        if self.data.is_empty() {
            self.data = take_buffer(self.initial_bytes);
        }
        if self.data.len() - self.end < want {
            // Move the unread tail to the front first; grow only if that
            // is not enough.
            if self.start > 0 {
                self.data.copy_within(self.start..self.end, 0);
                self.end -= self.start;
                self.start = 0;
            }
            if self.data.len() - self.end < want {
                self.data.resize(self.end + want, 0);
            }
        }
        &mut self.data[self.end..]
    }

    /// `count` bytes were written into the region [`ReadBuf::spare`] gave.
    pub(crate) fn filled(&mut self, count: usize) {
        assert!(
            self.end + count <= self.data.len(),
            "filled past the buffer"
        );
        self.end += count;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(code: i32, body: &[u8]) -> Vec<u8> {
        RemotingCommand::request(code)
            .with_body(body.to_vec())
            .to_bytes()
            .to_vec()
    }

    fn feed(buf: &mut ReadBuf, bytes: &[u8], want: usize) {
        let spare = buf.spare(want);
        spare[..bytes.len()].copy_from_slice(bytes);
        buf.filled(bytes.len());
    }

    #[test]
    fn frames_split_across_reads_come_out_whole_and_the_buffer_is_reused() {
        let decoder = FrameDecoder::default();
        let mut buf = ReadBuf::new(64);
        let mut stream = Vec::new();
        for code in 0..20 {
            stream.extend(frame(code, &[code as u8; 30]));
        }
        let mut seen = Vec::new();
        for piece in stream.chunks(37) {
            feed(&mut buf, piece, 64);
            while let Some(command) = buf.next_frame(&decoder).unwrap() {
                assert_eq!(command.body.as_ref(), &vec![command.code as u8; 30][..]);
                seen.push(command.code);
            }
        }
        assert_eq!(seen, (0..20).collect::<Vec<_>>());
        assert!(buf.pending().is_empty());
        let frame_len = stream.len() / 20;
        assert!(
            buf.data.len() <= frame_len + 64,
            "reused, not regrown per read: {} bytes",
            buf.data.len()
        );
    }

    #[test]
    fn a_large_frame_grows_the_buffer_which_shrinks_once_drained() {
        let decoder = FrameDecoder::default();
        let mut buf = ReadBuf::new(64);
        let big = frame(7, &vec![1u8; RETAINED_BYTES_MAX + 10]);
        feed(&mut buf, &big, big.len());
        let command = buf.next_frame(&decoder).unwrap().unwrap();
        assert_eq!(command.body.len(), RETAINED_BYTES_MAX + 10);
        assert_eq!(buf.data.len(), 64);
    }

    #[test]
    fn an_empty_buffer_goes_back_to_the_pool_and_comes_back_from_it() {
        let decoder = FrameDecoder::default();
        let mut buf = ReadBuf::new(256);
        assert_eq!(buf.held_bytes(), 0, "nothing held before the first read");
        let one = frame(3, b"x");
        feed(&mut buf, &one[..5], 256);
        buf.release_if_empty();
        assert_eq!(buf.held_bytes(), 256, "a partial frame keeps its buffer");
        feed(&mut buf, &one[5..], 256);
        assert!(buf.next_frame(&decoder).unwrap().is_some());
        buf.release_if_empty();
        assert_eq!(buf.held_bytes(), 0);
        let pooled = POOL.with(|pool| pool.borrow().buffers.len());
        assert!(pooled >= 1);
        feed(&mut buf, &one, 256);
        assert_eq!(POOL.with(|pool| pool.borrow().buffers.len()), pooled - 1);
        assert_eq!(buf.next_frame(&decoder).unwrap().unwrap().code, 3);
    }

    #[test]
    fn a_grown_buffer_keeps_its_length_through_the_pool() {
        let decoder = FrameDecoder::default();
        let mut buf = ReadBuf::new(256);
        let one = frame(4, b"y");
        // A busy connection's read asks for four times the initial room.
        feed(&mut buf, &one, 1024);
        let grown = buf.held_bytes();
        assert!(grown >= 1024);
        assert_eq!(buf.next_frame(&decoder).unwrap().unwrap().code, 4);
        buf.release_if_empty();
        assert_eq!(buf.held_bytes(), 0);
        feed(&mut buf, &one, 1024);
        assert_eq!(
            buf.held_bytes(),
            grown,
            "taken back whole, not zeroed again"
        );
        assert_eq!(buf.next_frame(&decoder).unwrap().unwrap().code, 4);
    }

    #[test]
    fn the_pool_keeps_at_most_its_byte_budget() {
        let buffers = POOLED_BYTES_MAX / RETAINED_BYTES_MAX + 4;
        for _ in 0..buffers {
            give_buffer(vec![0; RETAINED_BYTES_MAX]);
        }
        let (count, bytes) = POOL.with(|pool| {
            let pool = pool.borrow();
            (pool.buffers.len(), pool.bytes)
        });
        assert!(bytes <= POOLED_BYTES_MAX, "{bytes} bytes pooled");
        assert!(count < buffers);
        while POOL.with(|pool| !pool.borrow().buffers.is_empty()) {
            drop(take_buffer(1));
        }
        assert_eq!(POOL.with(|pool| pool.borrow().bytes), 0);
    }

    #[test]
    fn a_bad_length_is_an_error() {
        let decoder = FrameDecoder::new(1024);
        let mut buf = ReadBuf::new(64);
        feed(&mut buf, &(1_000_000i32).to_be_bytes(), 64);
        assert!(buf.next_frame(&decoder).is_err());
    }
}
