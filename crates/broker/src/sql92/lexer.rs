//! Tokens of the SQL92 filter language (Java: the token section of
//! `SelectorParser.jj`): case-insensitive keywords, identifiers
//! `[A-Za-z_$][A-Za-z0-9_$]*`, single-quoted strings with `''` as an escaped
//! quote, decimal integers with an optional `L`, decimals with optional
//! exponent, operators, and `--` / `/* */` comments.

use super::error::FilterError;

/// Reserved words; matched without regard to case.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Keyword {
    Not,
    And,
    Or,
    Between,
    In,
    True,
    False,
    Null,
    Is,
    Contains,
    StartsWith,
    EndsWith,
}

const KEYWORDS: [(&str, Keyword); 12] = [
    ("NOT", Keyword::Not),
    ("AND", Keyword::And),
    ("OR", Keyword::Or),
    ("BETWEEN", Keyword::Between),
    ("IN", Keyword::In),
    ("TRUE", Keyword::True),
    ("FALSE", Keyword::False),
    ("NULL", Keyword::Null),
    ("IS", Keyword::Is),
    ("CONTAINS", Keyword::Contains),
    ("STARTSWITH", Keyword::StartsWith),
    ("ENDSWITH", Keyword::EndsWith),
];

#[derive(Debug, Clone, PartialEq)]
pub(super) enum Tok<'s> {
    Ident(&'s str),
    /// A string literal, quotes removed and `''` decoded.
    Str(Box<str>),
    Int(i64),
    Float(f64),
    Kw(Keyword),
    LParen,
    RParen,
    Comma,
    Eq,
    /// `<>` or `!=`.
    Ne,
    Gt,
    Ge,
    Lt,
    Le,
    Plus,
    Minus,
    Eof,
}

/// A token and the byte offset where it starts.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Token<'s> {
    pub tok: Tok<'s>,
    pub pos: usize,
}

/// Splits `src` into tokens, ending with one `Tok::Eof`.
pub(super) fn tokenize(src: &str) -> Result<Vec<Token<'_>>, FilterError> {
    let bytes = src.as_bytes();
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        let start = i;
        let tok = match c {
            b' ' | b'\t' | b'\n' | b'\r' | b'\x0c' => {
                i += 1;
                continue;
            }
            b'-' if bytes.get(i + 1) == Some(&b'-') => {
                // Java's line comment must end with a line break; without
                // one, `--` is two minus signs (longest match wins).
                match bytes[i..].iter().position(|&b| b == b'\n' || b == b'\r') {
                    Some(n) => {
                        i += n + 1;
                        continue;
                    }
                    None => {
                        i += 1;
                        Tok::Minus
                    }
                }
            }
            b'/' if bytes.get(i + 1) == Some(&b'*') => {
                match src[i + 2..].find("*/") {
                    Some(n) => i += 2 + n + 2,
                    None => return Err(FilterError::new(start, "unterminated comment")),
                }
                continue;
            }
            b'\'' => {
                let (text, end) = string_literal(src, i)?;
                i = end;
                Tok::Str(text)
            }
            b'0'..=b'9' => {
                let (tok, end) = number(src, i)?;
                i = end;
                tok
            }
            b'.' if bytes.get(i + 1).is_some_and(u8::is_ascii_digit) => {
                let (tok, end) = number(src, i)?;
                i = end;
                tok
            }
            b'a'..=b'z' | b'A'..=b'Z' | b'_' | b'$' => {
                let len = bytes[i..]
                    .iter()
                    .position(|&b| !(b.is_ascii_alphanumeric() || b == b'_' || b == b'$'))
                    .unwrap_or(bytes.len() - i);
                let word = &src[i..i + len];
                i += len;
                match KEYWORDS.iter().find(|(k, _)| k.eq_ignore_ascii_case(word)) {
                    Some(&(_, kw)) => Tok::Kw(kw),
                    None => Tok::Ident(word),
                }
            }
            _ => {
                let (tok, len) = match (c, bytes.get(i + 1).copied()) {
                    (b'(', _) => (Tok::LParen, 1),
                    (b')', _) => (Tok::RParen, 1),
                    (b',', _) => (Tok::Comma, 1),
                    (b'=', _) => (Tok::Eq, 1),
                    (b'<', Some(b'>')) => (Tok::Ne, 2),
                    (b'<', Some(b'=')) => (Tok::Le, 2),
                    (b'<', _) => (Tok::Lt, 1),
                    (b'>', Some(b'=')) => (Tok::Ge, 2),
                    (b'>', _) => (Tok::Gt, 1),
                    (b'!', Some(b'=')) => (Tok::Ne, 2),
                    (b'+', _) => (Tok::Plus, 1),
                    (b'-', _) => (Tok::Minus, 1),
                    _ => {
                        let shown = src[i..].chars().next().unwrap_or('?');
                        return Err(FilterError::new(
                            start,
                            format!("unexpected character {shown:?}"),
                        ));
                    }
                };
                i += len;
                tok
            }
        };
        tokens.push(Token { tok, pos: start });
    }
    tokens.push(Token {
        tok: Tok::Eof,
        pos: src.len(),
    });
    Ok(tokens)
}

