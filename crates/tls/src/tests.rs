//! Handshakes between the configurations built here, in memory.

use std::path::Path;
use std::sync::Arc;

use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};
use rustls::{ClientConnection, ServerConnection};

use crate::{client_config, server_config, server_name, ServerTls, TlsSettings};

/// A CA and a leaf certificate it signed, as PEM text.
struct Pki {
    ca: String,
    cert: String,
    key: KeyPair,
}

fn pki(names: &[&str]) -> Pki {
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap();
    let key = KeyPair::generate().unwrap();
    let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    let cert = CertificateParams::new(names)
        .unwrap()
        .signed_by(&key, &ca)
        .unwrap();
    Pki {
        ca: ca.pem(),
        cert: cert.pem(),
        key,
    }
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_string()
}

/// Runs a handshake to its end; the error of whichever side failed.
fn handshake(
    server: Arc<rustls::ServerConfig>,
    client: Arc<rustls::ClientConfig>,
) -> Result<(), rustls::Error> {
    let mut s = ServerConnection::new(server)?;
    let mut c = ClientConnection::new(client, server_name("127.0.0.1:1".parse().unwrap()))?;
    for _ in 0..10 {
        let mut wire = Vec::new();
        while c.wants_write() {
            c.write_tls(&mut wire).unwrap();
        }
        s.read_tls(&mut wire.as_slice()).unwrap();
        s.process_new_packets()?;
        let mut back = Vec::new();
        while s.wants_write() {
            s.write_tls(&mut back).unwrap();
        }
        c.read_tls(&mut back.as_slice()).unwrap();
        c.process_new_packets()?;
        if !s.is_handshaking() && !c.is_handshaking() {
            return Ok(());
        }
    }
    panic!("handshake did not finish");
}

fn settings(pairs: &[(&str, &str)]) -> TlsSettings {
    let mut settings = TlsSettings::default();
    settings
        .set("tls.config.file", "/nonexistent/tls.properties")
        .unwrap();
    for (key, value) in pairs {
        assert!(settings.set(key, value).unwrap(), "{key}");
    }
    settings
}

#[test]
fn test_mode_serves_a_self_signed_certificate_any_client_takes() {
    let server = server_config(&settings(&[]), &[]).unwrap();
    let client = client_config(&settings(&[]), &[]).unwrap();
    handshake(server, client).unwrap();
}

#[test]
fn a_verifying_client_takes_only_a_certificate_its_ca_signed() {
    let dir = tempfile::tempdir().unwrap();
    let ours = pki(&["broker.example"]);
    let theirs = pki(&["broker.example"]);
    let cert = write(dir.path(), "cert.pem", &ours.cert);
    let key = write(dir.path(), "key.pem", &ours.key.serialize_pem());
    let ca = write(dir.path(), "ca.pem", &ours.ca);
    let other_ca = write(dir.path(), "other.pem", &theirs.ca);
    let server = [
        ("tls.test.mode.enable", "false"),
        ("tls.server.certPath", &cert),
        ("tls.server.keyPath", &key),
    ];
    let server = server_config(&settings(&server), &[]).unwrap();
    let verifying = |trust: &str| {
        let pairs = [
            ("tls.test.mode.enable", "false"),
            ("tls.client.authServer", "true"),
            ("tls.client.trustCertPath", trust),
        ];
        client_config(&settings(&pairs), &[]).unwrap()
    };
    // The name in the certificate is not the address dialled: Java checks none.
    handshake(server.clone(), verifying(&ca)).unwrap();
    let refused = handshake(server, verifying(&other_ca)).unwrap_err();
    assert!(
        matches!(refused, rustls::Error::InvalidCertificate(_)),
        "{refused}"
    );
}

#[test]
fn a_password_protected_key_needs_its_password() {
    let dir = tempfile::tempdir().unwrap();
    let ours = pki(&["localhost"]);
    let plain = ours.key.serialize_der();
    let info = pkcs8::PrivateKeyInfo::try_from(plain.as_slice()).unwrap();
    let (salt, iv) = ([7u8; 16], [9u8; 16]);
    let params =
        pkcs8::pkcs5::pbes2::Parameters::pbkdf2_sha256_aes256cbc(2048, &salt, &iv).unwrap();
    let encrypted = info.encrypt_with_params(params, "123456").unwrap();
    let pem = encrypted
        .to_pem("ENCRYPTED PRIVATE KEY", Default::default())
        .unwrap();
    let cert = write(dir.path(), "cert.pem", &ours.cert);
    let key = write(dir.path(), "key.pem", &pem);
    let base = [
        ("tls.test.mode.enable", "false"),
        ("tls.server.certPath", cert.as_str()),
        ("tls.server.keyPath", key.as_str()),
    ];
    let no_password = server_config(&settings(&base), &[])
        .unwrap_err()
        .to_string();
    assert!(no_password.contains("keyPassword"), "{no_password}");
    let mut wrong = settings(&base);
    wrong.set("tls.server.keyPassword", "654321").unwrap();
    assert!(server_config(&wrong, &[]).is_err());
    let mut right = settings(&base);
    right.set("tls.server.keyPassword", "123456").unwrap();
    let server = server_config(&right, &[]).unwrap();
    handshake(server, client_config(&settings(&[]), &[]).unwrap()).unwrap();
}

