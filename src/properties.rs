//! Java properties files, as RocketMQ's `namesrv.conf` / `broker.conf` use:
//! `key=value` or `key: value` lines, `#` and `!` comments, blank lines,
//! surrounding whitespace ignored. Continuation lines and unicode escapes are
//! accepted the simple way: a trailing `\` joins the next line.

use std::collections::BTreeMap;
use std::path::Path;

pub use ferrocket_runtime::settings::Setting;

/// Parses properties text into key -> setting; a later key wins, as in Java.
pub fn parse(text: &str) -> Result<BTreeMap<String, Setting>, String> {
    let mut settings = BTreeMap::new();
    let mut pending = String::new();
    let mut pending_line = 0;
    for (index, raw_line) in text.lines().enumerate() {
        let line_number = index + 1;
        let trimmed = raw_line.trim();
        if pending.is_empty()
            && (trimmed.is_empty() || trimmed.starts_with('#') || trimmed.starts_with('!'))
        {
            continue;
        }
        if pending.is_empty() {
            pending_line = line_number;
        }
        if let Some(stripped) = trimmed.strip_suffix('\\') {
            pending.push_str(stripped);
            continue;
        }
        pending.push_str(trimmed);
        let entry = std::mem::take(&mut pending);
        let split_at = entry
            .find(['=', ':'])
            .ok_or_else(|| format!("line {pending_line}: expected `key=value`, found `{entry}`"))?;
        let key = entry[..split_at].trim();
        if key.is_empty() {
            return Err(format!("line {pending_line}: missing key before `=`"));
        }
        let value = entry[split_at + 1..].trim().to_string();
        settings.insert(
            key.to_string(),
            Setting {
                value,
                origin: format!("line {pending_line}"),
            },
        );
    }
    if !pending.is_empty() {
        return Err(format!(
            "line {pending_line}: file ends inside a continued line"
        ));
    }
    Ok(settings)
}

/// Reads and parses a properties file.
pub fn load(path: &Path) -> Result<BTreeMap<String, Setting>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read config file {}: {e}", path.display()))?;
    let mut settings = parse(&text).map_err(|e| format!("{} {e}", path.display()))?;
    for setting in settings.values_mut() {
        setting.origin = format!("{} {}", path.display(), setting.origin);
    }
    Ok(settings)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_rocketmq_style_files() {
        let text = "# comment\n! also\nbrokerName = broker-a\nlistenPort:10911\n\nnamesrvAddr=a:1;\\\n  b:2\n";
        let settings = parse(text).unwrap();
        assert_eq!(settings["brokerName"].value, "broker-a");
        assert_eq!(settings["listenPort"].value, "10911");
        assert_eq!(settings["listenPort"].origin, "line 4");
        assert_eq!(settings["namesrvAddr"].value, "a:1;b:2");
        assert!(parse("novalue\n").is_err());
        assert!(parse("=x\n").is_err());
    }
}
