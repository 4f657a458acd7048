//! Java's fastjson writes maps with integer keys unquoted (`{1:5}`, a
//! route's `brokerAddrs`, delayOffset.json); this reads them as JSON.

/// Rewrites fastjson's unquoted integer map keys (`{1:5}`), which a Java
/// broker's files and name server's routes hold, as JSON (`{"1":5}`).
pub fn quote_integer_keys(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 16);
    let mut chars = text.chars().peekable();
    let mut in_string = false;
    let mut escaped = false;
    let mut key_position = false;
    // Open containers, innermost last: `true` for an object (whose members
    // start with keys), `false` for an array (whose items do not).
    let mut in_object: Vec<bool> = Vec::new();
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
            '{' => {
                in_object.push(true);
                key_position = true;
            }
            '[' => {
                in_object.push(false);
                key_position = false;
            }
            '}' | ']' => {
                in_object.pop();
                key_position = false;
            }
            ',' => key_position = in_object.last() == Some(&true),
            c if c.is_whitespace() => {}
            _ => key_position = false,
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::quote_integer_keys;

    #[test]
    fn quotes_integer_keys_outside_strings_only() {
        let java = r#"{"offsetTable":{"T@G":{0:12,1:-1,12:7}},"s":"{3:4}"}"#;
        assert_eq!(
            quote_integer_keys(java),
            r#"{"offsetTable":{"T@G":{"0":12,"1":-1,"12":7}},"s":"{3:4}"}"#
        );
        let pretty = "{\n\t\"a\":{\n\t\t0:1,\n\t\t2:[3,4]\n\t}\n}";
        let value: serde_json::Value = serde_json::from_str(&quote_integer_keys(pretty)).unwrap();
        assert_eq!(value["a"]["2"][1], 4);
    }
}