#[test]
fn required_client_certificates_are_asked_for_and_verified_when_told() {
    let dir = tempfile::tempdir().unwrap();
    let server_pki = pki(&["localhost"]);
    let client_pki = pki(&["client"]);
    let cert = write(dir.path(), "cert.pem", &server_pki.cert);
    let key = write(dir.path(), "key.pem", &server_pki.key.serialize_pem());
    let client_cert = write(dir.path(), "client.pem", &client_pki.cert);
    let client_key = write(dir.path(), "client.key", &client_pki.key.serialize_pem());
    let client_ca = write(dir.path(), "client-ca.pem", &client_pki.ca);
    let base = [
        ("tls.test.mode.enable", "false"),
        ("tls.server.certPath", cert.as_str()),
        ("tls.server.keyPath", key.as_str()),
        ("tls.server.need.client.auth", "require"),
    ];
    let with_cert = [
        ("tls.test.mode.enable", "false"),
        ("tls.client.certPath", &client_cert),
        ("tls.client.keyPath", &client_key),
    ];
    let anonymous = client_config(&settings(&[("tls.test.mode.enable", "false")]), &[]).unwrap();
    let presenting = client_config(&settings(&with_cert), &[]).unwrap();
    // authClient=false: a certificate is required but anyone's will do.
    let any = server_config(&settings(&base), &[]).unwrap();
    assert!(handshake(any.clone(), anonymous.clone()).is_err());
    handshake(any, presenting.clone()).unwrap();
    // authClient=true: it must chain to the trusted CA.
    let mut verifying = settings(&base);
    verifying.set("tls.server.authClient", "true").unwrap();
    assert!(server_config(&verifying, &[]).is_err(), "no trustCertPath");
    verifying.set("tls.server.trustCertPath", &cert).unwrap();
    let wrong_ca = server_config(&verifying, &[]).unwrap();
    assert!(handshake(wrong_ca, presenting.clone()).is_err());
    verifying
        .set("tls.server.trustCertPath", &client_ca)
        .unwrap();
    handshake(server_config(&verifying, &[]).unwrap(), presenting).unwrap();
}

#[test]
fn a_changed_certificate_is_reloaded_and_a_broken_one_is_not() {
    let dir = tempfile::tempdir().unwrap();
    let first = pki(&["localhost"]);
    let cert = write(dir.path(), "cert.pem", &first.cert);
    let key = write(dir.path(), "key.pem", &first.key.serialize_pem());
    let pairs = [
        ("tls.test.mode.enable", "false"),
        ("tls.server.certPath", cert.as_str()),
        ("tls.server.keyPath", key.as_str()),
    ];
    let tls = ServerTls::new(&settings(&pairs), &[]).unwrap().unwrap();
    assert!(!tls.reload_if_changed());
    let before = tls.config();
    // The certificate changes first: its key does not match yet.
    let second = pki(&["localhost"]);
    write(dir.path(), "cert.pem", &second.cert);
    assert!(!tls.reload_if_changed());
    assert!(Arc::ptr_eq(&before, &tls.config()));
    write(dir.path(), "key.pem", &second.key.serialize_pem());
    assert!(tls.reload_if_changed());
    assert!(!Arc::ptr_eq(&before, &tls.config()));
    let disabled = settings(&[("tls.server.mode", "disabled")]);
    assert!(ServerTls::new(&disabled, &[]).unwrap().is_none());
}

#[test]
fn missing_paths_outside_test_mode_name_the_keys() {
    let error = server_config(&settings(&[("tls.test.mode.enable", "false")]), &[])
        .unwrap_err()
        .to_string();
    assert!(error.contains("tls.server.certPath"), "{error}");
    let half = [
        ("tls.test.mode.enable", "false"),
        ("tls.client.certPath", "/x.pem"),
    ];
    assert!(client_config(&settings(&half), &[]).is_err());
}
