//! The stored message record: RocketMQ's CommitLog layout, which is also the
//! body of a pull response (records back to back).
//!
//! ```text
//! TOTALSIZE 4 | MAGICCODE 4 | BODYCRC 4 | QUEUEID 4 | FLAG 4 | QUEUEOFFSET 8 |
//! PHYSICALOFFSET 8 | SYSFLAG 4 | BORNTIMESTAMP 8 | BORNHOST 8 (IPv6 20) |
//! STORETIMESTAMP 8 | STOREHOST 8 (IPv6 20) | RECONSUMETIMES 4 |
//! PREPAREDTRANSACTIONOFFSET 8 | BODY (i32 len + bytes) |
//! TOPIC (v1: u8 len, v2: i16 len + bytes) | PROPERTIES (i16 len + bytes)
//! ```
//! A host is the address bytes followed by the port as an i32. A segment ends
//! with a blank record: TOTALSIZE (the rest of the segment) and BLANK_MAGIC.
//! Decoding borrows from the buffer, checks every length against TOTALSIZE
//! and never panics.

use std::net::{IpAddr, SocketAddr};

use bytes::{BufMut, BytesMut};

use crate::limits::PROPERTIES_BYTES_MAX;
use crate::properties::Properties;
use crate::ProtocolError;

mod decode;
pub use decode::{
    decode_record, index_fields, peek_record, records, IndexFields, RecordPeek, Records,
};

/// Magic of a v1 record: topic length is one byte (`MESSAGE_MAGIC_CODE`).
pub const MAGIC_V1: u32 = 0xDAA3_20A7;
/// Magic of a v2 record: topic length is an i16 (`MESSAGE_MAGIC_CODE_V2`).
pub const MAGIC_V2: u32 = 0xDAA3_20AB;
/// Magic of the blank record that fills a segment's end (`BLANK_MAGIC_CODE`).
pub const BLANK_MAGIC: u32 = 0xCBD4_3194;

/// Byte positions of the fixed fields (Java `MessageDecoder.*_POSITION`).
pub const MAGIC_POS: usize = 4;
pub const BODY_CRC_POS: usize = 8;
pub const QUEUE_ID_POS: usize = 12;
pub const FLAG_POS: usize = 16;
pub const QUEUE_OFFSET_POS: usize = 20;
pub const PHYSICAL_OFFSET_POS: usize = 28;
pub const SYS_FLAG_POS: usize = 36;
pub const BORN_TIMESTAMP_POS: usize = 40;
pub const BORN_HOST_POS: usize = 48;

/// Smallest message record: v1, IPv4 hosts, empty body, topic, properties.
pub const RECORD_BYTES_MIN: usize = 91;
/// Smallest blank record: TOTALSIZE and MAGIC (`END_FILE_MIN_BLANK_LENGTH`).
pub const BLANK_BYTES_MIN: usize = 8;
/// Longest topic a v1 record holds; Java reads the length as a signed byte
/// and switches to v2 above `Byte.MAX_VALUE`.
pub const TOPIC_BYTES_MAX_V1: usize = i8::MAX as usize;
/// Longest topic a v2 record holds.
pub const TOPIC_BYTES_MAX_V2: usize = i16::MAX as usize;

// The fixed part of a record, field after field (`CommitLog`'s layout):
// total size and magic, body CRC, queue id and flag (i32 each), queue and
// CommitLog offsets (i64), sysFlag (i32), born time (i64), then the born
// host; with IPv4 hosts and an empty body, topic and properties the record
// ends 91 bytes in: born host (8), store time (8), store host (8),
// reconsume times (4), prepared-transaction offset (8), body, topic and
// properties lengths (4, 1, 2).
const _: () = assert!(MAGIC_POS == 4 && BODY_CRC_POS == MAGIC_POS + 4);
const _: () = assert!(QUEUE_ID_POS == BODY_CRC_POS + 4 && FLAG_POS == QUEUE_ID_POS + 4);
const _: () =
    assert!(QUEUE_OFFSET_POS == FLAG_POS + 4 && PHYSICAL_OFFSET_POS == QUEUE_OFFSET_POS + 8);
