//! Handshake signature checks with the one provider, for the verifiers
//! that take a peer's certificate without checking who signed it (the
//! handshake must still prove the peer holds the certificate's key).

use rustls::client::danger::HandshakeSignatureValid;
use rustls::pki_types::CertificateDer;
use rustls::{DigitallySignedStruct, SignatureScheme};

use crate::provider;

pub(crate) fn tls12(
    message: &[u8],
    cert: &CertificateDer<'_>,
    dss: &DigitallySignedStruct,
) -> Result<HandshakeSignatureValid, rustls::Error> {
    let algorithms = provider().signature_verification_algorithms;
    rustls::crypto::verify_tls12_signature(message, cert, dss, &algorithms)
}

pub(crate) fn tls13(
    message: &[u8],
    cert: &CertificateDer<'_>,
    dss: &DigitallySignedStruct,
) -> Result<HandshakeSignatureValid, rustls::Error> {
    let algorithms = provider().signature_verification_algorithms;
    rustls::crypto::verify_tls13_signature(message, cert, dss, &algorithms)
}

pub(crate) fn schemes() -> Vec<SignatureScheme> {
    provider()
        .signature_verification_algorithms
        .supported_schemes()
}
