//! The server's rustls configuration from the settings, as Java's
//! `TlsHelper.buildSslContext(false)` decides: test mode's self-signed
//! certificate, or the configured certificate and key, and client
//! certificates asked for, required and verified as the settings say.

use std::sync::Arc;

use rustls::client::danger::HandshakeSignatureValid;
use rustls::pki_types::{CertificateDer, UnixTime};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::server::WebPkiClientVerifier;
use rustls::{DigitallySignedStruct, DistinguishedName, ServerConfig, SignatureScheme};
use rustls_pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};

use crate::settings::{ClientAuth, TlsSettings};
use crate::{pem, provider, TlsError};

/// Names test mode's self-signed certificate is made for.
pub const TEST_MODE_NAMES: [&str; 3] = ["localhost", "127.0.0.1", "::1"];

/// Builds the server configuration (`settings` already merged with
/// `tls.config.file`). `alpn`: protocols offered, most preferred first
/// (none for Remoting).
pub fn server_config(
    settings: &TlsSettings,
    alpn: &[&[u8]],
) -> Result<Arc<ServerConfig>, TlsError> {
    let builder = ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(rustls_error)?;
    let verifier = client_verifier(settings)?;
    let builder = match verifier {
        Some(verifier) => builder.with_client_cert_verifier(verifier),
        None => builder.with_no_client_auth(),
    };
    let (chain, key) = identity(settings)?;
    let mut config = builder
        .with_single_cert(chain, key)
        .map_err(|e| TlsError::Invalid(format!("tls.server.certPath / keyPath: {e}")))?;
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    Ok(Arc::new(config))
}

/// The certificate chain and key served.
fn identity(
    settings: &TlsSettings,
) -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>), TlsError> {
    if settings.test_mode_enable {
        if settings.server.cert_path.is_some() {
            tracing::warn!(
                "tls.test.mode.enable=true: a self-signed certificate is served and \
                tls.server.certPath is not used (set tls.test.mode.enable=false to use it)"
            );
        }
        return self_signed();
    }
    let (Some(cert_path), Some(key_path)) = (&settings.server.cert_path, &settings.server.key_path)
    else {
        return Err(TlsError::Invalid(
            "tls.server.certPath and tls.server.keyPath must both be set when \
             tls.test.mode.enable=false"
                .into(),
        ));
    };
    let chain = pem::certificates("tls.server.certPath", cert_path)?;
    let password = settings.server.key_password.as_deref();
    let key = pem::private_key("tls.server.keyPath", key_path, password)?;
    Ok((chain, key))
}

/// Test mode: a fresh self-signed certificate, as Java makes one.
fn self_signed() -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>), TlsError> {
    let names: Vec<String> = TEST_MODE_NAMES.iter().map(|n| n.to_string()).collect();
    let certified = rcgen::generate_simple_self_signed(names)
        .map_err(|e| TlsError::Invalid(format!("cannot make a self-signed certificate: {e}")))?;
    let key = PrivatePkcs8KeyDer::from(certified.signing_key.serialize_der());
    Ok((
        vec![certified.cert.der().clone()],
        PrivateKeyDer::Pkcs8(key),
    ))
}

/// Who may present which client certificate: Java asks for one
/// (optionally) in test mode, and otherwise as `need.client.auth` says,
/// verifying it only with `authClient=true`.
fn client_verifier(
    settings: &TlsSettings,
) -> Result<Option<Arc<dyn ClientCertVerifier>>, TlsError> {
    if settings.test_mode_enable {
        return Ok(Some(Arc::new(AnyClientCert { mandatory: false })));
    }
    let mandatory = match settings.need_client_auth {
        ClientAuth::None => return Ok(None),
        ClientAuth::Optional => false,
        ClientAuth::Require => true,
    };
    if !settings.server.auth_peer {
        return Ok(Some(Arc::new(AnyClientCert { mandatory })));
    }
    let Some(trust) = &settings.server.trust_cert_path else {
        return Err(TlsError::Invalid(
            "tls.server.authClient=true needs tls.server.trustCertPath (the CA that \
             signs client certificates)"
                .into(),
        ));
    };
    let roots = Arc::new(pem::roots("tls.server.trustCertPath", trust)?);
    let builder = WebPkiClientVerifier::builder_with_provider(roots, provider());
    let builder = if mandatory {
        builder
    } else {
        builder.allow_unauthenticated()
    };
    let verifier = builder
        .build()
        .map_err(|e| TlsError::Invalid(format!("tls.server.trustCertPath: {e}")))?;
    Ok(Some(verifier))
}

/// Takes any client certificate without checking who signed it (Java's
/// insecure trust manager under `authClient=false`); the handshake still
/// proves the client holds the certificate's key.
#[derive(Debug)]
struct AnyClientCert {
    mandatory: bool,
}

impl ClientCertVerifier for AnyClientCert {
    fn client_auth_mandatory(&self) -> bool {
        self.mandatory
    }

    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        &[]
    }

    fn verify_client_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        Ok(ClientCertVerified::assertion())
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

pub(crate) fn rustls_error(e: rustls::Error) -> TlsError {
    TlsError::Invalid(format!("TLS: {e}"))
}