const _: () =
    assert!(SYS_FLAG_POS == PHYSICAL_OFFSET_POS + 8 && BORN_TIMESTAMP_POS == SYS_FLAG_POS + 4);
const _: () = assert!(BORN_HOST_POS == BORN_TIMESTAMP_POS + 8);
const _: () = assert!(RECORD_BYTES_MIN == BORN_HOST_POS + 8 + 8 + 8 + 4 + 8 + 4 + 1 + 2);
// A topic name the broker accepts fits a V1 record's one-byte length, and
// a default-sized body fits a frame.
const _: () = assert!(crate::limits::TOPIC_NAME_BYTES_MAX <= TOPIC_BYTES_MAX_V1);
const _: () =
    assert!(crate::limits::MESSAGE_BODY_BYTES_MAX_DEFAULT < crate::limits::FRAME_BYTES_MAX);

/// Bits of a record's `sysFlag` (Java `MessageSysFlag`).
pub mod sys_flag {
    pub const COMPRESSED: i32 = 0x1;
    pub const MULTI_TAGS: i32 = 0x2;
    pub const TRANSACTION_NOT_TYPE: i32 = 0;
    pub const TRANSACTION_PREPARED: i32 = 0x4;
    pub const TRANSACTION_COMMIT: i32 = 0x8;
    pub const TRANSACTION_ROLLBACK: i32 = 0xC;
    /// Both transaction bits.
    pub const TRANSACTION_MASK: i32 = 0xC;
    pub const BORN_HOST_V6: i32 = 0x10;
    pub const STORE_HOST_V6: i32 = 0x20;
    /// A batch that the broker must split (`NEED_UNWRAP_FLAG`).
    pub const NEED_UNWRAP: i32 = 0x40;
    /// A batch stored as one record (`INNER_BATCH_FLAG`).
    pub const INNER_BATCH: i32 = 0x80;
    pub const COMPRESSION_LZ4: i32 = 0x1 << 8;
    pub const COMPRESSION_ZSTD: i32 = 0x2 << 8;
    pub const COMPRESSION_ZLIB: i32 = 0x3 << 8;
    /// The compression type bits (`COMPRESSION_TYPE_COMPARATOR`).
    pub const COMPRESSION_TYPE_MASK: i32 = 0x7 << 8;

    /// One of the `TRANSACTION_*` values.
    pub fn transaction_type(flag: i32) -> i32 {
        flag & TRANSACTION_MASK
    }

    /// `flag` with its transaction bits replaced by `transaction_type`.
    pub fn with_transaction_type(flag: i32, transaction_type: i32) -> i32 {
        (flag & !TRANSACTION_MASK) | (transaction_type & TRANSACTION_MASK)
    }

    /// The compression type: 1 LZ4, 2 ZSTD, 3 ZLIB (0 when none is set).
    pub fn compression_type(flag: i32) -> i32 {
        (flag & COMPRESSION_TYPE_MASK) >> 8
    }
}

/// RocketMQ's body CRC: CRC32 masked to 31 bits (`UtilAll.crc32`).
pub fn body_crc(body: &[u8]) -> i32 {
    (crc32fast::hash(body) & 0x7FFF_FFFF) as i32
}

/// Size of a record with these field lengths.
pub fn record_len(
    sys_flag: i32,
    v2: bool,
    body_bytes: usize,
    topic_bytes: usize,
    properties_bytes: usize,
) -> usize {
    let born_host = host_len(sys_flag & sys_flag::BORN_HOST_V6 != 0);
    let store_host = host_len(sys_flag & sys_flag::STORE_HOST_V6 != 0);
    let topic_prefix = if v2 { 2 } else { 1 };
    BORN_HOST_POS
        + born_host
        + 8
        + store_host
        + 4
        + 8
        + 4
        + body_bytes
        + topic_prefix
        + topic_bytes
        + 2
        + properties_bytes
}

