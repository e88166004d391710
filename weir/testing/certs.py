"""A throwaway PKI for TLS tests: a CA, a broker certificate for 127.0.0.1/localhost, client
certificates, written as PEM files (Kafka's ssl.keystore.type=PEM layout: key + chain in one file).

Weir's own tests and benchmarks use it, and so may a user's suite that tests its TLS settings:

    pki = Pki(tmp_path)
    server = pki.issue("broker", [("CN", "localhost")], server=True)
    # ssl.keystore.type=PEM, ssl.keystore.location=server.keystore_path; clients trust pki.ca_path
"""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

_NAMES = {"CN": NameOID.COMMON_NAME, "OU": NameOID.ORGANIZATIONAL_UNIT_NAME, "O": NameOID.ORGANIZATION_NAME,
          "L": NameOID.LOCALITY_NAME, "ST": NameOID.STATE_OR_PROVINCE_NAME, "C": NameOID.COUNTRY_NAME}


@dataclass
class Issued:
    key_pem: str
    cert_pem: str  # the certificate followed by the CA's (the chain)
    key_path: Path  # PEM key
    cert_path: Path  # PEM chain
    keystore_path: Path  # key + chain in one file (ssl.keystore.location with ssl.keystore.type=PEM)


def _name(parts: list[tuple[str, str]]) -> x509.Name:
    """Most general first, as certificates list them: [("C", "US"), ("O", "Weir"), ("CN", "alice")]."""
    return x509.Name([x509.NameAttribute(_NAMES[kind], value) for kind, value in parts])


class Pki:
    def __init__(self, directory: Path):
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self._ca_key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.UTC)
        self._now = now
        name = _name([("O", "Weir tests"), ("CN", "Weir test CA")])
        self._ca = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
                    .public_key(self._ca_key.public_key()).serial_number(x509.random_serial_number())
                    .not_valid_before(now - datetime.timedelta(hours=1))
                    .not_valid_after(now + datetime.timedelta(days=2))
                    .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
                    .sign(self._ca_key, hashes.SHA256()))
        self.ca_pem = self._ca.public_bytes(serialization.Encoding.PEM).decode()
        self.ca_path = self.directory / "ca.pem"
        self.ca_path.write_text(self.ca_pem)

    def issue(self, label: str, subject: list[tuple[str, str]], *, server: bool = False,
              key_password: str | None = None) -> Issued:
        key = ec.generate_private_key(ec.SECP256R1())
        builder = (x509.CertificateBuilder().subject_name(_name(subject)).issuer_name(self._ca.subject)
                   .public_key(key.public_key()).serial_number(x509.random_serial_number())
                   .not_valid_before(self._now - datetime.timedelta(hours=1))
                   .not_valid_after(self._now + datetime.timedelta(days=1)))
        if server:
            builder = builder.add_extension(x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
            builder = builder.add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        else:
            builder = builder.add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
        cert = builder.sign(self._ca_key, hashes.SHA256())
        encryption = (serialization.BestAvailableEncryption(key_password.encode()) if key_password
                      else serialization.NoEncryption())
        key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                    encryption).decode()
        chain = cert.public_bytes(serialization.Encoding.PEM).decode() + self.ca_pem
        key_path, cert_path = self.directory / f"{label}.key", self.directory / f"{label}.crt"
        keystore_path = self.directory / f"{label}.keystore.pem"
        key_path.write_text(key_pem)
        cert_path.write_text(chain)
        keystore_path.write_text(key_pem + chain)
        return Issued(key_pem, chain, key_path, cert_path, keystore_path)
