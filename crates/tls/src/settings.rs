//! TLS settings under RocketMQ's key names (Java's `TlsSystemConfig`,
//! where they are JVM system properties; here they are keys of the
//! server's properties file or `--set`), and the `tls.config.file`
//! overlay that Java's `TlsHelper` reads before building each context.

use std::path::{Path, PathBuf};

use ferrocket_settings::{decl, invalid, parse_bool, Decl, Setting, Table};

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
    pub fn parse(value: &str) -> Option<Self> {
        match value.trim().to_ascii_lowercase().as_str() {
            "disabled" => Some(TlsMode::Disabled),
            "permissive" => Some(TlsMode::Permissive),
            "enforcing" => Some(TlsMode::Enforcing),
            _ => None,
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
    pub fn parse(value: &str) -> Option<Self> {
        match value.trim().to_ascii_lowercase().as_str() {
            "none" => Some(ClientAuth::None),
            "optional" => Some(ClientAuth::Optional),
            "require" => Some(ClientAuth::Require),
            _ => None,
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

/// Every `tls.*` key, declared once; a server takes them with
/// `ferrocket_settings::nest` over its config's `TlsSettings`.
pub static TLS_SETTINGS: [Decl<TlsSettings>; 15] = [
    decl!(
        "tls.server.mode",
        "`permissive`",
        start,
        "`disabled` (plaintext only), `permissive` (TLS and plaintext on one port) or `enforcing` (TLS only)",
        |c, k, s| c.mode = TlsMode::parse(&s.value)
            .ok_or_else(|| invalid(k, s, "expected disabled, permissive or enforcing"))?,
    ),
    decl!(
        "tls.enable",
        "-",
        start,
        "dial out over TLS; unset: when the mode is enforcing",
        |c, k, s| c.enable = Some(parse_bool(k, s)?),
    ),
    decl!(
        "tls.config.file",
        "`/etc/rocketmq/tls.properties`",
        start,
        "a properties file of the other `tls.*` keys, read (when present) before each context is built",
        |c, _, s| c.config_file = PathBuf::from(s.value.trim()),
    ),
    decl!(
        "tls.test.mode.enable",
        "`true`",
        start,
        "the server serves a self-signed certificate and the client trusts any",
        |c, k, s| c.test_mode_enable = parse_bool(k, s)?,
    ),
    decl!(
        "tls.server.need.client.auth",
        "`none`",
        start,
        "`none`, `optional` or `require` a client certificate",
        |c, k, s| c.need_client_auth = ClientAuth::parse(&s.value)
            .ok_or_else(|| invalid(k, s, "expected none, optional or require"))?,
    ),
    decl!(
        "tls.server.keyPath",
        "-",
        start,
        "the server's key (PEM: PKCS#8, RSA or EC)",
        |c, _, s| c.server.key_path = path(s),
    ),
    decl!(
        "tls.server.keyPassword",
        "-",
        start,
        "the password of an encrypted PKCS#8 server key",
        |c, _, s| c.server.key_password = non_empty(&s.value),
    ),
    decl!(
        "tls.server.certPath",
        "-",
        start,
        "the server's certificate chain (PEM, leaf first)",
        |c, _, s| c.server.cert_path = path(s),
    ),
    decl!(
        "tls.server.authClient",
        "`false`",
        start,
        "verify client certificates against `tls.server.trustCertPath`",
        |c, k, s| c.server.auth_peer = parse_bool(k, s)?,
    ),
    decl!(
        "tls.server.trustCertPath",
        "-",
        start,
        "the CA that signs client certificates (PEM)",
        |c, _, s| c.server.trust_cert_path = path(s),
    ),
    decl!(
        "tls.client.keyPath",
        "-",
        start,
        "the key of the certificate sent to servers that ask for one",
        |c, _, s| c.client.key_path = path(s),
    ),
    decl!(
        "tls.client.keyPassword",
        "-",
        start,
        "the password of an encrypted PKCS#8 client key",
        |c, _, s| c.client.key_password = non_empty(&s.value),
    ),
    decl!(
        "tls.client.certPath",
        "-",
        start,
        "the certificate chain sent to servers that ask for one",
        |c, _, s| c.client.cert_path = path(s),
    ),
    decl!(
        "tls.client.authServer",
        "`false`",
        start,
        "verify the server's certificate against `tls.client.trustCertPath`",
        |c, k, s| c.client.auth_peer = parse_bool(k, s)?,
    ),
    decl!(
        "tls.client.trustCertPath",
        "-",
        start,
        "the CA that signs server certificates (PEM)",
        |c, _, s| c.client.trust_cert_path = path(s),
    ),
];

/// Keys of [`TLS_SETTINGS`] only the server's own settings may set: the
/// mode, `tls.enable` and the file's own name, as in Java.
const OWN_KEYS_COUNT: usize = 3;

/// The keys `tls.config.file` may set: every other key.
static FILE_KEYS: Table<TlsSettings> = Table {
    sections: &[TLS_SETTINGS.split_at(OWN_KEYS_COUNT).1],
};

/// Every key, for a server's table.
static ALL_KEYS: Table<TlsSettings> = Table {
    sections: &[&TLS_SETTINGS],
};

impl TlsSettings {
    /// Sets one `tls.*` key. `Ok(false)`: not a TLS key.
    pub fn set(&mut self, key: &str, value: &str) -> Result<bool, TlsError> {
        let setting = Setting::from_flag(value.to_string(), "TLS setting".into());
        ALL_KEYS
            .apply(self, key, &setting)
            .map_err(TlsError::Invalid)
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
        let origin = self.config_file.display().to_string();
        for (key, value) in ferrocket_protocol::body::parse_properties(&text) {
            let setting = Setting::from_flag(value, origin.clone());
            let known = FILE_KEYS
                .apply(&mut merged, &key, &setting)
                .map_err(TlsError::Invalid)?;
            if !known && key.starts_with("tls.") {
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

fn path(setting: &Setting) -> Option<PathBuf> {
    non_empty(&setting.value).map(PathBuf::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_parse_in_any_case_and_typos_are_refused() {
        assert_eq!(TlsMode::parse("enforcing"), Some(TlsMode::Enforcing));
        assert_eq!(TlsMode::parse(" ENFORCING "), Some(TlsMode::Enforcing));
        assert_eq!(TlsMode::parse("Disabled"), Some(TlsMode::Disabled));
        let mut settings = TlsSettings::default();
        let error = settings
            .set("tls.server.mode", "enforce")
            .unwrap_err()
            .to_string();
        assert!(
            error.ends_with("for tls.server.mode: expected disabled, permissive or enforcing"),
            "{error}"
        );
        assert!(settings
            .set("tls.server.need.client.auth", "requier")
            .is_err());
        assert_eq!(ClientAuth::parse("REQUIRE"), Some(ClientAuth::Require));
    }

    #[test]
    fn every_key_sets_something_and_others_are_not_ours() {
        let mut settings = TlsSettings::default();
        for key in TLS_SETTINGS.iter().map(|decl| decl.name) {
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
