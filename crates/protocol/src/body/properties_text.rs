//! Java's properties text (`java.util.Properties`, `MixAll.properties2String`
//! / `string2Properties`): the bodies of GET_BROKER_CONFIG and
//! UPDATE_BROKER_CONFIG, and broker.conf itself.

/// Java's properties text (`key=value` lines; `#` and `!` comments; `=`,
/// `:` or blanks between key and value): the pairs in order. A line with
/// no key is skipped.
pub fn parse_properties(text: &str) -> Vec<(String, String)> {
    let mut pairs = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with('!') {
            continue;
        }
        let split = line.find(['=', ':', ' ', '\t']).unwrap_or(line.len());
        let (key, rest) = line.split_at(split);
        let value = rest.trim_start_matches([' ', '\t']);
        let value = value.strip_prefix(['=', ':']).unwrap_or(value).trim();
        if !key.is_empty() {
            pairs.push((key.to_string(), value.to_string()));
        }
    }
    pairs
}

/// `pairs` as properties text: one `key=value` line each, in order
/// (Java's `properties2String`; no escaping, as Java writes none).
pub fn properties_text(pairs: &[(String, String)]) -> String {
    let mut text = String::new();
    for (key, value) in pairs {
        text.push_str(key);
        text.push('=');
        text.push_str(value);
        text.push('\n');
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn properties_parse_as_java_reads_them() {
        let text =
            "# comment\n! also\nbrokerName = broker-a\nlistenPort:10911\ntraceOn true\n\nempty=\n";
        assert_eq!(
            parse_properties(text),
            pairs(&[
                ("brokerName", "broker-a"),
                ("listenPort", "10911"),
                ("traceOn", "true"),
                ("empty", "")
            ])
        );
    }

    #[test]
    fn text_round_trips() {
        let list = pairs(&[("a", "1"), ("b", "x y")]);
        assert_eq!(parse_properties(&properties_text(&list)), list);
    }
}
