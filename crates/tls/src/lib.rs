//! TLS for Ferrocket's servers and clients, under RocketMQ's `tls.*`
//! settings: rustls configurations built from them (test mode's
//! self-signed certificate, PEM certificates and keys, client
//! certificates), a server-side holder that reloads changed certificate
//! files, the first-bytes test that tells TLS from plaintext on one port,
//! and a stream that is either.

mod client;
mod pem;
mod reload;
mod server;
mod settings;
mod signatures;
mod sniff;
mod stream;

#[cfg(test)]
mod tests;

use std::path::PathBuf;

pub use client::{client_config, server_name};
pub use reload::{ServerTls, RELOAD_INTERVAL_MS};
pub use server::server_config;
pub use settings::{ClientAuth, Side, TlsMode, TlsSettings, TLS_CONFIG_FILE_DEFAULT, TLS_SETTINGS};
pub use sniff::{client_hello_alpn, HelloAlpn, CLIENT_HELLO_BYTES_MAX, TLS_HANDSHAKE_BYTE};
pub use stream::MaybeTls;

pub use futures_rustls;
pub use rustls;

/// Why TLS settings could not be used.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{0}")]
    Invalid(String),
}

/// The one crypto provider every configuration here is built with.
fn provider() -> std::sync::Arc<rustls::crypto::CryptoProvider> {
    std::sync::Arc::new(rustls::crypto::ring::default_provider())
}
