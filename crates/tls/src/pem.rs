//! PEM certificates and keys from the paths the settings name: X.509
//! chains, PKCS#8 / PKCS#1 / SEC1 keys, and password-protected PKCS#8
//! (PBES2, what `openssl pkcs8 -topk8` writes) with `keyPassword`.

use std::path::Path;

use rustls::RootCertStore;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

use crate::TlsError;

/// Largest certificate or key file read.
pub const PEM_FILE_BYTES_MAX: u64 = 1024 * 1024;

const ENCRYPTED_LABEL: &str = "-----BEGIN ENCRYPTED PRIVATE KEY-----";

/// Reads a file the settings name, bounded in size.
pub(crate) fn read(key: &str, path: &Path) -> Result<Vec<u8>, TlsError> {
    let io = |source| TlsError::Io {
        path: path.to_path_buf(),
        source,
    };
    use std::io::Read;
    let file = std::fs::File::open(path).map_err(io)?;
    let mut bytes = Vec::new();
    // Bounded even for a file that grows, or a pipe.
    file.take(PEM_FILE_BYTES_MAX + 1)
        .read_to_end(&mut bytes)
        .map_err(io)?;
    if bytes.len() as u64 > PEM_FILE_BYTES_MAX {
        return Err(invalid(key, path, "larger than 1 MiB"));
    }
    Ok(bytes)
}

/// The certificates of a PEM file, in order (the chain: leaf first).
pub(crate) fn certificates(
    key: &str,
    path: &Path,
) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let bytes = read(key, path)?;
    let certs = CertificateDer::pem_slice_iter(&bytes)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| invalid(key, path, &e.to_string()))?;
    if certs.is_empty() {
        return Err(invalid(key, path, "no PEM CERTIFICATE in it"));
    }
    Ok(certs)
}

/// The private key of a PEM file, decrypted with `password` when it is an
/// ENCRYPTED PRIVATE KEY.
pub(crate) fn private_key(
    key: &str,
    path: &Path,
    password: Option<&str>,
) -> Result<PrivateKeyDer<'static>, TlsError> {
    let bytes = read(key, path)?;
    let text = String::from_utf8_lossy(&bytes);
    if let Some(start) = text.find(ENCRYPTED_LABEL) {
        let Some(password) = password else {
            return Err(invalid(
                key,
                path,
                "the key is encrypted and no keyPassword is set",
            ));
        };
        return decrypt(key, path, &text[start..], password);
    }
    PrivateKeyDer::from_pem_slice(&bytes).map_err(|e| {
        invalid(
            key,
            path,
            &format!("no usable PEM private key (PKCS#8, RSA or EC): {e}"),
        )
    })
}

fn decrypt(
    key: &str,
    path: &Path,
    pem: &str,
    password: &str,
) -> Result<PrivateKeyDer<'static>, TlsError> {
    let end = "-----END ENCRYPTED PRIVATE KEY-----";
    let section = match pem.find(end) {
        Some(at) => &pem[..at + end.len()],
        None => return Err(invalid(key, path, "unterminated ENCRYPTED PRIVATE KEY")),
    };
    let (_, der) = pkcs8::der::pem::decode_vec(section.as_bytes())
        .map_err(|e| invalid(key, path, &format!("bad PEM: {e}")))?;
    let info = pkcs8::EncryptedPrivateKeyInfo::try_from(der.as_slice())
        .map_err(|e| invalid(key, path, &format!("bad encrypted key: {e}")))?;
    let document = info.decrypt(password).map_err(|e| {
        invalid(
            key,
            path,
            &format!("cannot decrypt the key (wrong keyPassword, or not PBES2): {e}"),
        )
    })?;
    Ok(PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(
        document.as_bytes().to_vec(),
    )))
}

/// A trust store of every certificate in a PEM file.
pub(crate) fn roots(key: &str, path: &Path) -> Result<RootCertStore, TlsError> {
    let mut store = RootCertStore::empty();
    for cert in certificates(key, path)? {
        store
            .add(cert)
            .map_err(|e| invalid(key, path, &format!("not a usable CA certificate: {e}")))?;
    }
    Ok(store)
}

fn invalid(key: &str, path: &Path, why: &str) -> TlsError {
    TlsError::Invalid(format!("{key}={}: {why}", path.display()))
}
