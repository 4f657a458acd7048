//! Remoting frames (RocketMQ `RemotingCommand`).
//!
//! ```text
//! [i32 total = 4 + header_len + body_len]
//! [i32 (serialize_type << 24) | header_len]
//! [header bytes][body bytes]
//! ```
//! The header is JSON (type 0) or RocketMQ's binary form (type 1). Decoding
//! is as liberal as Java's JSON reader; encoding writes what the Java client
//! writes, `serializeTypeCurrentRPC` included.

use bytes::{Buf, BufMut, Bytes, BytesMut};
use serde_json::Value;

use crate::limits::{EXT_FIELDS_COUNT_MAX, FRAME_BYTES_MAX};
use crate::{ExtFields, ProtocolError};

mod json;

/// `flag` bit 0: this command is a response.
pub const FLAG_RESPONSE: i32 = 1;
/// `flag` bit 1: the request expects no response.
pub const FLAG_ONEWAY: i32 = 2;
// Separate bits of the `flag` field.
const _: () = assert!(FLAG_RESPONSE & FLAG_ONEWAY == 0);

/// Header serialization of a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SerializeType {
    #[default]
    Json = 0,
    RocketMq = 1,
}

impl SerializeType {
    pub fn from_byte(byte: u8) -> Result<Self, ProtocolError> {
        match byte {
            0 => Ok(SerializeType::Json),
            1 => Ok(SerializeType::RocketMq),
            other => Err(ProtocolError::SerializeType(other)),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            SerializeType::Json => "JSON",
            SerializeType::RocketMq => "ROCKETMQ",
        }
    }
}

/// Client language (RocketMQ `LanguageCode`). Unknown names and ordinals are
/// kept as `Other`, never rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LanguageCode {
    #[default]
    Java,
    Cpp,
    Dotnet,
    Python,
    Delphi,
    Erlang,
    Ruby,
    Other,
    Http,
    Go,
    Php,
    Oms,
    Rust,
}

const LANGUAGES: [(LanguageCode, &str); 13] = [
    (LanguageCode::Java, "JAVA"),
    (LanguageCode::Cpp, "CPP"),
    (LanguageCode::Dotnet, "DOTNET"),
    (LanguageCode::Python, "PYTHON"),
    (LanguageCode::Delphi, "DELPHI"),
    (LanguageCode::Erlang, "ERLANG"),
    (LanguageCode::Ruby, "RUBY"),
    (LanguageCode::Other, "OTHER"),
    (LanguageCode::Http, "HTTP"),
    (LanguageCode::Go, "GO"),
    (LanguageCode::Php, "PHP"),
    (LanguageCode::Oms, "OMS"),
    (LanguageCode::Rust, "RUST"),
];

impl LanguageCode {
    pub fn from_ordinal(ordinal: i64) -> Self {
        usize::try_from(ordinal)
            .ok()
            .and_then(|i| LANGUAGES.get(i))
            .map_or(LanguageCode::Other, |(code, _)| *code)
    }

    pub fn from_name(name: &str) -> Self {
        LANGUAGES
            .iter()
            .find(|(_, n)| n.eq_ignore_ascii_case(name.trim()))
            .map_or(LanguageCode::Other, |(code, _)| *code)
    }

    pub fn ordinal(self) -> u8 {
        self as u8
    }

    pub fn name(self) -> &'static str {
        LANGUAGES[self as usize].1
    }
}

/// One request or response on a Remoting connection.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RemotingCommand {
    pub code: i32,
    pub language: LanguageCode,
    pub version: i32,
    pub opaque: i32,
    pub flag: i32,
    pub remark: Option<String>,
    pub ext_fields: ExtFields,
    pub serialize_type: SerializeType,
    pub body: Bytes,
}

/// Version our own client and responses announce (RocketMQ V5_2_0;
/// [`crate::version::version_desc`]).
pub const VERSION_DEFAULT: i32 = 453;

impl RemotingCommand {
    /// A new request with the given code.
    pub fn request(code: i32) -> Self {
        Self {
            code,
            version: VERSION_DEFAULT,
            ..Self::default()
        }
    }

    /// A response to `request`: same opaque and serialize type.
    pub fn response_to(request: &RemotingCommand, code: i32, remark: Option<String>) -> Self {
        Self {
            code,
            version: VERSION_DEFAULT,
            opaque: request.opaque,
            flag: FLAG_RESPONSE,
            remark,
            serialize_type: request.serialize_type,
            ..Self::default()
        }
    }

