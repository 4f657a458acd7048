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

/// Lines one UPDATE_*_CONFIG may carry at most.
pub const UPDATE_LINES_MAX: usize = 256;
/// Java's answer to an update that names a black-listed key.
pub const BLACK_LIST_REMARK: &str = "Can not update config in black list.";

/// Why an online update of a server's settings is refused before any key
/// is looked at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UpdateRefusal {
    /// Not UTF-8, or more lines than [`UPDATE_LINES_MAX`]: INVALID_PARAMETER.
    Malformed(String),
    /// A black-listed key: NO_PERMISSION with [`BLACK_LIST_REMARK`].
    BlackListed,
}

/// The body of an UPDATE_*_CONFIG request (broker, name server,
/// controller): its `key=value` pairs, bounded, none of them in
/// `black_list`.
pub fn parse_update(
    body: &[u8],
    black_list: &[&str],
) -> Result<Vec<(String, String)>, UpdateRefusal> {
    let text = std::str::from_utf8(body)
        .map_err(|_| UpdateRefusal::Malformed("the settings are not UTF-8".into()))?;
    let pairs = parse_properties(text);
    if pairs.len() > UPDATE_LINES_MAX {
        return Err(UpdateRefusal::Malformed(format!(
            "{} settings in one update, at most {UPDATE_LINES_MAX}",
            pairs.len()
        )));
    }
    match pairs
        .iter()
        .any(|(key, _)| black_list.contains(&key.as_str()))
    {
        true => Err(UpdateRefusal::BlackListed),
        false => Ok(pairs),
    }
}

/// `key=value` lines from borrowed pairs (a GET_*_CONFIG answer).
pub fn show_text(lines: &[(&str, String)]) -> String {
    lines.iter().map(|(k, v)| format!("{k}={v}\n")).collect()
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
    fn updates_are_bounded_and_black_lists_refused() {
        assert_eq!(
            parse_update(b"a=1\nb:2", &["c"]),
            Ok(pairs(&[("a", "1"), ("b", "2")]))
        );
        assert_eq!(
            parse_update(b"a=1\nc=2", &["c"]),
            Err(UpdateRefusal::BlackListed)
        );
        assert!(matches!(
            parse_update(&[0xff, b'='], &[]),
            Err(UpdateRefusal::Malformed(_))
        ));
        let many = "k=v\n".repeat(UPDATE_LINES_MAX + 1);
        assert!(matches!(
            parse_update(many.as_bytes(), &[]),
            Err(UpdateRefusal::Malformed(why)) if why.contains("at most 256")
        ));
    }

    #[test]
    fn text_round_trips() {
        let list = pairs(&[("a", "1"), ("b", "x y")]);
        assert_eq!(parse_properties(&properties_text(&list)), list);
    }
}