/// Decodes the string literal whose opening quote is at `start`; returns it
/// and the offset just past the closing quote.
fn string_literal(src: &str, start: usize) -> Result<(Box<str>, usize), FilterError> {
    let bytes = src.as_bytes();
    let mut text = String::new();
    let mut chunk_start = start + 1;
    let mut i = start + 1;
    loop {
        match bytes.get(i) {
            None => return Err(FilterError::new(start, "unterminated string literal")),
            Some(b'\'') if bytes.get(i + 1) == Some(&b'\'') => {
                // Quotes are ASCII, so these offsets are char boundaries.
                text.push_str(&src[chunk_start..=i]);
                i += 2;
                chunk_start = i;
            }
            Some(b'\'') => {
                text.push_str(&src[chunk_start..i]);
                return Ok((text.into_boxed_str(), i + 1));
            }
            Some(_) => i += 1,
        }
    }
}

fn digits_end(bytes: &[u8], mut i: usize) -> usize {
    while bytes.get(i).is_some_and(u8::is_ascii_digit) {
        i += 1;
    }
    i
}

/// End of an exponent (`E`, optional sign, at least one digit) starting at
/// `i`, if there is one.
fn exponent_end(bytes: &[u8], i: usize) -> Option<usize> {
    if !matches!(bytes.get(i), Some(b'e' | b'E')) {
        return None;
    }
    let mut j = i + 1;
    if matches!(bytes.get(j), Some(b'+' | b'-')) {
        j += 1;
    }
    let end = digits_end(bytes, j);
    (end > j).then_some(end)
}

/// Lexes a numeric literal at `start` (a digit, or `.` before a digit).
fn number(src: &str, start: usize) -> Result<(Tok<'static>, usize), FilterError> {
    let bytes = src.as_bytes();
    let int_end = digits_end(bytes, start);
    let mut end = int_end;
    let mut is_float = false;
    if bytes.get(end) == Some(&b'.') {
        is_float = true;
        end = digits_end(bytes, end + 1);
    }
    if let Some(exp_end) = exponent_end(bytes, end) {
        is_float = true;
        end = exp_end;
    }
    if is_float {
        let text = &src[start..end];
        return match text.parse::<f64>() {
            Ok(v) if v.is_finite() => Ok((Tok::Float(v), end)),
            _ => Err(FilterError::new(
                start,
                format!("decimal literal {text} is out of range"),
            )),
        };
    }
    let text = &src[start..int_end];
    if text.len() > 1 && text.starts_with('0') {
        return Err(FilterError::new(
            start,
            format!("invalid integer literal {text}"),
        ));
    }
    let value = text
        .parse::<i64>()
        .map_err(|_| FilterError::new(start, format!("integer literal {text} is out of range")))?;
    if matches!(bytes.get(end), Some(b'l' | b'L')) {
        end += 1;
    }
    Ok((Tok::Int(value), end))
}