    /// REQUEST_CODE_NOT_SUPPORTED with the Java broker's remark.
    pub fn not_supported(request: &RemotingCommand) -> Self {
        Self::response_to(
            request,
            crate::codes::response_code::REQUEST_CODE_NOT_SUPPORTED,
            Some(format!(" request type {} not supported", request.code)),
        )
    }

    pub fn with_ext(mut self, key: &str, value: impl ToString) -> Self {
        self.ext_fields.insert(key, value.to_string());
        self
    }

    pub fn with_body(mut self, body: impl Into<Bytes>) -> Self {
        self.body = body.into();
        self
    }

    pub fn is_response(&self) -> bool {
        self.flag & FLAG_RESPONSE != 0
    }

    pub fn is_oneway(&self) -> bool {
        self.flag & FLAG_ONEWAY != 0
    }

    pub fn mark_oneway(&mut self) {
        self.flag |= FLAG_ONEWAY;
    }

    /// Appends the whole frame, length prefix included, to `out`.
    pub fn encode(&self, out: &mut BytesMut) {
        let start = out.len();
        out.put_i32(0); // total, patched below
        out.put_i32(0); // type and header length, patched below
        let header_start = out.len();
        match self.serialize_type {
            SerializeType::Json => self.encode_json_header(out),
            SerializeType::RocketMq => self.encode_binary_header(out),
        }
        let header_len = out.len() - header_start;
        out.extend_from_slice(&self.body);
        let total = out.len() - start - 4;
        debug_assert!(header_len < (1 << 24), "header longer than 16 MiB");
        out[start..start + 4].copy_from_slice(&(total as i32).to_be_bytes());
        let marked = ((self.serialize_type as u32) << 24) | header_len as u32;
        out[start + 4..start + 8].copy_from_slice(&marked.to_be_bytes());
    }

    /// At least the bytes [`RemotingCommand::encode`] writes when no text
    /// needs a JSON escape: room to encode without growing the buffer (a
    /// JSON send answer outgrew a fixed 256 bytes, and growing it was 1.1%
    /// of a send profile).
    pub fn encoded_len_max(&self) -> usize {
        // Length prefixes, the fixed fields at their longest, JSON's key
        // names and punctuation.
        const FIXED_BYTES_MAX: usize = 8 + 200;
        // Quotes, colon and comma of one extFields entry.
        const FIELD_PUNCTUATION_BYTES: usize = 6;
        let remark = self.remark.as_ref().map_or(0, String::len);
        let fields = self.ext_fields.text_bytes() + self.ext_fields.len() * FIELD_PUNCTUATION_BYTES;
        // Escaped text (up to six bytes per byte) is rare: not sized here.
        FIXED_BYTES_MAX + remark + fields + self.body.len()
    }

    /// The whole frame as a new buffer.
    pub fn to_bytes(&self) -> Bytes {
        let mut out = BytesMut::with_capacity(self.encoded_len_max());
        self.encode(&mut out);
        out.freeze()
    }

    /// Decodes one complete frame, `frame` starting at the length prefix and
    /// holding exactly `4 + total` bytes.
    pub fn decode(frame: Bytes) -> Result<Self, ProtocolError> {
        let mut frame = frame;
        if frame.len() < 8 {
            return Err(truncated("frame", 8, frame.len()));
        }
        let total = frame.get_i32() as i64;
        if total < 4 || total as usize > FRAME_BYTES_MAX || total as usize != frame.len() {
            return Err(ProtocolError::FrameLength {
                length_bytes: total,
                max_bytes: FRAME_BYTES_MAX,
            });
        }
        let marked = frame.get_u32();
        let serialize_type = SerializeType::from_byte((marked >> 24) as u8)?;
        let header_len = (marked & 0x00FF_FFFF) as usize;
        if header_len > frame.len() {
            return Err(ProtocolError::HeaderLength {
                header_bytes: header_len,
                frame_bytes: total as usize,
            });
        }
        let header = frame.split_to(header_len);
        let mut command = match serialize_type {
            SerializeType::Json => decode_json_header(&header)?,
            SerializeType::RocketMq => decode_binary_header(header)?,
        };
        command.serialize_type = serialize_type;
        command.body = frame;
        Ok(command)
    }

    fn encode_json_header(&self, out: &mut BytesMut) {
        json::encode_header(self, out);
    }

