//! TLS settings under RocketMQ's key names (Java's `TlsSystemConfig`,
//! where they are JVM system properties; here they are keys of the
//! server's properties file or `--set`), and the `tls.config.file`
//! overlay that Java's `TlsHelper` reads before building each context.

use std::path::{Path, PathBuf};

use crate::TlsError;

/// Java's default `tls.config.file`.
pub const TLS_CONFIG_FILE_DEFAULT: &str = "/etc/rocketmq/tls.properties";
/// Largest `tls.config.file` read.
pub const TLS_CONFIG_FILE_BYTES_MAX: u64 = 64 * 1024;

/// `tls.server.mode`: what a server does with TLS and plaintext openers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum TlsMode {
    /// Plaintext only; a TLS opener is closed.
    Disabled,
    /// TLS and plaintext on one port, told apart by the first byte (Java's
    /// default).
    #[default]
    Permissive,
    /// TLS only; a plaintext opener is closed.
    Enforcing,
}

impl TlsMode {
    /// Java matches the lower-case names exactly and reads anything else as
    /// permissive; here any case is accepted and anything else is refused,
    /// so a typo never weakens a server silently.
    pub fn parse(value: &str) -> Result<Self, TlsError> {
        match value.trim().to_ascii_lowercase().as_str() {
            "disabled" => Ok(TlsMode::Disabled),
            "permissive" => Ok(TlsMode::Permissive),
            "enforcing" => Ok(TlsMode::Enforcing),
            _ => Err(bad_value(
                "tls.server.mode",
                value,
                "disabled, permissive or enforcing",
            )),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            TlsMode::Disabled => "disabled",
            TlsMode::Permissive => "permissive",
            TlsMode::Enforcing => "enforcing",
        }
    }
}

/// `tls.server.need.client.auth`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum ClientAuth {
    #[default]
    None,
    Optional,
    Require,
}

impl ClientAuth {
    /// Java upper-cases and matches Netty's names, reading anything else as
    /// none; here anything else is refused.
    pub fn parse(value: &str) -> Result<Self, TlsError> {
        match value.trim().to_ascii_lowercase().as_str() {
            "none" => Ok(ClientAuth::None),
            "optional" => Ok(ClientAuth::Optional),
            "require" => Ok(ClientAuth::Require),
            _ => Err(bad_value(
                "tls.server.need.client.auth",
                value,
                "none, optional or require",
            )),
        }
    }
}

/// One side's certificate settings (`tls.server.*` or `tls.client.*`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Side {
    pub key_path: Option<PathBuf>,
    pub key_password: Option<String>,
    pub cert_path: Option<PathBuf>,
    /// `tls.server.authClient` / `tls.client.authServer`: verify the
    /// peer's certificate against `trust_cert_path`.
    pub auth_peer: bool,
    pub trust_cert_path: Option<PathBuf>,
}

/// Every `tls.*` setting, with Java's defaults.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TlsSettings {
    /// `tls.server.mode` (permissive).
    pub mode: TlsMode,
    /// `tls.enable`: dial out over TLS; unset, a server dials out over TLS
    /// when its mode is enforcing (Java's `NettyClientConfig.useTLS`).
    pub enable: Option<bool>,
    /// `tls.config.file` (/etc/rocketmq/tls.properties; read when present).
    pub config_file: PathBuf,
    /// `tls.test.mode.enable` (true): the server makes a self-signed
    /// certificate and the client trusts any.
    pub test_mode_enable: bool,
    /// `tls.server.need.client.auth` (none).
    pub need_client_auth: ClientAuth,
    pub server: Side,
    pub client: Side,
}

impl Default for TlsSettings {
    fn default() -> Self {
        Self {
            mode: TlsMode::default(),
            enable: None,
            config_file: PathBuf::from(TLS_CONFIG_FILE_DEFAULT),
            test_mode_enable: true,
            need_client_auth: ClientAuth::None,
            server: Side::default(),
            client: Side::default(),
        }
    }
}

