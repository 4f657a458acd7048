//! A connection's read buffer: bytes from the socket land in a reused,
//! zeroed-once vector, and each complete frame is copied out into a buffer
//! of its own.
//!
//! Why copy: a frame split off a shared buffer keeps the whole buffer alive
//! until the request finishes, so with a hundred requests in flight every
//! read had to allocate (and zero) a fresh buffer, and freeing it waited for
//! the slowest request. Copying a frame costs one allocation of its own
//! size and a memcpy; the read buffer itself is never reallocated while its
//! size fits the traffic.

use bytes::Bytes;
use ferrocket_protocol::{FrameDecoder, ProtocolError, RemotingCommand};

/// A buffer that grew past this for one large frame is given back once it
/// holds nothing.
const RETAINED_BYTES_MAX: usize = 512 * 1024;

pub(crate) struct ReadBuf {
    /// Always fully initialised; `data[start..end]` is unread input.
    data: Vec<u8>,
    start: usize,
    end: usize,
    initial_bytes: usize,
}

impl ReadBuf {
    pub(crate) fn new(initial_bytes: usize) -> Self {
        Self {
            data: vec![0; initial_bytes],
            start: 0,
            end: 0,
            initial_bytes,
        }
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
    fn a_bad_length_is_an_error() {
        let decoder = FrameDecoder::new(1024);
        let mut buf = ReadBuf::new(64);
        feed(&mut buf, &(1_000_000i32).to_be_bytes(), 64);
        assert!(buf.next_frame(&decoder).is_err());
    }
}