    fn encode_binary_header(&self, out: &mut BytesMut) {
        out.put_i16(self.code as i16);
        out.put_u8(self.language.ordinal());
        out.put_i16(self.version as i16);
        out.put_i32(self.opaque);
        out.put_i32(self.flag);
        match &self.remark {
            Some(remark) => {
                out.put_i32(remark.len() as i32);
                out.extend_from_slice(remark.as_bytes());
            }
            None => out.put_i32(0),
        }
        let ext_len: usize = self
            .ext_fields
            .iter()
            .map(|(k, v)| 2 + k.len() + 4 + v.len())
            .sum();
        out.put_i32(ext_len as i32);
        for (key, value) in self.ext_fields.iter() {
            out.put_i16(key.len() as i16);
            out.extend_from_slice(key.as_bytes());
            out.put_i32(value.len() as i32);
            out.extend_from_slice(value.as_bytes());
        }
    }
}

fn truncated(what: &'static str, need_bytes: usize, have_bytes: usize) -> ProtocolError {
    ProtocolError::Truncated {
        what,
        need_bytes,
        have_bytes,
    }
}

fn json_i64(value: Option<&Value>, field: &'static str) -> Result<i64, ProtocolError> {
    match value {
        None | Some(Value::Null) => Ok(0),
        Some(Value::Number(n)) => n
            .as_i64()
            .or_else(|| n.as_f64().filter(|f| f.fract() == 0.0).map(|f| f as i64))
            .ok_or_else(|| ProtocolError::InvalidField {
                field,
                value: n.to_string(),
            }),
        Some(Value::String(s)) => Ok(crate::ext::parse_i64(field, s)?.unwrap_or(0)),
        Some(other) => Err(ProtocolError::InvalidField {
            field,
            value: other.to_string(),
        }),
    }
}

fn json_i32(value: Option<&Value>, field: &'static str) -> Result<i32, ProtocolError> {
    let wide = json_i64(value, field)?;
    i32::try_from(wide).map_err(|_| ProtocolError::InvalidField {
        field,
        value: wide.to_string(),
    })
}

fn decode_json_header(header: &[u8]) -> Result<RemotingCommand, ProtocolError> {
    if let Some(command) = json::decode_header(header) {
        return Ok(command);
    }
    decode_json_header_lenient(header)
}

/// Any JSON header (numbers as strings, floats, nested values...), through
/// `serde_json`; the fast reader hands everything unusual to this.
fn decode_json_header_lenient(header: &[u8]) -> Result<RemotingCommand, ProtocolError> {
    let value: Value =
        serde_json::from_slice(header).map_err(|e| ProtocolError::JsonHeader(e.to_string()))?;
    let Value::Object(object) = value else {
        return Err(ProtocolError::JsonHeader(
            "the header is not a JSON object".into(),
        ));
    };
    let language = match object.get("language") {
        Some(Value::String(name)) => LanguageCode::from_name(name),
        Some(Value::Number(n)) => LanguageCode::from_ordinal(n.as_i64().unwrap_or(-1)),
        _ => LanguageCode::Java,
    };
    let remark = match object.get("remark") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(other) => Some(other.to_string()),
    };
    let mut ext_fields = ExtFields::new();
    match object.get("extFields") {
        None | Some(Value::Null) => {}
        Some(Value::Object(map)) => {
            if map.len() > EXT_FIELDS_COUNT_MAX {
                return Err(ProtocolError::JsonHeader(format!(
                    "{} extFields entries exceed the limit of {EXT_FIELDS_COUNT_MAX}",
                    map.len()
                )));
            }
            for (key, value) in map {
                let text = match value {
                    Value::Null => continue,
                    Value::String(s) => s.clone(),
                    Value::Bool(b) => b.to_string(),
                    Value::Number(n) => n.to_string(),
                    other => other.to_string(),
                };
                ext_fields.insert(key.clone(), text);
            }
        }
        Some(_) => {
            return Err(ProtocolError::JsonHeader(
                "extFields is not a JSON object".into(),
            ))
        }
    }
    Ok(RemotingCommand {
        code: json_i32(object.get("code"), "code")?,
        language,
        version: json_i32(object.get("version"), "version")?,
        opaque: json_i32(object.get("opaque"), "opaque")?,
        flag: json_i32(object.get("flag"), "flag")?,
        remark,
        ext_fields,
        serialize_type: SerializeType::Json,
        body: Bytes::new(),
    })
}

fn take_bytes(buf: &mut Bytes, len: i64, what: &'static str) -> Result<Bytes, ProtocolError> {
    if len < 0 || len as usize > buf.len() {
        return Err(truncated(what, len.max(0) as usize, buf.len()));
    }
    Ok(buf.split_to(len as usize))
}

fn take_string(buf: &mut Bytes, len: i64, what: &'static str) -> Result<String, ProtocolError> {
    let bytes = take_bytes(buf, len, what)?;
    String::from_utf8(bytes.to_vec()).map_err(|_| ProtocolError::Utf8(what))
}

