//! Cuts the master's byte stream into the chunks a slave's store takes:
//! whole records only (a frame may end inside one), and never past a
//! blank record, which ends a segment.

use bytes::BytesMut;
use ferrocket_protocol::record::{peek_record, RecordPeek};

/// Most bytes held while a record is incomplete: the largest record (a
/// 4 MiB body plus its properties and header) with room to spare.
pub const PENDING_BYTES_MAX: usize = 16 * 1024 * 1024;

/// Bytes received from the master and not yet appended.
#[derive(Debug, Default)]
pub(crate) struct Assembler {
    /// The master's offset of `pending[0]`.
    start: i64,
    pending: BytesMut,
}

impl Assembler {
    /// Starts at the slave's CommitLog end.
    pub fn new(start: i64) -> Self {
        Self {
            start,
            pending: BytesMut::new(),
        }
    }

    /// The offset the master's next frame must carry.
    pub fn next_offset(&self) -> i64 {
        self.start + self.pending.len() as i64
    }

    /// Takes a frame's body (at `next_offset`) and returns the whole-record
    /// chunks it completes, each with its start offset.
    pub fn push(&mut self, body: &[u8]) -> Result<Vec<(i64, BytesMut)>, String> {
        self.pending.extend_from_slice(body);
        let mut chunks = Vec::new();
        loop {
            let (whole, ends_segment) = whole_records(&self.pending)?;
            if whole == 0 {
                break;
            }
            let chunk = self.pending.split_to(whole);
            chunks.push((self.start, chunk));
            self.start += whole as i64;
            if !ends_segment {
                break;
            }
        }
        if self.pending.len() > PENDING_BYTES_MAX {
            return Err(format!(
                "{} bytes from offset {} hold no whole record",
                self.pending.len(),
                self.start
            ));
        }
        Ok(chunks)
    }
}

/// Bytes of the whole records at the front of `buf`, and whether they end
/// with a blank record (a segment's end).
fn whole_records(buf: &[u8]) -> Result<(usize, bool), String> {
    let mut at = 0;
    while buf.len() - at >= 8 {
        let (size, blank) = match peek_record(&buf[at..]) {
            Ok(RecordPeek::Message { total_size, .. }) => (total_size, false),
            Ok(RecordPeek::Blank { total_size }) => (total_size, true),
            Ok(RecordPeek::Unwritten) => return Err(format!("zero bytes at stream byte {at}")),
            Err(e) => return Err(format!("at stream byte {at}: {e}")),
        };
        if buf.len() - at < size {
            break;
        }
        at += size;
        if blank {
            return Ok((at, true));
        }
    }
    Ok((at, false))
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::BufMut;
    use ferrocket_protocol::record::{encode_blank, NewRecord};

    fn record(body: &[u8]) -> BytesMut {
        let host = "127.0.0.1:1".parse().unwrap();
        let mut out = BytesMut::new();
        NewRecord {
            topic: "T",
            queue_id: 0,
            flag: 0,
            sys_flag: 0,
            born_timestamp_ms: 1,
            born_host: host,
            store_timestamp_ms: 2,
            store_host: host,
            reconsume_times: 0,
            prepared_transaction_offset: 0,
            body,
            properties: b"",
        }
        .encode(0, 0, &mut out)
        .unwrap();
        out
    }

    #[test]
    fn frames_cut_anywhere_give_whole_records_split_at_segment_ends() {
        let mut stream = BytesMut::new();
        let a = record(b"first");
        let b = record(&[7u8; 300]);
        stream.put_slice(&a);
        stream.put_slice(&b);
        encode_blank(64, &mut stream);
        let c = record(b"next segment");
        stream.put_slice(&c);
        let mut assembler = Assembler::new(1000);
        let mut chunks = Vec::new();
        for piece in stream.chunks(37) {
            assert_eq!(
                assembler.next_offset(),
                1000 + chunks
                    .iter()
                    .map(|(_, c): &(i64, BytesMut)| c.len() as i64)
                    .sum::<i64>()
                    + assembler.pending.len() as i64
            );
            chunks.extend(assembler.push(piece).unwrap());
        }
        let joined: Vec<u8> = chunks.iter().flat_map(|(_, c)| c.to_vec()).collect();
        assert_eq!(joined, stream.to_vec());
        // The blank ends a chunk; the next segment's record starts one.
        let blank_end = 1000 + (a.len() + b.len() + 64) as i64;
        assert!(chunks.iter().any(|(start, _)| *start == blank_end));
        assert!(chunks
            .iter()
            .all(|(start, c)| *start >= blank_end || *start + c.len() as i64 <= blank_end));
        assert!(Assembler::new(0).push(&[0xFF; 16]).is_err());
    }
}
