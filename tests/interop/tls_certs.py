"""Test certificates for the TLS tests: a CA and a server certificate it
signs for 127.0.0.1 and localhost, written as PEM files (the `cryptography`
package, pinned in requirements.txt)."""

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

VALID_DAYS = 2


@dataclass
class Pki:
    ca: Path
    cert: Path
    key: Path

    def server_settings(self, mode):
        """Server `--set` arguments serving this certificate in `mode`."""
        return (
            "--set", f"tls.server.mode={mode}",
            "--set", "tls.test.mode.enable=false",
            "--set", f"tls.server.certPath={self.cert}",
            "--set", f"tls.server.keyPath={self.key}",
            # Never the host's /etc/rocketmq/tls.properties.
            "--set", f"tls.config.file={self.cert.parent / 'absent.properties'}",
        )


def _name(common_name):
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def make_pki(directory):
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(_name("ferrocket test CA"))
        .issuer_name(_name("ferrocket test CA"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=VALID_DAYS))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    names = [x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name("ferrocket test server"))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=VALID_DAYS))
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    pki = Pki(ca=directory / "ca.pem", cert=directory / "cert.pem", key=directory / "key.pem")
    pki.ca.write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
    pki.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    pki.key.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return pki
