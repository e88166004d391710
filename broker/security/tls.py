"""The SSL context of a TLS listener (SSL, SASL_SSL) from Kafka's PEM settings.

Key store: ``ssl.keystore.location`` (a PEM file holding the private key and the certificate
chain) or ``ssl.keystore.key`` + ``ssl.keystore.certificate.chain`` given inline;
``ssl.key.password`` decrypts an encrypted key. Trust store (the CAs client certificates must
chain to): ``ssl.truststore.location`` or ``ssl.truststore.certificates``. Each may be set per
listener as ``listener.name.<l>.<setting>``.

``ssl.client.auth``: ``required`` refuses a client without a valid certificate, ``requested``
asks for one and verifies it when given (a certificate the trust store does not vouch for fails
the handshake, as JSSE fails it under Kafka 4.4.0's setWantClientAuth; no certificate goes on as
User:ANONYMOUS: tests/security/test_differential_client_auth.py), ``none`` does not ask. ``ssl.enabled.protocols``
bounds the TLS versions, ``ssl.cipher.suites`` the TLS 1.2 suites (OpenSSL or IANA names; TLS
1.3 suites are OpenSSL's fixed set, as in Python's ssl). Deviation: Python's ssl reads PEM
only, so JKS and PKCS12 stores are a start-up error.
"""

from __future__ import annotations

import os
import ssl
import tempfile

from ..config import ConfigError

_VERSIONS = {"TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3,
             "TLSv1.1": ssl.TLSVersion.TLSv1_1, "TLSv1": ssl.TLSVersion.TLSv1}
_CLIENT_AUTH = {"none": ssl.CERT_NONE, "requested": ssl.CERT_OPTIONAL, "required": ssl.CERT_REQUIRED}


def _iana_to_openssl(name: str) -> str:
    """``TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256`` -> ``ECDHE-RSA-AES128-GCM-SHA256``; OpenSSL names pass."""
    if not name.startswith("TLS_") or "_WITH_" not in name:
        return name
    kx, cipher = name[4:].split("_WITH_", 1)
    cipher = cipher.replace("AES_128_", "AES128-").replace("AES_256_", "AES256-").replace("_", "-")
    cipher = cipher.replace("CHACHA20-POLY1305-SHA256", "CHACHA20-POLY1305")
    return cipher if kx == "RSA" else f"{kx.replace('_', '-')}-{cipher}"


def _load_chain(context: ssl.SSLContext, key_pem: str, chain_pem: str, password: str | None) -> None:
    # load_cert_chain takes file names: the inline PEM goes through a private temporary file.
    with tempfile.NamedTemporaryFile("w", suffix=".pem", delete=False) as handle:
        os.fchmod(handle.fileno(), 0o600)
        handle.write(chain_pem.strip() + "\n" + key_pem.strip() + "\n")
        path = handle.name
    try:
        context.load_cert_chain(path, password=password)
    finally:
        os.unlink(path)


def _client_auth(config, listener: str, protocol: str) -> str:
    """As KIP-684: on SASL_SSL listeners only ``listener.name.<l>.ssl.client.auth`` asks for certificates
    (SASL authenticates the client); the broker-wide setting applies to SSL listeners."""
    if protocol == "SASL_SSL":
        return config.listener_override(listener, "ssl.client.auth") or "none"
    return config.for_listener(listener, "ssl.client.auth")


def server_context(config, listener: str, protocol: str = "SSL") -> ssl.SSLContext:
    """The listener's SSLContext; ConfigError naming the setting at fault (never a secret)."""
    def get(name):
        return config.for_listener(listener, name)

    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    versions = [_VERSIONS[v] for v in get("ssl.enabled.protocols") if v in _VERSIONS]
    unknown = [v for v in get("ssl.enabled.protocols") if v not in _VERSIONS]
    if unknown or not versions:
        raise ConfigError(f"ssl.enabled.protocols: unknown or no TLS version ({', '.join(unknown) or 'empty'})")
    context.minimum_version, context.maximum_version = min(versions), max(versions)
    # TLS 1.3 suites (TLS_AES_128_GCM_SHA256, ...) cannot be chosen with Python's ssl: OpenSSL's set
    # stays on, and only the TLS 1.2 names configure anything.
    tls12_suites = [_iana_to_openssl(name) for name in get("ssl.cipher.suites")
                    if not (name.startswith("TLS_") and "_WITH_" not in name)]
    if tls12_suites:
        try:
            context.set_ciphers(":".join(tls12_suites))
        except ssl.SSLError as exc:
            raise ConfigError(f"ssl.cipher.suites: no usable cipher suite ({exc.reason})") from None
    password = get("ssl.key.password") or get("ssl.keystore.password") or None
    try:
        if get("ssl.keystore.location"):
            context.load_cert_chain(get("ssl.keystore.location"), password=password)
        elif get("ssl.keystore.key") and get("ssl.keystore.certificate.chain"):
            _load_chain(context, get("ssl.keystore.key"), get("ssl.keystore.certificate.chain"), password)
        else:
            raise ConfigError(f"listener {listener}: a TLS listener needs ssl.keystore.location, or "
                              "ssl.keystore.key and ssl.keystore.certificate.chain")
    except (ssl.SSLError, OSError) as exc:
        raise ConfigError(f"listener {listener}: cannot load the key store "
                          f"({getattr(exc, 'reason', None) or exc.strerror or type(exc).__name__})") from None
    client_auth = _client_auth(config, listener, protocol)
    context.verify_mode = _CLIENT_AUTH[client_auth]
    try:
        if get("ssl.truststore.location"):
            context.load_verify_locations(cafile=get("ssl.truststore.location"))
        elif get("ssl.truststore.certificates"):
            context.load_verify_locations(cadata=get("ssl.truststore.certificates"))
        elif client_auth != "none":
            context.load_default_certs(ssl.Purpose.CLIENT_AUTH)
    except (ssl.SSLError, OSError) as exc:
        raise ConfigError(f"listener {listener}: cannot load the trust store ({exc})") from None
    return context
