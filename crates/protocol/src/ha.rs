//! RocketMQ's classic HA byte stream between a master and its slaves
//! (`DefaultHAClient` / `DefaultHAConnection`): plain TCP to the master's
//! `haListenPort`, big-endian, no handshake.
//!
//! - Slave -> master: an 8-byte offset, again and again: the slave's
//!   CommitLog end. The first one says where the master starts (0: at
//!   the start of the master's last segment).
//! - Master -> slave: frames of a 12-byte header, `[offset i64][size i32]`,
//!   then `size` bytes of the master's CommitLog from `offset`. A frame of
//!   size 0 is a heartbeat carrying the next offset. Frames are cut
//!   anywhere (a record may span two frames) but never span segments.

/// Bytes of a slave's offset report.
pub const REPORT_BYTES: usize = 8;
/// Bytes of a master frame's header.
pub const FRAME_HEADER_BYTES: usize = 12;
/// Largest frame body a slave accepts (the Java slave's read buffer).
pub const FRAME_BODY_BYTES_MAX: usize = 4 * 1024 * 1024;

const _: () = assert!(REPORT_BYTES == size_of::<i64>());
const _: () = assert!(FRAME_HEADER_BYTES == size_of::<i64>() + size_of::<i32>());
// The header's size field is an i32.
const _: () = assert!(FRAME_BODY_BYTES_MAX <= i32::MAX as usize);

/// A slave's report of its CommitLog end.
pub fn encode_report(offset: i64) -> [u8; REPORT_BYTES] {
    offset.to_be_bytes()
}

/// The last complete report in `buf` (the master reads only the newest)
/// and how many bytes that consumed; `None` while no report is complete.
pub fn last_report(buf: &[u8]) -> Option<(i64, usize)> {
    let whole = buf.len() - buf.len() % REPORT_BYTES;
    if whole == 0 {
        return None;
    }
    let mut last = [0u8; REPORT_BYTES];
    last.copy_from_slice(&buf[whole - REPORT_BYTES..whole]);
    Some((i64::from_be_bytes(last), whole))
}

/// A master frame's header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameHeader {
    /// The master's CommitLog offset of the body's first byte.
    pub offset: i64,
    /// Body bytes that follow; 0 for a heartbeat.
    pub body_bytes: usize,
}

/// Why a frame header is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    #[error(
        "HA frame at offset {offset} claims {size} body bytes (at most {FRAME_BODY_BYTES_MAX})"
    )]
    BadSize { offset: i64, size: i32 },
    #[error("HA frame claims the negative offset {0}")]
    BadOffset(i64),
}

impl FrameHeader {
    pub fn encode(&self) -> [u8; FRAME_HEADER_BYTES] {
        assert!(
            self.body_bytes <= i32::MAX as usize,
            "HA frame body too large"
        );
        let mut out = [0u8; FRAME_HEADER_BYTES];
        out[..8].copy_from_slice(&self.offset.to_be_bytes());
        out[8..].copy_from_slice(&(self.body_bytes as i32).to_be_bytes());
        out
    }

    pub fn decode(head: &[u8; FRAME_HEADER_BYTES]) -> Result<Self, FrameError> {
        let mut offset = [0u8; 8];
        offset.copy_from_slice(&head[..8]);
        let offset = i64::from_be_bytes(offset);
        let size = i32::from_be_bytes([head[8], head[9], head[10], head[11]]);
        if offset < 0 {
            return Err(FrameError::BadOffset(offset));
        }
        match usize::try_from(size) {
            Ok(body_bytes) if body_bytes <= FRAME_BODY_BYTES_MAX => {
                Ok(FrameHeader { offset, body_bytes })
            }
            _ => Err(FrameError::BadSize { offset, size }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_byte_layout_is_rocketmqs() {
        let head = FrameHeader {
            offset: 0x0102_0304_0506_0708,
            body_bytes: 0x20,
        }
        .encode();
        assert_eq!(head, [1, 2, 3, 4, 5, 6, 7, 8, 0, 0, 0, 0x20]);
        assert_eq!(FrameHeader::decode(&head).unwrap().body_bytes, 0x20);
        assert_eq!(encode_report(258), [0, 0, 0, 0, 0, 0, 1, 2]);
        let mut two = encode_report(5).to_vec();
        two.extend_from_slice(&encode_report(9));
        two.push(1);
        assert_eq!(last_report(&two), Some((9, 16)));
        assert_eq!(last_report(&two[..7]), None);
        let mut bad = head;
        bad[8] = 0x80;
        assert!(FrameHeader::decode(&bad).is_err());
    }
}

pub mod autoswitch;
