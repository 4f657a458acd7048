//! Java properties files, as RocketMQ's `namesrv.conf` / `broker.conf` use:
//! `key=value` or `key: value` lines, `#` and `!` comments, blank lines,
//! surrounding whitespace ignored. Continuation lines and unicode escapes are
//! accepted the simple way: a trailing `\` joins the next line.

use std::collections::BTreeMap;
use std::path::Path;

/// One setting and where it came from, for error messages: `broker.conf
/// line 5`, `--set listenPort=99999`, `--shards`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Setting {
    pub value: String,
    pub origin: String,
}

impl Setting {
    /// A setting from a command-line flag or `--set`, named as typed.
    pub fn from_flag(value: String, origin: String) -> Setting {
        Setting { value, origin }
    }
}

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

/// The error for a refused value: where it came from, the key, the value
/// and what is allowed, in words.
pub fn invalid(key: &str, setting: &Setting, allowed: &str) -> String {
    format!(
        "{}: invalid value `{}` for {key}: {allowed}",
        setting.origin, setting.value
    )
}

/// Parses a value for `key`; the error says in words what the key takes,
/// never the Rust parser's wording.
pub fn parse_value<T: std::str::FromStr>(key: &str, setting: &Setting) -> Result<T, String> {
    setting
        .value
        .trim()
        .parse::<T>()
        .map_err(|_| invalid(key, setting, allowed::<T>()))
}

/// What a value of type `T` may be, as a user reads it.
fn allowed<T>() -> &'static str {
    let name = std::any::type_name::<T>();
    match name.rsplit("::").next().unwrap_or(name) {
        "u8" => "expected a whole number from 0 to 255",
        "u16" => "expected a whole number from 0 to 65535",
        "u32" => "expected a whole number from 0 to 4294967295",
        "u64" | "usize" => "expected a whole number, 0 or more",
        "i32" | "i64" => "expected a whole number",
        "f32" | "f64" => "expected a number such as 0.75",
        "IpAddr" => "expected an IP address such as 127.0.0.1 or 0.0.0.0",
        _ => "not a valid value for this key",
    }
}

/// A TCP port to listen on: 1-65535, or 0 for any free port.
pub fn parse_port(key: &str, setting: &Setting) -> Result<u16, String> {
    setting
        .value
        .trim()
        .parse::<u16>()
        .map_err(|_| invalid(key, setting, "expected a port, 1-65535 (0: any free port)"))
}

/// Parses a Java-style boolean strictly: `true` or `false`, any case.
pub fn parse_bool(key: &str, setting: &Setting) -> Result<bool, String> {
    match setting.value.trim().to_ascii_lowercase().as_str() {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err(invalid(key, setting, "expected true or false")),
    }
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
        let at = |value: &str| Setting::from_flag(value.into(), "broker.conf line 3".into());
        let port = parse_port("listenPort", &at("70000")).unwrap_err();
        assert_eq!(
            port,
            "broker.conf line 3: invalid value `70000` for listenPort: expected a port, 1-65535 (0: any free port)"
        );
        assert_eq!(parse_port("listenPort", &at("0")), Ok(0));
        assert!(parse_port("listenPort", &at("-1")).is_err());
        assert_eq!(parse_port("listenPort", &at("10911")), Ok(10911));
        let count = parse_value::<u64>("fileReservedTime", &at("-4")).unwrap_err();
        assert!(
            count.ends_with("expected a whole number, 0 or more"),
            "{count}"
        );
        let addr = parse_value::<std::net::IpAddr>("listenAddr", &at("localhost")).unwrap_err();
        assert!(addr.contains("an IP address such as 127.0.0.1"), "{addr}");
        assert!(parse_bool("autoCreateTopicEnable", &at("yes")).is_err());
    }
}