fn host_len(v6: bool) -> usize {
    if v6 {
        20
    } else {
        8
    }
}

/// IPv4-mapped IPv6 addresses are stored as IPv4, as Java sees them.
fn normalise_host(host: SocketAddr) -> SocketAddr {
    match host {
        SocketAddr::V6(v6) => match v6.ip().to_ipv4_mapped() {
            Some(v4) => SocketAddr::new(IpAddr::V4(v4), v6.port()),
            None => host,
        },
        SocketAddr::V4(_) => host,
    }
}

/// Appends the host field: address bytes then the port as an i32.
pub(crate) fn put_host(out: &mut impl BufMut, host: SocketAddr) {
    match normalise_host(host) {
        SocketAddr::V4(v4) => out.put_slice(&v4.ip().octets()),
        SocketAddr::V6(v6) => out.put_slice(&v6.ip().octets()),
    }
    out.put_i32(host.port() as i32);
}

/// Whether `host` is written as a 20-byte IPv6 host field.
pub(crate) fn is_v6_host(host: SocketAddr) -> bool {
    normalise_host(host).is_ipv6()
}

/// A record to append, before the appender assigns its offsets.
#[derive(Debug, Clone, Copy)]
pub struct NewRecord<'a> {
    pub topic: &'a str,
    pub queue_id: i32,
    pub flag: i32,
    /// Host-version bits are set from the hosts by [`NewRecord::encode`].
    pub sys_flag: i32,
    pub born_timestamp_ms: i64,
    pub born_host: SocketAddr,
    pub store_timestamp_ms: i64,
    pub store_host: SocketAddr,
    pub reconsume_times: i32,
    pub prepared_transaction_offset: i64,
    pub body: &'a [u8],
    /// Encoded properties (`name\x01value\x02...`).
    pub properties: &'a [u8],
}

impl NewRecord<'_> {
    /// The sysFlag written: the caller's, with the host-version bits matching
    /// the hosts.
    pub fn effective_sys_flag(&self) -> i32 {
        let mut flag = self.sys_flag & !(sys_flag::BORN_HOST_V6 | sys_flag::STORE_HOST_V6);
        if is_v6_host(self.born_host) {
            flag |= sys_flag::BORN_HOST_V6;
        }
        if is_v6_host(self.store_host) {
            flag |= sys_flag::STORE_HOST_V6;
        }
        flag
    }

    /// v2 only when the topic does not fit a v1 record.
    pub fn magic(&self) -> u32 {
        if self.topic.len() > TOPIC_BYTES_MAX_V1 {
            MAGIC_V2
        } else {
            MAGIC_V1
        }
    }

    /// Bytes [`NewRecord::encode`] appends.
    pub fn encoded_len(&self) -> usize {
        record_len(
            self.effective_sys_flag(),
            self.magic() == MAGIC_V2,
            self.body.len(),
            self.topic.len(),
            self.properties.len(),
        )
    }

    /// Appends the record to `out` and returns its length. Nothing is written
    /// when a field is too long for the layout.
    pub fn encode(
        &self,
        queue_offset: i64,
        physical_offset: i64,
        out: &mut BytesMut,
    ) -> Result<usize, ProtocolError> {
        if self.properties.len() > PROPERTIES_BYTES_MAX {
            return Err(ProtocolError::Record(format!(
                "properties of {} bytes exceed the limit of {PROPERTIES_BYTES_MAX} bytes",
                self.properties.len()
            )));
        }
        if self.topic.len() > TOPIC_BYTES_MAX_V2 {
            return Err(ProtocolError::Record(format!(
                "topic of {} bytes exceeds the limit of {TOPIC_BYTES_MAX_V2} bytes",
                self.topic.len()
            )));
        }
        let total = self.encoded_len();
        if total > i32::MAX as usize {
            return Err(ProtocolError::Record(format!(
                "record of {total} bytes does not fit an i32 length"
            )));
        }
        let magic = self.magic();
        let start = out.len();
        out.reserve(total);
        out.put_i32(total as i32);
        out.put_u32(magic);
        out.put_i32(body_crc(self.body));
        out.put_i32(self.queue_id);
        out.put_i32(self.flag);
        out.put_i64(queue_offset);
        out.put_i64(physical_offset);
        out.put_i32(self.effective_sys_flag());
        out.put_i64(self.born_timestamp_ms);
        put_host(out, self.born_host);
        out.put_i64(self.store_timestamp_ms);
        put_host(out, self.store_host);
        out.put_i32(self.reconsume_times);
        out.put_i64(self.prepared_transaction_offset);
        out.put_i32(self.body.len() as i32);
        out.put_slice(self.body);
        if magic == MAGIC_V2 {
            out.put_i16(self.topic.len() as i16);
        } else {
            out.put_u8(self.topic.len() as u8);
        }
        out.put_slice(self.topic.as_bytes());
        out.put_i16(self.properties.len() as i16);
        out.put_slice(self.properties);
        assert_eq!(out.len() - start, total, "record length mismatch");
        Ok(total)
    }
}

