//! A server's TLS: its mode and the configuration new connections get,
//! rebuilt when a certificate, key, trust or `tls.config.file` changes.
//!
//! Java watches the certificate, key and trust files every 500 ms and
//! reloads once both certificate and key changed; here any change
//! triggers a rebuild, and a rebuild that fails (a new certificate whose
//! key is not written yet, say) keeps the configuration in force and is
//! tried again at the next change. Connections already open keep theirs.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use rustls::ServerConfig;

use crate::settings::{TlsMode, TlsSettings};
use crate::{pem, server_config, TlsError};

/// How often watched files are compared (Java's FileWatchService: 500 ms).
pub const RELOAD_INTERVAL_MS: u64 = 500;

/// A watched file and the bytes it had (`None`: missing or unreadable).
type Snapshot = Vec<(PathBuf, Option<Vec<u8>>)>;

pub struct ServerTls {
    mode: TlsMode,
    settings: TlsSettings,
    alpn: Vec<Vec<u8>>,
    current: RwLock<Arc<ServerConfig>>,
    watched: Mutex<Snapshot>,
}

impl std::fmt::Debug for ServerTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerTls")
            .field("mode", &self.mode)
            .finish()
    }
}

impl ServerTls {
    /// The server's TLS, or `None` when `tls.server.mode=disabled` (a TLS
    /// opener then fails as a bad frame). Errors name the setting at fault.
    pub fn new(settings: &TlsSettings, alpn: &[&[u8]]) -> Result<Option<Arc<ServerTls>>, TlsError> {
        if settings.mode == TlsMode::Disabled {
            return Ok(None);
        }
        let merged = settings.with_file()?;
        let alpn: Vec<Vec<u8>> = alpn.iter().map(|p| p.to_vec()).collect();
        let config = build(&merged, &alpn)?;
        let watched = snapshot(&watch_list(settings, &merged));
        tracing::info!(
            mode = settings.mode.as_str(),
            test_mode = merged.test_mode_enable,
            "TLS ready"
        );
        Ok(Some(Arc::new(ServerTls {
            mode: settings.mode,
            settings: settings.clone(),
            alpn,
            current: RwLock::new(config),
            watched: Mutex::new(watched),
        })))
    }

    pub fn mode(&self) -> TlsMode {
        self.mode
    }

    /// The configuration for a connection opening now.
    pub fn config(&self) -> Arc<ServerConfig> {
        match self.current.read() {
            Ok(config) => config.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Rebuilds the configuration if a watched file changed; true when a
    /// new one is in force.
    pub fn reload_if_changed(&self) -> bool {
        let mut watched = match self.watched.lock() {
            Ok(watched) => watched,
            Err(poisoned) => poisoned.into_inner(),
        };
        let paths: Vec<PathBuf> = watched.iter().map(|(path, _)| path.clone()).collect();
        let now = snapshot(&paths);
        if now == *watched {
            return false;
        }
        let rebuilt = self
            .settings
            .with_file()
            .and_then(|merged| Ok((build(&merged, &self.alpn)?, merged)));
        match rebuilt {
            Ok((config, merged)) => {
                *self.current.write().unwrap_or_else(|p| p.into_inner()) = config;
                // What was read before the rebuild: a change written since
                // is seen at the next look.
                let list = watch_list(&self.settings, &merged);
                *watched = if list == paths { now } else { snapshot(&list) };
                tracing::info!("TLS certificate reloaded; new connections use it");
                true
            }
            Err(error) => {
                *watched = now;
                tracing::warn!(%error, "TLS files changed but cannot be used yet; \
                    the certificate in force stays (tried again at the next change)");
                false
            }
        }
    }

    /// Watches the files on a thread of its own until `stop` is set.
    pub fn watch(
        self: &Arc<Self>,
        stop: Arc<AtomicBool>,
    ) -> std::io::Result<std::thread::JoinHandle<()>> {
        let tls = self.clone();
        std::thread::Builder::new()
            .name("ferrocket-tls-reload".into())
            .spawn(move || {
                let interval = Duration::from_millis(RELOAD_INTERVAL_MS);
                while !stop.load(Ordering::Acquire) {
                    std::thread::sleep(interval);
                    tls.reload_if_changed();
                }
            })
    }
}

fn build(merged: &TlsSettings, alpn: &[Vec<u8>]) -> Result<Arc<ServerConfig>, TlsError> {
    let alpn: Vec<&[u8]> = alpn.iter().map(|p| p.as_slice()).collect();
    server_config(merged, &alpn)
}

/// The config file, and the certificate files outside test mode.
fn watch_list(settings: &TlsSettings, merged: &TlsSettings) -> Vec<PathBuf> {
    let mut paths = vec![settings.config_file.clone()];
    if !merged.test_mode_enable {
        let server = &merged.server;
        paths.extend(
            [&server.cert_path, &server.key_path, &server.trust_cert_path]
                .into_iter()
                .flatten()
                .cloned(),
        );
    }
    paths
}

fn snapshot(paths: &[PathBuf]) -> Snapshot {
    paths
        .iter()
        .map(|path| (path.clone(), pem::read("watched", path).ok()))
        .collect()
}
