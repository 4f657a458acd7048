//! Reading stored records: peeks for recovery scans, whole-record decodes,
//! the index feed's three fields, and iteration over records back to back
//! (a pull body or a CommitLog window). Every length is checked against
//! TOTALSIZE; nothing here panics on bad bytes.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use super::{
    body_crc, sys_flag, RecordView, BLANK_BYTES_MIN, BLANK_MAGIC, BODY_CRC_POS, MAGIC_V1, MAGIC_V2,
    RECORD_BYTES_MIN, SYS_FLAG_POS,
};
use crate::ProtocolError;

fn record_error(message: impl Into<String>) -> ProtocolError {
    ProtocolError::Record(message.into())
}

/// TOPIC and PROPERTIES, the last fields of a record (the cursor just
/// past BODY), checking that they end the record.
fn topic_and_properties<'a>(
    c: &mut Cursor<'a>,
    magic: u32,
) -> Result<(&'a str, &'a [u8]), ProtocolError> {
    let topic_len = if magic == MAGIC_V2 {
        i64::from(c.i16("TOPIC length")?)
    } else {
        i64::from(c.array::<1>("TOPIC length")?[0])
    };
    let topic = c.length(topic_len, "TOPIC")?;
    let topic =
        std::str::from_utf8(topic).map_err(|_| record_error("the topic is not valid UTF-8"))?;
    let properties_len = c.i16("PROPERTIES length")?;
    let properties = c.length(properties_len.into(), "PROPERTIES")?;
    if c.pos != c.buf.len() {
        return Err(record_error(format!(
            "fields end at {} but the total size is {}",
            c.pos,
            c.buf.len()
        )));
    }
    Ok((topic, properties))
}

/// What the message index reads of a record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IndexFields<'a> {
    pub topic: &'a str,
    pub properties: &'a [u8],
    pub store_timestamp_ms: i64,
}

/// The topic, properties and store time of the message record at the front
/// of `buf`, skipping the fields between them (the index feed reads these
/// three of every stored message; [`decode_record`] reads and checks all).
/// Lengths and the record's end are checked as `decode_record` checks
/// them; the hosts' ports, skipped, are not.
pub fn index_fields(buf: &[u8]) -> Result<IndexFields<'_>, ProtocolError> {
    let (record, magic) = message_record(buf)?;
    let mut c = Cursor {
        buf: record,
        pos: SYS_FLAG_POS,
    };
    let sys_flag = c.i32("SYSFLAG")?;
    let host_bytes = |v6: bool| if v6 { 16 + 4 } else { 4 + 4 };
    let born_v6 = sys_flag & sys_flag::BORN_HOST_V6 != 0;
    c.take(8 + host_bytes(born_v6), "BORNTIMESTAMP and BORNHOST")?;
    let store_timestamp_ms = c.i64("STORETIMESTAMP")?;
    let store_v6 = sys_flag & sys_flag::STORE_HOST_V6 != 0;
    c.take(
        host_bytes(store_v6) + 4 + 8,
        "STOREHOST to PREPAREDTRANSACTIONOFFSET",
    )?;
    let body_len = c.i32("BODY length")?;
    c.length(body_len.into(), "BODY")?;
    let (topic, properties) = topic_and_properties(&mut c, magic)?;
    Ok(IndexFields {
        topic,
        properties,
        store_timestamp_ms,
    })
}

/// A bounds-checked cursor over one record.
struct Cursor<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, count: usize, what: &str) -> Result<&'a [u8], ProtocolError> {
        let end = self
            .pos
            .checked_add(count)
            .filter(|end| *end <= self.buf.len())
            .ok_or_else(|| {
                record_error(format!(
                    "{what} of {count} bytes at {} overruns the record's {} bytes",
                    self.pos,
                    self.buf.len()
                ))
            })?;
        let bytes = &self.buf[self.pos..end];
        self.pos = end;
        Ok(bytes)
    }

    fn array<const N: usize>(&mut self, what: &str) -> Result<[u8; N], ProtocolError> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N, what)?);
        Ok(out)
    }

    fn i16(&mut self, what: &str) -> Result<i16, ProtocolError> {
        Ok(i16::from_be_bytes(self.array(what)?))
    }

    fn i32(&mut self, what: &str) -> Result<i32, ProtocolError> {
        Ok(i32::from_be_bytes(self.array(what)?))
    }

    fn i64(&mut self, what: &str) -> Result<i64, ProtocolError> {
        Ok(i64::from_be_bytes(self.array(what)?))
    }

    fn host(&mut self, v6: bool, what: &str) -> Result<SocketAddr, ProtocolError> {
        let ip = if v6 {
            IpAddr::V6(Ipv6Addr::from(self.array::<16>(what)?))
        } else {
            IpAddr::V4(Ipv4Addr::from(self.array::<4>(what)?))
        };
        let port = self.i32(what)?;
        let port = u16::try_from(port)
            .map_err(|_| record_error(format!("{what} has port {port} outside 0..=65535")))?;
        Ok(SocketAddr::new(ip, port))
    }

    fn length(&mut self, value: i64, what: &str) -> Result<&'a [u8], ProtocolError> {
        let count = usize::try_from(value)
            .map_err(|_| record_error(format!("{what} length {value} is negative")))?;
        self.take(count, what)
    }
}

/// What the first eight bytes of a CommitLog position hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordPeek {
    /// A message record of `total_size` bytes (TOTALSIZE included).
    Message { total_size: usize, magic: u32 },
    /// The filler at a segment's end, `total_size` bytes up to its end.
    Blank { total_size: usize },
    /// Eight zero bytes: space never written.
    Unwritten,
}

