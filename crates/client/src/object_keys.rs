//! fastjson writes a map keyed by objects (Java's `ConsumeStats.offsetTable`,
//! `Map<MessageQueue, OffsetWrapper>`) with JSON objects in key position:
//! `{{"brokerName":"b","queueId":0,"topic":"T"}:{...}}`. That is not JSON;
//! [`quote_object_keys`] turns each such key into a string holding the
//! object's JSON, after which the body parses as a map with string keys.
//! [`rewrite_keys`] is the scanner behind this and the integer-key fix in
//! `json.rs`.

/// What the scanner is inside of.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Container {
    Object,
    Array,
}

/// The end (exclusive) of the JSON object starting at `body[start]`
/// (`{`), or `None` when it does not close.
fn object_end(body: &[u8], start: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for (i, &byte) in body.iter().enumerate().skip(start) {
        if in_string {
            if escaped {
                escaped = false;
            } else if byte == b'\\' {
                escaped = true;
            } else if byte == b'"' {
                in_string = false;
            }
            continue;
        }
        match byte {
            b'"' => in_string = true,
            b'{' | b'[' => depth += 1,
            b'}' | b']' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(i + 1);
                }
            }
            _ => {}
        }
    }
    None
}

/// Rewrites object keys as string keys; `None` when there were none.
pub fn quote_object_keys(body: &[u8]) -> Option<Vec<u8>> {
    rewrite_keys(body, |body, i| {
        if body[i] != b'{' {
            return None;
        }
        let end = object_end(body, i)?;
        let key = String::from_utf8_lossy(&body[i..end]);
        let quoted = serde_json::to_string(&key).ok()?;
        Some((end, quoted.into_bytes()))
    })
}

/// Copies `body`, letting `rewrite(body, i)` replace what starts at each
/// key position `i` (right after `{` or `,` within an object, whitespace
/// skipped, outside strings): `Some((end, text))` puts `text` in place of
/// `body[i..end]`, `None` keeps the bytes. Returns `None` when nothing was
/// replaced. Shared by the fastjson fixes (integer and object keys).
pub(crate) fn rewrite_keys(
    body: &[u8],
    mut rewrite: impl FnMut(&[u8], usize) -> Option<(usize, Vec<u8>)>,
) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(body.len() + 64);
    let mut stack: Vec<Container> = Vec::new();
    let mut in_string = false;
    let mut escaped = false;
    let mut key_position = false;
    let mut changed = false;
    let mut i = 0;
    while i < body.len() {
        let byte = body[i];
        if in_string {
            out.push(byte);
            if escaped {
                escaped = false;
            } else if byte == b'\\' {
                escaped = true;
            } else if byte == b'"' {
                in_string = false;
            }
            i += 1;
            continue;
        }
        if key_position {
            if let Some((end, text)) = rewrite(body, i) {
                assert!(end > i && end <= body.len(), "a key rewrite moves forward");
                out.extend_from_slice(&text);
                changed = true;
                key_position = false;
                i = end;
                continue;
            }
        }
        match byte {
            b'"' => {
                in_string = true;
                key_position = false;
            }
            b'{' => {
                stack.push(Container::Object);
                key_position = true;
            }
            b'[' => {
                stack.push(Container::Array);
                key_position = false;
            }
            b'}' | b']' => {
                stack.pop();
                key_position = false;
            }
            b',' => key_position = stack.last() == Some(&Container::Object),
            b if b.is_ascii_whitespace() => {}
            _ => key_position = false,
        }
        out.push(byte);
        i += 1;
    }
    changed.then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn object_keys_become_strings() {
        let body = br#"{"consumeTps":0.0,"offsetTable":{{"brokerName":"b","queueId":1,"topic":"T"}:{"brokerOffset":3},
            {"brokerName":"b","queueId":2,"topic":"T}"}:{"brokerOffset":4}}}"#;
        let fixed = quote_object_keys(body).unwrap();
        let value: serde_json::Value = serde_json::from_slice(&fixed).unwrap();
        let table = value["offsetTable"].as_object().unwrap();
        assert_eq!(table.len(), 2);
        let key = r#"{"brokerName":"b","queueId":2,"topic":"T}"}"#;
        assert_eq!(table[key]["brokerOffset"], 4);
    }

    #[test]
    fn plain_json_is_left_alone() {
        assert_eq!(
            quote_object_keys(br#"{"a":[{"b":1},{"c":2}],"d":{"e":{}}}"#),
            None
        );
        assert_eq!(
            quote_object_keys(br#"{{"a":1"#),
            None,
            "unclosed key object"
        );
    }
}
