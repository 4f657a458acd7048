//! A stored record's body as a v5 consumer must see it. A Remoting producer
//! compresses a body over `compressMsgBodyOverHowmuch` and sets the
//! COMPRESSED sys flag; the 5.x Java client also names the codec in the
//! compression type bits (Java `CompressionType`: 1 LZ4 frame, 2 Zstandard
//! frame, 3 zlib; 0, from clients before 5.x, is zlib too). The broker
//! stores it untouched; the v5 API has no such codecs, so the endpoint
//! inflates the body, as Java's proxy does when it decodes a message.
//! Inflating never yields more than `max` bytes: a body that would is
//! refused, so a small record cannot make the endpoint allocate without
//! bound.

use std::borrow::Cow;
use std::io::Read;

use ferrocket_protocol::record::sys_flag;

/// Why a stored body cannot be handed to a v5 consumer.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum BodyError {
    #[error("compression type {0} is not one RocketMQ defines")]
    UnknownCodec(i32),
    #[error("the {codec} body does not inflate: {reason}")]
    Corrupt { codec: &'static str, reason: String },
    #[error("the {codec} body inflates to more than {max} bytes")]
    TooLarge { codec: &'static str, max: usize },
}

/// The codecs of RocketMQ's compression type bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Codec {
    Zlib,
    Lz4,
    Zstd,
}

impl Codec {
    fn of(flag: i32) -> Result<Self, BodyError> {
        match sys_flag::compression_type(flag) {
            0 | 3 => Ok(Codec::Zlib),
            1 => Ok(Codec::Lz4),
            2 => Ok(Codec::Zstd),
            other => Err(BodyError::UnknownCodec(other)),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Codec::Zlib => "zlib",
            Codec::Lz4 => "LZ4",
            Codec::Zstd => "Zstandard",
        }
    }
}

/// The body of a record with this `flag`, inflated when it is compressed;
/// never more than `max` bytes.
pub fn plain<'a>(flag: i32, body: &'a [u8], max: usize) -> Result<Cow<'a, [u8]>, BodyError> {
    if flag & sys_flag::COMPRESSED == 0 {
        return Ok(Cow::Borrowed(body));
    }
    let codec = Codec::of(flag)?;
    let corrupt = |e: std::io::Error| BodyError::Corrupt {
        codec: codec.name(),
        reason: e.to_string(),
    };
    let out = match codec {
        Codec::Zlib => read_bounded(flate2::read::ZlibDecoder::new(body), max).map_err(corrupt)?,
        Codec::Lz4 => {
            read_bounded(lz4_flex::frame::FrameDecoder::new(body), max).map_err(corrupt)?
        }
        Codec::Zstd => zstd_frames(body, max)?,
    };
    if out.len() > max {
        return Err(BodyError::TooLarge {
            codec: codec.name(),
            max,
        });
    }
    Ok(Cow::Owned(out))
}

/// Reads at most `max + 1` bytes: one more than allowed tells a body that
/// is too large from one that fits exactly.
fn read_bounded(reader: impl Read, max: usize) -> std::io::Result<Vec<u8>> {
    let mut out = Vec::new();
    reader.take(max as u64 + 1).read_to_end(&mut out)?;
    Ok(out)
}

