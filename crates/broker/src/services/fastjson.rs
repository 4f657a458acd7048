//! Java's fastjson writes maps with integer keys unquoted (`{1:5}`, a
//! route's `brokerAddrs`, delayOffset.json); this reads them as JSON.

/// Rewrites fastjson's unquoted integer map keys (`{1:5}`), which a Java
/// broker's files and name server's routes hold, as JSON (`{"1":5}`).
pub(crate) fn quote_integer_keys(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 16);
    let mut chars = text.chars().peekable();
    let mut in_string = false;
    let mut escaped = false;
    let mut key_position = false;
    while let Some(c) = chars.next() {
        if in_string {
            out.push(c);
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_string = false;
            }
            continue;
        }
        if key_position && (c.is_ascii_digit() || c == '-') {
            let mut number = String::from(c);
            while let Some(d) = chars.peek().copied().filter(char::is_ascii_digit) {
                number.push(d);
                chars.next();
            }
            out.push('"');
            out.push_str(&number);
            out.push('"');
            key_position = false;
            continue;
        }
        match c {
            '"' => {
                in_string = true;
                key_position = false;
            }
            '{' | ',' => key_position = true,
            c if c.is_whitespace() => {}
            _ => key_position = false,
        }
        out.push(c);
    }
    out
}