/// Writes the queue and physical offsets into an encoded record in place.
///
/// # Panics
/// When `record` is shorter than the fixed part that holds them; the caller
/// passes a record it encoded.
pub fn patch_offsets(record: &mut [u8], queue_offset: i64, physical_offset: i64) {
    assert!(
        record.len() >= SYS_FLAG_POS,
        "a record of {} bytes cannot hold its offsets",
        record.len()
    );
    record[QUEUE_OFFSET_POS..QUEUE_OFFSET_POS + 8].copy_from_slice(&queue_offset.to_be_bytes());
    record[PHYSICAL_OFFSET_POS..PHYSICAL_OFFSET_POS + 8]
        .copy_from_slice(&physical_offset.to_be_bytes());
}

/// Appends a blank record of `total_size` bytes (at least [`BLANK_BYTES_MIN`]):
/// the header, then zeros.
pub fn encode_blank(total_size: usize, out: &mut BytesMut) {
    assert!(
        (BLANK_BYTES_MIN..=i32::MAX as usize).contains(&total_size),
        "blank record of {total_size} bytes"
    );
    out.put_i32(total_size as i32);
    out.put_u32(BLANK_MAGIC);
    out.put_bytes(0, total_size - BLANK_BYTES_MIN);
}

/// One decoded record, borrowing from the buffer it was read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordView<'a> {
    /// The whole record, TOTALSIZE included.
    pub record: &'a [u8],
    pub total_size: usize,
    pub magic: u32,
    pub body_crc: i32,
    pub queue_id: i32,
    pub flag: i32,
    pub queue_offset: i64,
    pub physical_offset: i64,
    pub sys_flag: i32,
    pub born_timestamp_ms: i64,
    pub born_host: SocketAddr,
    pub store_timestamp_ms: i64,
    pub store_host: SocketAddr,
    pub reconsume_times: i32,
    pub prepared_transaction_offset: i64,
    pub body: &'a [u8],
    pub topic: &'a str,
    /// Encoded properties; parse with [`RecordView::properties`].
    pub properties: &'a [u8],
}

impl RecordView<'_> {
    pub fn properties(&self) -> Properties {
        Properties::decode(self.properties)
    }

    /// The offset message id: store host and physical offset, in hex.
    pub fn offset_msg_id(&self) -> String {
        crate::message_id::offset_msg_id(self.store_host, self.physical_offset)
    }

    pub fn body_crc_matches(&self) -> bool {
        body_crc(self.body) == self.body_crc
    }
}
