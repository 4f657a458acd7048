//! One setting's value and the parsers every server's keys share.

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

/// A whole number, 1 or more.
pub fn positive(key: &str, setting: &Setting) -> Result<u64, String> {
    let value: u64 = parse_value(key, setting)?;
    if value == 0 {
        return Err(invalid(key, setting, "expected a whole number, 1 or more"));
    }
    Ok(value)
}

/// A count, 1 or more.
pub fn positive_count(key: &str, setting: &Setting) -> Result<usize, String> {
    let value: usize = parse_value(key, setting)?;
    if value == 0 {
        return Err(invalid(key, setting, "expected a whole number, 1 or more"));
    }
    Ok(value)
}

/// A percentage, 1-100.
pub fn percent(key: &str, setting: &Setting) -> Result<u8, String> {
    let value: u8 = parse_value(key, setting)?;
    if value == 0 || value > 100 {
        return Err(invalid(key, setting, "expected a percentage, 1-100"));
    }
    Ok(value)
}

/// A percentage written either way: `90`, or Java's ratio form `0.90`.
pub fn ratio_percent(key: &str, setting: &Setting) -> Result<u8, String> {
    if !setting.value.contains('.') {
        return percent(key, setting);
    }
    match setting.value.trim().parse::<f64>() {
        Ok(ratio) if ratio > 0.0 && ratio <= 1.0 => Ok((ratio * 100.0).round().max(1.0) as u8),
        _ => Err(invalid(
            key,
            setting,
            "expected a percentage, 1-100, or a ratio such as 0.90",
        )),
    }
}

/// Any text but the empty one.
pub fn non_empty(key: &str, setting: &Setting) -> Result<String, String> {
    if setting.value.is_empty() {
        return Err(invalid(key, setting, "must not be empty"));
    }
    Ok(setting.value.clone())
}

/// Core numbers, comma-separated: `0,1`.
pub fn core_list(key: &str, setting: &Setting) -> Result<Vec<usize>, String> {
    setting
        .value
        .split(',')
        .filter(|part| !part.trim().is_empty())
        .map(|part| {
            part.trim()
                .parse::<usize>()
                .map_err(|_| invalid(key, setting, "expected core numbers, comma-separated: 0,1"))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_name_origin_key_value_and_what_is_allowed() {
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
        assert!(positive("slaveTimeout", &at("0")).is_err());
        assert_eq!(ratio_percent("r", &at("0.95")), Ok(95));
        assert!(ratio_percent("r", &at("1.5")).is_err());
        assert_eq!(core_list("shardCores", &at("0, 2")), Ok(vec![0, 2]));
    }
}
