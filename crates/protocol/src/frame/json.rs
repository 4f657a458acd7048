//! Hand-written JSON for Remoting headers: a writer that needs no
//! intermediate `serde_json::Value`, and a reader for the shape every client
//! sends (one flat object, `extFields` one object of scalars).
//!
//! The reader is a fast path only: on anything it does not handle itself
//! (floats, nested values, numbers given as strings, odd escapes, trailing
//! bytes) it answers `None` and the caller decodes the header with
//! `serde_json`, so what is accepted, and how, stays exactly as lenient as
//! before.

use bytes::{BufMut, BytesMut};

use super::{LanguageCode, RemotingCommand, SerializeType};
use crate::ext::{int_text, INT_TEXT_BYTES_MAX};
use crate::limits::EXT_FIELDS_COUNT_MAX;
use crate::ExtFields;

/// Whether `byte` must be escaped inside a JSON string.
fn needs_escape(byte: u8) -> bool {
    byte == b'"' || byte == b'\\' || byte < 0x20
}

/// Appends `text` as a JSON string literal (escaping as serde_json does:
/// quote, backslash and control characters; everything else verbatim).
pub(super) fn write_str(out: &mut BytesMut, text: &str) {
    out.put_u8(b'"');
    let bytes = text.as_bytes();
    // Most values need no escape: one pass that the compiler vectorises,
    // then one copy.
    if !bytes.iter().any(|&byte| needs_escape(byte)) {
        out.extend_from_slice(bytes);
        out.put_u8(b'"');
        return;
    }
    let mut clean_from = 0;
    for (i, &byte) in bytes.iter().enumerate() {
        let escape: &[u8] = match byte {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0x08 => b"\\b",
            0x0c => b"\\f",
            0..=0x1f => b"",
            _ => continue,
        };
        out.extend_from_slice(&bytes[clean_from..i]);
        if escape.is_empty() {
            const HEX: &[u8; 16] = b"0123456789abcdef";
            out.extend_from_slice(b"\\u00");
            out.put_u8(HEX[(byte >> 4) as usize]);
            out.put_u8(HEX[(byte & 0xf) as usize]);
        } else {
            out.extend_from_slice(escape);
        }
        clean_from = i + 1;
    }
    out.extend_from_slice(&bytes[clean_from..]);
    out.put_u8(b'"');
}

/// Appends `value` in decimal (four per answer header: formatting them
/// through `core::fmt` showed up in the send path's profile).
fn write_int(out: &mut BytesMut, value: i32) {
    let mut digits = [0u8; INT_TEXT_BYTES_MAX];
    out.extend_from_slice(int_text(i64::from(value), &mut digits).as_bytes());
}

/// Appends the JSON header of `command` (the same fields, values and
/// escaping as the Java client writes; key order is not significant).
pub(super) fn encode_header(command: &RemotingCommand, out: &mut BytesMut) {
    out.extend_from_slice(b"{\"code\":");
    write_int(out, command.code);
    out.extend_from_slice(b",\"language\":\"");
    out.extend_from_slice(command.language.name().as_bytes());
    out.extend_from_slice(b"\",\"version\":");
    write_int(out, command.version);
    out.extend_from_slice(b",\"opaque\":");
    write_int(out, command.opaque);
    out.extend_from_slice(b",\"flag\":");
    write_int(out, command.flag);
    out.extend_from_slice(b",\"remark\":");
    match &command.remark {
        Some(remark) => write_str(out, remark),
        None => out.extend_from_slice(b"null"),
    }
    out.extend_from_slice(b",\"extFields\":{");
    for (i, (key, value)) in command.ext_fields.iter().enumerate() {
        if i > 0 {
            out.put_u8(b',');
        }
        write_str(out, key);
        out.put_u8(b':');
        write_str(out, value);
    }
    out.extend_from_slice(b"},\"serializeTypeCurrentRPC\":\"JSON\"}");
}

/// A scalar the fast reader understood.
enum Scalar<'a> {
    Null,
    Bool(bool),
    Int(i64),
    /// Text without escapes, borrowed from the header.
    Str(&'a str),
    /// Text that had escapes, unescaped into `Reader::scratch`.
    Owned,
}