/// Every key [`TlsSettings::set`] takes.
pub const KEYS: [&str; 15] = [
    "tls.server.mode",
    "tls.enable",
    "tls.config.file",
    "tls.test.mode.enable",
    "tls.server.need.client.auth",
    "tls.server.keyPath",
    "tls.server.keyPassword",
    "tls.server.certPath",
    "tls.server.authClient",
    "tls.server.trustCertPath",
    "tls.client.keyPath",
    "tls.client.keyPassword",
    "tls.client.certPath",
    "tls.client.authServer",
    "tls.client.trustCertPath",
];

/// Keys of [`KEYS`] only the server's own settings may set: the mode,
/// `tls.enable` and the file's own name, as in Java.
const OWN_KEYS_COUNT: usize = 3;

/// The keys `tls.config.file` may set: every other key.
pub const FILE_KEYS: &[&str] = KEYS.split_at(OWN_KEYS_COUNT).1;

impl TlsSettings {
    /// Sets one `tls.*` key. `Ok(false)`: not a TLS key.
    pub fn set(&mut self, key: &str, value: &str) -> Result<bool, TlsError> {
        let path = || non_empty(value).map(PathBuf::from);
        match key {
            "tls.server.mode" => self.mode = TlsMode::parse(value)?,
            "tls.enable" => self.enable = Some(parse_bool(key, value)?),
            "tls.config.file" => self.config_file = PathBuf::from(value.trim()),
            "tls.test.mode.enable" => self.test_mode_enable = parse_bool(key, value)?,
            "tls.server.need.client.auth" => self.need_client_auth = ClientAuth::parse(value)?,
            "tls.server.keyPath" => self.server.key_path = path(),
            "tls.server.keyPassword" => self.server.key_password = non_empty(value),
            "tls.server.certPath" => self.server.cert_path = path(),
            "tls.server.authClient" => self.server.auth_peer = parse_bool(key, value)?,
            "tls.server.trustCertPath" => self.server.trust_cert_path = path(),
            "tls.client.keyPath" => self.client.key_path = path(),
            "tls.client.keyPassword" => self.client.key_password = non_empty(value),
            "tls.client.certPath" => self.client.cert_path = path(),
            "tls.client.authServer" => self.client.auth_peer = parse_bool(key, value)?,
            "tls.client.trustCertPath" => self.client.trust_cert_path = path(),
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// Whether a client of these settings dials out over TLS: `explicit`
    /// (a `useTLS` key) first, then `tls.enable`, then an enforcing mode.
    pub fn client_uses_tls(&self, explicit: Option<bool>) -> bool {
        explicit
            .or(self.enable)
            .unwrap_or(self.mode == TlsMode::Enforcing)
    }

    /// These settings with `tls.config.file`'s values on top (when the file
    /// exists), as Java reads it before building each context. A file that
    /// exists but cannot be read, or holds a bad value, is an error.
    pub fn with_file(&self) -> Result<TlsSettings, TlsError> {
        let mut merged = self.clone();
        let Some(text) = read_config_file(&self.config_file)? else {
            return Ok(merged);
        };
        for (key, value) in ferrocket_protocol::body::parse_properties(&text) {
            if FILE_KEYS.contains(&key.as_str()) {
                merged.set(&key, &value)?;
            } else if key.starts_with("tls.") {
                tracing::warn!(file = %self.config_file.display(), %key,
                    "ignored: tls.config.file cannot set this key (set it in the server's own settings)");
            }
        }
        Ok(merged)
    }
}

fn read_config_file(path: &Path) -> Result<Option<String>, TlsError> {
    let io = |source| TlsError::Io {
        path: path.to_path_buf(),
        source,
    };
    match std::fs::metadata(path) {
        Ok(meta) if meta.is_file() => {
            if meta.len() > TLS_CONFIG_FILE_BYTES_MAX {
                return Err(TlsError::Invalid(format!(
                    "{}: larger than {TLS_CONFIG_FILE_BYTES_MAX} bytes",
                    path.display()
                )));
            }
            std::fs::read_to_string(path).map(Some).map_err(io)
        }
        Ok(_) => Ok(None),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io(e)),
    }
}

fn non_empty(value: &str) -> Option<String> {
    let value = value.trim();
    (!value.is_empty()).then(|| value.to_string())
}

fn parse_bool(key: &str, value: &str) -> Result<bool, TlsError> {
    match value.trim().to_ascii_lowercase().as_str() {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err(bad_value(key, value, "true or false")),
    }
}

fn bad_value(key: &str, value: &str, expected: &str) -> TlsError {
    TlsError::BadValue {
        key: key.to_string(),
        value: value.to_string(),
        expected: expected.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_parse_in_any_case_and_typos_are_refused() {
        assert_eq!(TlsMode::parse("enforcing").unwrap(), TlsMode::Enforcing);
        assert_eq!(TlsMode::parse(" ENFORCING ").unwrap(), TlsMode::Enforcing);
        assert_eq!(TlsMode::parse("Disabled").unwrap(), TlsMode::Disabled);
        let error = TlsMode::parse("enforce").unwrap_err().to_string();
        assert!(error.contains("tls.server.mode"), "{error}");
        assert!(ClientAuth::parse("requier").is_err());
        assert_eq!(ClientAuth::parse("REQUIRE").unwrap(), ClientAuth::Require);
    }

    #[test]
    fn every_key_sets_something_and_others_are_not_ours() {
        let mut settings = TlsSettings::default();
        for key in KEYS {
            let value = match key {
                "tls.server.mode" => "enforcing",
                "tls.server.need.client.auth" => "optional",
                k if k.contains("auth") || k.ends_with("enable") => "true",
                _ => "/x",
            };
            assert!(settings.set(key, value).unwrap(), "{key}");
        }
        assert_ne!(settings, TlsSettings::default());
        assert!(!settings.set("listenPort", "1").unwrap());
        assert!(settings.set("tls.enable", "yes").is_err());
    }

    #[test]
    fn the_client_dials_tls_when_asked_or_when_the_server_enforces() {
        let mut settings = TlsSettings::default();
        assert!(!settings.client_uses_tls(None));
        settings.mode = TlsMode::Enforcing;
        assert!(settings.client_uses_tls(None));
        assert!(!settings.client_uses_tls(Some(false)));
        settings.enable = Some(false);
        assert!(!settings.client_uses_tls(None));
        assert!(settings.client_uses_tls(Some(true)));
    }

    #[test]
    fn the_config_file_overrides_all_but_the_mode() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("tls.properties");
        std::fs::write(
            &file,
            "tls.test.mode.enable=false\ntls.server.certPath=/c.pem\n\
             tls.server.mode=disabled\n# comment\ntls.server.keyPassword=secret\n",
        )
        .unwrap();
        let mut settings = TlsSettings::default();
        settings
            .set("tls.config.file", file.to_str().unwrap())
            .unwrap();
        settings.set("tls.server.certPath", "/mine.pem").unwrap();
        let merged = settings.with_file().unwrap();
        assert!(!merged.test_mode_enable);
        assert_eq!(merged.server.cert_path, Some(PathBuf::from("/c.pem")));
        assert_eq!(merged.server.key_password.as_deref(), Some("secret"));
        assert_eq!(merged.mode, TlsMode::Permissive);
        std::fs::write(&file, "tls.server.authClient=maybe\n").unwrap();
        assert!(settings.with_file().is_err());
        settings
            .set("tls.config.file", "/nonexistent/tls.properties")
            .unwrap();
        assert_eq!(settings.with_file().unwrap(), settings);
    }
}