/// Zstandard data is one or more frames back to back (Java's
/// `ZstdInputStream` reads them all); stops once `max` is passed.
fn zstd_frames(mut input: &[u8], max: usize) -> Result<Vec<u8>, BodyError> {
    let corrupt = |reason: String| BodyError::Corrupt {
        codec: Codec::Zstd.name(),
        reason,
    };
    let mut out = Vec::new();
    loop {
        let decoder = ruzstd::decoding::StreamingDecoder::new(&mut input)
            .map_err(|e| corrupt(e.to_string()))?;
        let room = (max + 1 - out.len()) as u64;
        decoder
            .take(room)
            .read_to_end(&mut out)
            .map_err(|e| corrupt(e.to_string()))?;
        if input.is_empty() || out.len() > max {
            return Ok(out);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    const MAX: usize = 64 * 1024;
    const LZ4: i32 = sys_flag::COMPRESSED | sys_flag::COMPRESSION_LZ4;
    const ZSTD: i32 = sys_flag::COMPRESSED | sys_flag::COMPRESSION_ZSTD;
    const ZLIB: i32 = sys_flag::COMPRESSED | sys_flag::COMPRESSION_ZLIB;

    fn text(len: usize) -> Vec<u8> {
        (0..)
            .map(|i| format!("line {i} of a body\n"))
            .flat_map(String::into_bytes)
            .take(len)
            .collect()
    }

    fn lz4(data: &[u8]) -> Vec<u8> {
        let mut encoder = lz4_flex::frame::FrameEncoder::new(Vec::new());
        encoder.write_all(data).unwrap();
        encoder.finish().unwrap()
    }

    fn zstd(data: &[u8]) -> Vec<u8> {
        ruzstd::encoding::compress_to_vec(data, ruzstd::encoding::CompressionLevel::Fastest)
    }

    fn zlib(data: &[u8]) -> Vec<u8> {
        let mut encoder =
            flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        encoder.write_all(data).unwrap();
        encoder.finish().unwrap()
    }

    #[test]
    fn each_codec_inflates_to_the_original_body() {
        let original = text(20_000);
        let cases: [(i32, Vec<u8>); 4] = [
            (LZ4, lz4(&original)),
            (ZSTD, zstd(&original)),
            (ZLIB, zlib(&original)),
            // A client before 5.x sets COMPRESSED without a type: zlib.
            (sys_flag::COMPRESSED, zlib(&original)),
        ];
        for (flag, packed) in cases {
            assert!(packed.len() < original.len() / 2, "flag {flag:#x}");
            let body = plain(flag, &packed, MAX).unwrap();
            assert_eq!(&body[..], &original[..], "flag {flag:#x}");
        }
    }

    #[test]
    fn a_body_of_exactly_the_limit_is_allowed() {
        let original = text(MAX);
        assert_eq!(plain(ZSTD, &zstd(&original), MAX).unwrap().len(), MAX);
        assert_eq!(plain(LZ4, &lz4(&original), MAX).unwrap().len(), MAX);
    }

    #[test]
    fn a_decompression_bomb_is_refused() {
        // 64 MiB of zeros pack into a few KiB; the limit is 64 KiB.
        let zeros = vec![0u8; 64 << 20];
        for (flag, packed, codec) in [
            (LZ4, lz4(&zeros), "LZ4"),
            (ZSTD, zstd(&zeros), "Zstandard"),
            (ZLIB, zlib(&zeros), "zlib"),
        ] {
            assert!(packed.len() < 1 << 20, "{codec}: {}", packed.len());
            let refused = plain(flag, &packed, MAX).unwrap_err();
            assert_eq!(refused, BodyError::TooLarge { codec, max: MAX });
        }
    }

    #[test]
    fn concatenated_zstd_frames_are_read_whole() {
        let (a, b) = (text(5000), text(7000));
        let mut packed = zstd(&a);
        packed.extend(zstd(&b));
        let body = plain(ZSTD, &packed, MAX).unwrap();
        assert_eq!(body.len(), a.len() + b.len());
        assert_eq!(&body[a.len()..], &b[..]);
    }

    #[test]
    fn corrupt_or_unknown_bodies_are_refused() {
        let garbage = b"not compressed at all".as_slice();
        for flag in [LZ4, ZSTD, ZLIB] {
            let refused = plain(flag, garbage, MAX).unwrap_err();
            assert!(matches!(refused, BodyError::Corrupt { .. }), "{refused}");
        }
        let unknown = sys_flag::COMPRESSED | (5 << 8);
        assert_eq!(
            plain(unknown, garbage, MAX).unwrap_err(),
            BodyError::UnknownCodec(5)
        );
    }

    #[test]
    fn an_uncompressed_body_is_borrowed_as_is() {
        // The type bits alone (a 5.x consumer clears COMPRESSED once it has
        // inflated) do not mean the stored body is compressed.
        let body = plain(sys_flag::COMPRESSION_LZ4, b"plain", MAX).unwrap();
        assert!(matches!(body, Cow::Borrowed(b"plain")));
    }
}