/// A reader over a header already checked to be UTF-8 as a whole: every
/// string it returns is a slice of `text` cut at ASCII quotes and
/// backslashes, so no string is validated again.
struct Reader<'a> {
    text: &'a str,
    bytes: &'a [u8],
    at: usize,
    scratch: String,
}

/// Bytes that end a run of plain string text: the closing quote, a
/// backslash, and raw control characters (not allowed unescaped in JSON:
/// the fast reader declines them).
const RUN_END: [bool; 256] = {
    let mut table = [false; 256];
    let mut byte = 0;
    while byte < 0x20 {
        table[byte] = true;
        byte += 1;
    }
    table[b'"' as usize] = true;
    table[b'\\' as usize] = true;
    table
};

impl<'a> Reader<'a> {
    fn skip_ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.bytes.get(self.at) {
            self.at += 1;
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.skip_ws();
        self.bytes.get(self.at).copied()
    }

    fn eat(&mut self, byte: u8) -> Option<()> {
        (self.peek()? == byte).then(|| self.at += 1)
    }

    fn literal(&mut self, word: &[u8]) -> Option<()> {
        let end = self.at.checked_add(word.len())?;
        (self.bytes.get(self.at..end)? == word).then(|| self.at = end)
    }

    /// Moves to the next quote or backslash of a string, returning the text
    /// passed over; `None` for a raw control character or no end.
    ///
    /// One pass over the bytes with a table: header strings are short (keys,
    /// names, numbers), where a vectorised search for two bytes followed by
    /// a second pass for control characters cost more (json_header example:
    /// 6% less per decoded send header; eight bytes at a time was no faster).
    fn run(&mut self) -> Option<&'a str> {
        let start = self.at;
        let len = self
            .bytes
            .get(start..)?
            .iter()
            .position(|&byte| RUN_END[usize::from(byte)])?;
        let end = start + len;
        if self.bytes[end] < 0x20 {
            return None;
        }
        self.at = end;
        self.text.get(start..end)
    }

    /// A string; `None` for anything unusual.
    fn string(&mut self) -> Option<Scalar<'a>> {
        self.eat(b'"')?;
        let first = self.run()?;
        if self.bytes[self.at] == b'"' {
            self.at += 1;
            return Some(Scalar::Str(first));
        }
        self.scratch.clear();
        self.scratch.push_str(first);
        loop {
            match *self.bytes.get(self.at)? {
                b'"' => {
                    self.at += 1;
                    return Some(Scalar::Owned);
                }
                b'\\' => {
                    let ch = self.escape()?;
                    self.scratch.push(ch);
                }
                _ => {
                    let run = self.run()?;
                    self.scratch.push_str(run);
                }
            }
        }
    }

    /// The character of the escape at the reader (a backslash).
    fn escape(&mut self) -> Option<char> {
        let escaped = *self.bytes.get(self.at + 1)?;
        self.at += 2;
        Some(match escaped {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            // Surrogate pairs and lone surrogates: left to serde_json.
            b'u' => char::from_u32(u32::from(self.hex4()?))?,
            _ => return None,
        })
    }

    fn hex4(&mut self) -> Option<u16> {
        let digits = self.bytes.get(self.at..self.at + 4)?;
        let mut unit = 0u16;
        for &digit in digits {
            unit = unit << 4 | char::from(digit).to_digit(16)? as u16;
        }
        self.at += 4;
        Some(unit)
    }

    /// An integer without fraction, exponent or leading zeros.
    fn int(&mut self) -> Option<i64> {
        let start = self.at;
        if self.bytes.get(self.at) == Some(&b'-') {
            self.at += 1;
        }
        let digits_start = self.at;
        while let Some(b'0'..=b'9') = self.bytes.get(self.at) {
            self.at += 1;
        }
        let digits = &self.bytes[digits_start..self.at];
        if digits.is_empty() || (digits.len() > 1 && digits[0] == b'0') {
            return None;
        }
        if let Some(b'.' | b'e' | b'E') = self.bytes.get(self.at) {
            return None;
        }
        let text = self.text.get(start..self.at)?;
        if text == "-0" {
            return None;
        }
        text.parse().ok()
    }

    fn scalar(&mut self) -> Option<Scalar<'a>> {
        match self.peek()? {
            b'"' => self.string(),
            b'n' => self.literal(b"null").map(|()| Scalar::Null),
            b't' => self.literal(b"true").map(|()| Scalar::Bool(true)),
            b'f' => self.literal(b"false").map(|()| Scalar::Bool(false)),
            b'-' | b'0'..=b'9' => self.int().map(Scalar::Int),
            _ => None,
        }
    }

    /// Calls `field` for each key of an object, positioned at its value.
    fn object(&mut self, mut field: impl FnMut(&mut Self, &str) -> Option<()>) -> Option<()> {
        self.eat(b'{')?;
        if self.eat(b'}').is_some() {
            return Some(());
        }
        loop {
            let owned;
            let key: &str = match self.string()? {
                Scalar::Str(key) => key,
                _ => {
                    owned = std::mem::take(&mut self.scratch);
                    &owned
                }
            };
            self.eat(b':')?;
            field(self, key)?;
            match self.peek()? {
                b',' => self.at += 1,
                b'}' => {
                    self.at += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }
}

fn int_i32(scalar: Scalar<'_>) -> Option<i32> {
    match scalar {
        Scalar::Null => Some(0),
        Scalar::Int(value) => i32::try_from(value).ok(),
        _ => None,
    }
}

/// Decodes a JSON header of the usual shape, or `None` to let serde_json
/// decide.
pub(super) fn decode_header(header: &[u8]) -> Option<RemotingCommand> {
    let text = std::str::from_utf8(header).ok()?;
    let mut reader = Reader {
        text,
        bytes: header,
        at: 0,
        scratch: String::new(),
    };
    let mut command = RemotingCommand {
        serialize_type: SerializeType::Json,
        ..RemotingCommand::default()
    };
    let mut ext_fields = ExtFields::new();
    reader.object(|reader, key| {
        match key {
            "code" => command.code = int_i32(reader.scalar()?)?,
            "version" => command.version = int_i32(reader.scalar()?)?,
            "opaque" => command.opaque = int_i32(reader.scalar()?)?,
            "flag" => command.flag = int_i32(reader.scalar()?)?,
            "language" => command.language = language(reader)?,
            "remark" => command.remark = remark(reader)?,
            "extFields" => ext_fields = ext_fields_of(reader, header.len())?,
            // Anything else (serializeTypeCurrentRPC, ...) is ignored, as
            // long as it is a scalar.
            _ => {
                reader.scalar()?;
            }
        }
        Some(())
    })?;
    if reader.peek().is_some() {
        return None;
    }
    command.ext_fields = ext_fields;
    Some(command)
}

fn language(reader: &mut Reader<'_>) -> Option<LanguageCode> {
    Some(match reader.scalar()? {
        Scalar::Str(name) => LanguageCode::from_name(name),
        Scalar::Owned => LanguageCode::from_name(&reader.scratch),
        Scalar::Int(ordinal) => LanguageCode::from_ordinal(ordinal),
        Scalar::Null | Scalar::Bool(_) => LanguageCode::Java,
    })
}

/// The remark: `Some(None)` for null, `None` for a value of another kind.
fn remark(reader: &mut Reader<'_>) -> Option<Option<String>> {
    Some(match reader.scalar()? {
        Scalar::Null => None,
        Scalar::Str(text) => Some(text.to_owned()),
        Scalar::Owned => Some(reader.scratch.clone()),
        _ => return None,
    })
}

/// The extFields object (null: none), its text sized by the header's.
fn ext_fields_of(reader: &mut Reader<'_>, header_len: usize) -> Option<ExtFields> {
    if reader.peek()? == b'n' {
        reader.literal(b"null")?;
        return Some(ExtFields::new());
    }
    let mut ext_fields = ExtFields::with_text_capacity(16, header_len);
    reader.object(|reader, name| {
        match reader.scalar()? {
            Scalar::Null => ext_fields.remove(name).map_or((), drop),
            Scalar::Str(text) => ext_fields.insert_decoded(name, text),
            Scalar::Owned => {
                let text = std::mem::take(&mut reader.scratch);
                ext_fields.insert_decoded(name, &text);
                reader.scratch = text;
            }
            Scalar::Bool(flag) => {
                ext_fields.insert_decoded(name, if flag { "true" } else { "false" })
            }
            Scalar::Int(value) => {
                let mut digits = [0u8; INT_TEXT_BYTES_MAX];
                ext_fields.insert_decoded(name, int_text(value, &mut digits))
            }
        }
        (ext_fields.len() <= EXT_FIELDS_COUNT_MAX).then_some(())
    })?;
    Some(ext_fields)
}

#[cfg(test)]
mod tests {
    use super::super::decode_json_header_lenient;
    use super::*;

    /// The fast reader must agree with serde_json wherever it answers.
    fn agrees(header: &str) -> bool {
        let fast = decode_header(header.as_bytes());
        let slow = decode_json_header_lenient(header.as_bytes());
        match fast {
            Some(fast) => {
                assert_eq!(Ok(&fast), slow.as_ref(), "header {header}");
                true
            }
            None => false,
        }
    }

    #[test]
    fn fast_reader_matches_serde_json() {
        let handled = [
            r#"{"code":10,"language":"JAVA","version":453,"opaque":7,"flag":0,"remark":null,"extFields":{"topic":"T","queueId":"0"},"serializeTypeCurrentRPC":"JSON"}"#,
            r#" { "code" : -3 , "language" : 4 , "extFields" : { "a" : 1 , "b" : true , "c" : null , "d" : "x\u0001y\u0002z\n\"q\"\\/" } } "#,
            r#"{"code":1,"extFields":{"a":"1","a":"2","b":"3","b":null},"remark":"r\té","flag":1}"#,
            r#"{"code":1,"extFields":null,"language":null,"other":false}"#,
            r#"{}"#,
            r#"{"code":1,"extFields":{}}"#,
            r#"{"remark":"é\u00e9ü\\","extFields":{"properties":"KEYS\u0001k\u0002TAGS\u0001t\u0002","n":-9223372036854775808}}"#,
        ];
        for header in handled {
            assert!(agrees(header), "fast path declined {header}");
        }
        let declined = [
            r#"{"code":"10"}"#,
            r#"{"code":1.0}"#,
            r#"{"code":1e2}"#,
            r#"{"code":01}"#,
            r#"{"code":-0}"#,
            r#"{"code":99999999999}"#,
            r#"{"remark":5}"#,
            r#"{"other":{"x":1}}"#,
            r#"{"extFields":{"x":[1]}}"#,
            r#"{"extFields":{"x":"\ud83d\ude00"}}"#,
            r#"{"code":1} x"#,
            r#"[1]"#,
            r#"{"code":1,}"#,
            "{\"remark\":\"raw\u{1}control\"}",
            r#"{"remark":"no end}"#,
            r#"{"remark":"bad \uZZZZ"}"#,
            "",
        ];
        for header in declined {
            assert!(!agrees(header), "fast path should decline {header}");
        }
        // Not UTF-8: declined (serde_json then refuses it too).
        assert_eq!(decode_header(b"{\"remark\":\"\xff\"}"), None);
    }

    #[test]
    fn writer_escapes_like_serde_json() {
        let mut command = RemotingCommand::request(10);
        command.remark = Some("a\"b\\c\nd\u{1}e\u{7f}é\u{8}\u{c}\r\t".to_owned());
        command
            .ext_fields
            .insert("properties", "KEYS\u{1}k\u{2}TAGS\u{1}t\u{2}");
        command.ext_fields.insert("q\"uote", "");
        let mut out = BytesMut::new();
        encode_header(&command, &mut out);
        let value: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(value["remark"], serde_json::json!(command.remark));
        assert_eq!(
            value["extFields"]["properties"],
            serde_json::json!("KEYS\u{1}k\u{2}TAGS\u{1}t\u{2}")
        );
        assert_eq!(value["extFields"]["q\"uote"], serde_json::json!(""));
        assert_eq!(value["serializeTypeCurrentRPC"], serde_json::json!("JSON"));
        let serde_text = serde_json::to_string(&command.remark).unwrap();
        let mut ours = BytesMut::new();
        write_str(&mut ours, command.remark.as_deref().unwrap());
        assert_eq!(ours.as_ref(), serde_text.as_bytes());
        assert_eq!(decode_header(&out), Some(command));
    }
}
