//! The body of SEND_BATCH_MESSAGE: messages back to back, each
//!
//! ```text
//! TOTALSIZE 4 | MAGICCODE 4 | BODYCRC 4 | FLAG 4 | BODY (i32 len + bytes) |
//! PROPERTIES (i16 len + bytes)
//! ```
//! (Java `MessageDecoder.encodeMessage`). Clients write 0 for MAGICCODE and
//! BODYCRC; the broker computes the CRC when it stores the message. Like the
//! Java broker, decoding reads the fields in order and does not rely on
//! TOTALSIZE, MAGICCODE or BODYCRC.

use bytes::{Buf, BufMut, Bytes, BytesMut};

use crate::limits::{BATCH_MESSAGES_MAX, PROPERTIES_BYTES_MAX};
use crate::ProtocolError;

/// Bytes of one item besides its body and properties.
pub const BATCH_ITEM_OVERHEAD_BYTES: usize = 4 + 4 + 4 + 4 + 4 + 2;
// TOTALSIZE, MAGICCODE, BODYCRC, FLAG, the body's i32 length, the
// properties' i16 length.
const _: () = assert!(
    BATCH_ITEM_OVERHEAD_BYTES == 4 * size_of::<i32>() + size_of::<i32>() + size_of::<i16>()
);

/// One message of a batch.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct BatchItem {
    pub flag: i32,
    pub body: Bytes,
    /// Encoded properties (`name\x01value\x02...`).
    pub properties: Bytes,
}

impl BatchItem {
    /// Bytes this item takes in a batch body.
    pub fn encoded_len(&self) -> usize {
        BATCH_ITEM_OVERHEAD_BYTES + self.body.len() + self.properties.len()
    }
}

fn body_error(message: String) -> ProtocolError {
    ProtocolError::Body(message)
}

fn need(buf: &Bytes, count: usize, what: &str, index: usize) -> Result<(), ProtocolError> {
    if buf.remaining() < count {
        return Err(body_error(format!(
            "batch message {index}: {what} needs {count} bytes, {} left",
            buf.remaining()
        )));
    }
    Ok(())
}

fn take(buf: &mut Bytes, len: i64, what: &str, index: usize) -> Result<Bytes, ProtocolError> {
    let count = usize::try_from(len)
        .map_err(|_| body_error(format!("batch message {index}: {what} length {len}")))?;
    need(buf, count, what, index)?;
    Ok(buf.split_to(count))
}

/// Splits a batch body into its messages (slices of `body`, no copies).
/// At most [`BATCH_MESSAGES_MAX`] messages; an empty body gives none.
pub fn decode_batch(body: &Bytes) -> Result<Vec<BatchItem>, ProtocolError> {
    let mut buf = body.clone();
    let mut items = Vec::new();
    while buf.has_remaining() {
        let index = items.len();
        if index >= BATCH_MESSAGES_MAX {
            return Err(body_error(format!(
                "the batch holds more than {BATCH_MESSAGES_MAX} messages"
            )));
        }
        need(&buf, 4 + 4 + 4 + 4 + 4, "header", index)?;
        buf.advance(4 + 4 + 4); // TOTALSIZE, MAGICCODE, BODYCRC
        let flag = buf.get_i32();
        let body_len = buf.get_i32();
        let body = take(&mut buf, body_len.into(), "body", index)?;
        need(&buf, 2, "properties length", index)?;
        let properties_len = buf.get_i16();
        let properties = take(&mut buf, properties_len.into(), "properties", index)?;
        items.push(BatchItem {
            flag,
            body,
            properties,
        });
    }
    Ok(items)
}

/// Appends one batch message as the Java client writes it.
pub fn encode_batch_item(
    flag: i32,
    body: &[u8],
    properties: &[u8],
    out: &mut BytesMut,
) -> Result<(), ProtocolError> {
    if properties.len() > PROPERTIES_BYTES_MAX {
        return Err(body_error(format!(
            "properties of {} bytes exceed the limit of {PROPERTIES_BYTES_MAX} bytes",
            properties.len()
        )));
    }
    let total = BATCH_ITEM_OVERHEAD_BYTES + body.len() + properties.len();
    if total > i32::MAX as usize {
        return Err(body_error(format!(
            "batch message of {total} bytes does not fit an i32 length"
        )));
    }
    out.reserve(total);
    out.put_i32(total as i32);
    out.put_i32(0); // MAGICCODE
    out.put_i32(0); // BODYCRC
    out.put_i32(flag);
    out.put_i32(body.len() as i32);
    out.put_slice(body);
    out.put_i16(properties.len() as i16);
    out.put_slice(properties);
    Ok(())
}

/// Encodes a whole batch body (at most [`BATCH_MESSAGES_MAX`] messages).
pub fn encode_batch(items: &[BatchItem]) -> Result<Bytes, ProtocolError> {
    if items.len() > BATCH_MESSAGES_MAX {
        return Err(body_error(format!(
            "a batch of {} messages exceeds the limit of {BATCH_MESSAGES_MAX}",
            items.len()
        )));
    }
    let mut out = BytesMut::with_capacity(items.iter().map(BatchItem::encoded_len).sum::<usize>());
    for item in items {
        encode_batch_item(item.flag, &item.body, &item.properties, &mut out)?;
    }
    Ok(out.freeze())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_errors() {
        let items = vec![
            BatchItem {
                flag: 3,
                body: Bytes::from_static(b"hello"),
                properties: Bytes::from_static(b"TAGS\x01a\x02"),
            },
            BatchItem::default(),
        ];
        let body = encode_batch(&items).unwrap();
        assert_eq!(
            body.len(),
            items.iter().map(BatchItem::encoded_len).sum::<usize>()
        );
        assert_eq!(decode_batch(&body).unwrap(), items);
        assert!(decode_batch(&body.slice(..body.len() - 1)).is_err());
        assert_eq!(decode_batch(&Bytes::new()).unwrap(), vec![]);

        let mut negative = BytesMut::from(&body[..]);
        negative[16..20].copy_from_slice(&(-1i32).to_be_bytes());
        assert!(decode_batch(&negative.freeze()).is_err());
    }

    #[test]
    fn count_limit() {
        let one = encode_batch(&[BatchItem::default()]).unwrap();
        let mut many = BytesMut::new();
        for _ in 0..BATCH_MESSAGES_MAX {
            many.extend_from_slice(&one);
        }
        assert_eq!(
            decode_batch(&many.clone().freeze()).unwrap().len(),
            BATCH_MESSAGES_MAX
        );
        many.extend_from_slice(&one);
        assert!(decode_batch(&many.freeze()).is_err());
        let too_many = vec![BatchItem::default(); BATCH_MESSAGES_MAX + 1];
        assert!(encode_batch(&too_many).is_err());
    }
}
