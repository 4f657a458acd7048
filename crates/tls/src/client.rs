//! The client's rustls configuration from the settings, as Java's
//! `TlsHelper.buildSslContext(true)` decides: in test mode, or with
//! `tls.client.authServer=false` (both Java's defaults), any server
//! certificate is taken; with `authServer=true` it must chain to
//! `tls.client.trustCertPath`. Java checks no host name, so neither does
//! this (brokers are dialled by IP address).

use std::net::SocketAddr;
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, ClientConfig, DigitallySignedStruct, SignatureScheme};

use crate::server::rustls_error;
use crate::settings::TlsSettings;
use crate::{pem, provider, TlsError};

/// Builds the client configuration (`settings` already merged with
/// `tls.config.file`). `alpn`: protocols asked for (none for Remoting).
pub fn client_config(
    settings: &TlsSettings,
    alpn: &[&[u8]],
) -> Result<Arc<ClientConfig>, TlsError> {
    let verifier = server_verifier(settings)?;
    let builder = ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(rustls_error)?
        .dangerous()
        .with_custom_certificate_verifier(verifier);
    let side = &settings.client;
    let mut config = match (&side.cert_path, &side.key_path) {
        (Some(cert), Some(key)) if !settings.test_mode_enable => {
            let chain = pem::certificates("tls.client.certPath", cert)?;
            let password = side.key_password.as_deref();
            let key = pem::private_key("tls.client.keyPath", key, password)?;
            builder
                .with_client_auth_cert(chain, key)
                .map_err(|e| TlsError::Invalid(format!("tls.client.certPath / keyPath: {e}")))?
        }
        (Some(_), None) | (None, Some(_)) if !settings.test_mode_enable => {
            return Err(TlsError::Invalid(
                "tls.client.certPath and tls.client.keyPath must be set together".into(),
            ))
        }
        _ => builder.with_no_client_auth(),
    };
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    Ok(Arc::new(config))
}

/// The name a client presents for `addr` (an IP address: no SNI is sent,
/// and no name is checked).
pub fn server_name(addr: SocketAddr) -> ServerName<'static> {
    ServerName::IpAddress(addr.ip().into())
}

fn server_verifier(settings: &TlsSettings) -> Result<Arc<dyn ServerCertVerifier>, TlsError> {
    if settings.test_mode_enable && settings.client.auth_peer {
        tracing::warn!(
            "tls.test.mode.enable=true: tls.client.authServer is not used and any server \
            certificate is taken (set tls.test.mode.enable=false to verify)"
        );
    }
    if settings.test_mode_enable || !settings.client.auth_peer {
        return Ok(Arc::new(AnyServerCert));
    }
    let Some(trust) = &settings.client.trust_cert_path else {
        return Err(TlsError::Invalid(
            "tls.client.authServer=true needs tls.client.trustCertPath (the CA that signs \
             the servers' certificates)"
                .into(),
        ));
    };
    let roots = Arc::new(pem::roots("tls.client.trustCertPath", trust)?);
    let inner = WebPkiServerVerifier::builder_with_provider(roots, provider())
        .build()
        .map_err(|e| TlsError::Invalid(format!("tls.client.trustCertPath: {e}")))?;
    Ok(Arc::new(ChainOnly(inner)))
}

/// Any server certificate (Java's insecure trust manager); the handshake
/// signature is still checked against it.
#[derive(Debug)]
struct AnyServerCert;

impl ServerCertVerifier for AnyServerCert {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        crate::signatures::tls12(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        crate::signatures::tls13(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        crate::signatures::schemes()
    }
}

/// The chain must lead to a trusted CA and be in date; the name in it is
/// not compared with the address dialled.
#[derive(Debug)]
struct ChainOnly(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let verified =
            self.0
                .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now);
        match verified {
            Err(rustls::Error::InvalidCertificate(CertificateError::NotValidForName))
            | Err(rustls::Error::InvalidCertificate(CertificateError::NotValidForNameContext {
                ..
            })) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}