/// The next `len` bytes as text, borrowed (no copy).
fn take_str<'a>(
    buf: &mut &'a [u8],
    len: i64,
    what: &'static str,
) -> Result<&'a str, ProtocolError> {
    if len < 0 || len as usize > buf.len() {
        return Err(truncated(what, len.max(0) as usize, buf.len()));
    }
    let (text, rest) = buf.split_at(len as usize);
    *buf = rest;
    std::str::from_utf8(text).map_err(|_| ProtocolError::Utf8(what))
}

fn need(buf: &Bytes, count: usize, what: &'static str) -> Result<(), ProtocolError> {
    if buf.len() < count {
        return Err(truncated(what, count, buf.len()));
    }
    Ok(())
}

fn decode_binary_header(mut buf: Bytes) -> Result<RemotingCommand, ProtocolError> {
    need(&buf, 2 + 1 + 2 + 4 + 4 + 4, "binary header")?;
    let code = buf.get_i16() as i32;
    let language = LanguageCode::from_ordinal(buf.get_u8() as i64);
    let version = buf.get_i16() as i32;
    let opaque = buf.get_i32();
    let flag = buf.get_i32();
    let remark_len = buf.get_i32() as i64;
    let remark = if remark_len > 0 {
        Some(take_string(&mut buf, remark_len, "remark")?)
    } else {
        None
    };
    need(&buf, 4, "extFields length")?;
    let ext_len = buf.get_i32() as i64;
    let ext_bytes = take_bytes(&mut buf, ext_len, "extFields")?;
    let mut ext: &[u8] = &ext_bytes;
    // Keys and values are at most the block's bytes; a field costs at least
    // 6 bytes of lengths (a typical one about 20 bytes in all).
    let mut ext_fields =
        ExtFields::with_text_capacity((ext.len() / 20).min(EXT_FIELDS_COUNT_MAX), ext.len());
    while !ext.is_empty() {
        if ext_fields.len() >= EXT_FIELDS_COUNT_MAX {
            return Err(ProtocolError::JsonHeader(format!(
                "more than {EXT_FIELDS_COUNT_MAX} extFields entries"
            )));
        }
        if ext.len() < 2 {
            return Err(truncated("extFields key length", 2, ext.len()));
        }
        let key_len = ext.get_i16() as i64;
        let key = take_str(&mut ext, key_len, "extFields key")?;
        if ext.len() < 4 {
            return Err(truncated("extFields value length", 4, ext.len()));
        }
        let value_len = ext.get_i32() as i64;
        let value = take_str(&mut ext, value_len, "extFields value")?;
        ext_fields.insert_decoded(key, value);
    }
    Ok(RemotingCommand {
        code,
        language,
        version,
        opaque,
        flag,
        remark,
        ext_fields,
        serialize_type: SerializeType::RocketMq,
        body: Bytes::new(),
    })
}

/// Splits a byte stream into frames. Feed it what the socket gave; take
/// frames out with [`FrameDecoder::next_frame`].
#[derive(Debug)]
pub struct FrameDecoder {
    frame_bytes_max: usize,
}

impl Default for FrameDecoder {
    fn default() -> Self {
        Self {
            frame_bytes_max: FRAME_BYTES_MAX,
        }
    }
}

impl FrameDecoder {
    pub fn new(frame_bytes_max: usize) -> Self {
        assert!(frame_bytes_max >= 8, "a frame needs at least 8 bytes");
        Self { frame_bytes_max }
    }

    /// Bytes still needed before the frame at the front of `buf` is complete
    /// (0 when one is ready), or an error when its length prefix is invalid.
    pub fn missing_bytes(&self, buf: &[u8]) -> Result<usize, ProtocolError> {
        if buf.len() < 4 {
            return Ok(4 - buf.len());
        }
        let total = i32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]) as i64;
        if total < 4 || total as usize > self.frame_bytes_max {
            return Err(ProtocolError::FrameLength {
                length_bytes: total,
                max_bytes: self.frame_bytes_max,
            });
        }
        Ok((4 + total as usize).saturating_sub(buf.len()))
    }

    /// Takes the next complete frame off the front of `buf`, if there is one.
    pub fn next_frame(&self, buf: &mut BytesMut) -> Result<Option<RemotingCommand>, ProtocolError> {
        if self.missing_bytes(buf)? > 0 {
            return Ok(None);
        }
        let total = i32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]) as usize;
        let frame = buf.split_to(4 + total).freeze();
        RemotingCommand::decode(frame).map(Some)
    }
}