/// Reads TOTALSIZE and MAGIC at the front of `buf` (which need not hold the
/// whole record), for recovery scans.
pub fn peek_record(buf: &[u8]) -> Result<RecordPeek, ProtocolError> {
    let Some(head) = buf.get(..8) else {
        return Err(ProtocolError::Truncated {
            what: "record header",
            need_bytes: 8,
            have_bytes: buf.len(),
        });
    };
    let total = i32::from_be_bytes([head[0], head[1], head[2], head[3]]);
    let magic = u32::from_be_bytes([head[4], head[5], head[6], head[7]]);
    let min = match magic {
        MAGIC_V1 | MAGIC_V2 => RECORD_BYTES_MIN,
        BLANK_MAGIC => BLANK_BYTES_MIN,
        0 if total == 0 => return Ok(RecordPeek::Unwritten),
        other => return Err(record_error(format!("unknown magic code {other:#010X}"))),
    };
    let total_size = usize::try_from(total)
        .ok()
        .filter(|size| *size >= min)
        .ok_or_else(|| {
            record_error(format!(
                "total size {total} is below the minimum of {min} bytes"
            ))
        })?;
    Ok(if magic == BLANK_MAGIC {
        RecordPeek::Blank { total_size }
    } else {
        RecordPeek::Message { total_size, magic }
    })
}

/// Decodes the message record at the front of `buf`, checking the body CRC
/// when `verify_crc`. `buf` may continue past the record.
pub fn decode_record(buf: &[u8], verify_crc: bool) -> Result<RecordView<'_>, ProtocolError> {
    let (record, magic) = message_record(buf)?;
    let view = record_fields(record, magic)?;
    if verify_crc && !view.body_crc_matches() {
        return Err(record_error(format!(
            "body CRC {} does not match the stored {}",
            body_crc(view.body),
            view.body_crc
        )));
    }
    Ok(view)
}

/// The whole message record at the front of `buf`, and its magic.
fn message_record(buf: &[u8]) -> Result<(&[u8], u32), ProtocolError> {
    let (total_size, magic) = match peek_record(buf)? {
        RecordPeek::Message { total_size, magic } => (total_size, magic),
        RecordPeek::Blank { .. } => return Err(record_error("blank (end of segment) record")),
        RecordPeek::Unwritten => return Err(record_error("unwritten (zero) bytes")),
    };
    let Some(record) = buf.get(..total_size) else {
        return Err(ProtocolError::Truncated {
            what: "record",
            need_bytes: total_size,
            have_bytes: buf.len(),
        });
    };
    Ok((record, magic))
}

/// The fields of one whole `record` (TOTALSIZE and MAGICCODE already read).
fn record_fields(record: &[u8], magic: u32) -> Result<RecordView<'_>, ProtocolError> {
    let total_size = record.len();
    let mut c = Cursor {
        buf: record,
        pos: BODY_CRC_POS,
    };
    let stored_crc = c.i32("BODYCRC")?;
    let queue_id = c.i32("QUEUEID")?;
    let flag = c.i32("FLAG")?;
    let queue_offset = c.i64("QUEUEOFFSET")?;
    let physical_offset = c.i64("PHYSICALOFFSET")?;
    let sys_flag = c.i32("SYSFLAG")?;
    let born_timestamp_ms = c.i64("BORNTIMESTAMP")?;
    let born_host = c.host(sys_flag & sys_flag::BORN_HOST_V6 != 0, "BORNHOST")?;
    let store_timestamp_ms = c.i64("STORETIMESTAMP")?;
    let store_host = c.host(sys_flag & sys_flag::STORE_HOST_V6 != 0, "STOREHOST")?;
    let reconsume_times = c.i32("RECONSUMETIMES")?;
    let prepared_transaction_offset = c.i64("PREPAREDTRANSACTIONOFFSET")?;
    let body_len = c.i32("BODY length")?;
    let body = c.length(body_len.into(), "BODY")?;
    let (topic, properties) = topic_and_properties(&mut c, magic)?;
    Ok(RecordView {
        record,
        total_size,
        magic,
        body_crc: stored_crc,
        queue_id,
        flag,
        queue_offset,
        physical_offset,
        sys_flag,
        born_timestamp_ms,
        born_host,
        store_timestamp_ms,
        store_host,
        reconsume_times,
        prepared_transaction_offset,
        body,
        topic,
        properties,
    })
}

/// Iterates over records laid back to back (a pull body, a CommitLog range).
/// Yields one error for the first bad record, then stops.
#[derive(Debug, Clone)]
pub struct Records<'a> {
    buf: &'a [u8],
    pos: usize,
    verify_crc: bool,
    failed: bool,
}

/// The records in `buf`, which must hold whole records only.
pub fn records(buf: &[u8], verify_crc: bool) -> Records<'_> {
    Records {
        buf,
        pos: 0,
        verify_crc,
        failed: false,
    }
}

impl Records<'_> {
    /// Offset in the buffer of the next record (after the last one yielded).
    pub fn position(&self) -> usize {
        self.pos
    }
}

impl<'a> Iterator for Records<'a> {
    type Item = Result<RecordView<'a>, ProtocolError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.pos >= self.buf.len() {
            return None;
        }
        match decode_record(&self.buf[self.pos..], self.verify_crc) {
            Ok(view) => {
                self.pos += view.total_size;
                Some(Ok(view))
            }
            Err(error) => {
                self.failed = true;
                Some(Err(error))
            }
        }
    }
}
