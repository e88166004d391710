"""``ssl.client.auth`` on Weir and on Apache Kafka 4.4.0, configured alike: which TLS handshakes
each accepts, per listener setting (``none``, ``requested``, ``required``) and client (no
certificate, one the broker's trust store vouches for, one from a CA it does not know), on
TLS 1.2 and 1.3; an accepted connection must then answer ApiVersions.

Measured on Kafka 4.4.0: ``requested`` refuses an untrusted certificate exactly as ``required``
does. Its SSLEngine only *wants* client authentication, but JSSE checks a certificate a client
does send against the trust store and ends the handshake with a certificate_unknown alert when it
does not chain (the client sees SSLV3_ALERT_CERTIFICATE_UNKNOWN; its log: "Failed authentication
... (SSL handshake failed)"). Only a client that sends no certificate goes on as User:ANONYMOUS.
Weir (OpenSSL's CERT_OPTIONAL) answers the same. Deviation, not compared: Weir closes without
sending the alert (asyncio's SSL transport drops OpenSSL's pending alert when the handshake
fails), so a TLS 1.3 client sees an end of stream at its first read where Kafka's sees the alert;
clients report both as a failed connection.
"""

from __future__ import annotations

import socket
import ssl
import struct

import pytest

from reference.kafka import KafkaProcess
from tests.security.brokers import ConfiguredBroker, listeners_setting
from weir.testing.certs import Pki

#: listener name -> its ssl.client.auth
LISTENERS = {"OPEN": "none", "ASKS": "requested", "NEEDS": "required"}
CLIENTS = ("no certificate", "trusted", "untrusted")
TLS_VERSIONS = (ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3)


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    pki = Pki(tmp_path_factory.mktemp("pki"))
    pki.broker = pki.issue("broker", [("CN", "localhost")], server=True)
    pki.clients = {"no certificate": None, "trusted": pki.issue("alice", [("CN", "alice")]),
                   "untrusted": Pki(pki.directory / "stranger").issue("mallory", [("CN", "mallory")])}
    return pki


def _tls_settings(pki) -> dict[str, str]:
    settings = {"ssl.keystore.type": "PEM", "ssl.keystore.location": str(pki.broker.keystore_path),
                "ssl.truststore.type": "PEM", "ssl.truststore.location": str(pki.ca_path)}
    settings.update({f"listener.name.{name.lower()}.ssl.client.auth": mode for name, mode in LISTENERS.items()})
    return settings


def _api_versions_answered(sock: ssl.SSLSocket) -> bool:
    body = struct.pack(">hhih", 18, 0, 7, 4) + b"tool"  # ApiVersions v0, correlation id 7, client id "tool"
    sock.sendall(struct.pack(">i", len(body)) + body)
    header = b""
    while len(header) < 8:
        chunk = sock.recv(8 - len(header))
        if not chunk:
            return False
        header += chunk
    return struct.unpack(">i", header[4:])[0] == 7


def _outcome(bootstrap: str, pki, client: str, version: ssl.TLSVersion) -> str:
    context = ssl.create_default_context(cafile=str(pki.ca_path))
    context.minimum_version = context.maximum_version = version
    issued = pki.clients[client]
    if issued is not None:
        context.load_cert_chain(str(issued.cert_path), str(issued.key_path))
    host, port = bootstrap.rsplit(":", 1)
    try:
        with socket.create_connection((host, int(port)), timeout=30) as raw, \
                context.wrap_socket(raw, server_hostname="localhost") as sock:
            # TLS 1.3 clients finish their side before the server has read their certificate: the
            # refusal arrives with the first read (an alert from Kafka; from Weir an end of stream)
            return "served" if _api_versions_answered(sock) else "refused"
    except (ssl.SSLError, ConnectionError):
        return "refused"


def _outcomes(broker, pki) -> dict[tuple[str, str, str], str]:
    return {(listener, client, version.name): _outcome(broker.bootstrap_for(listener), pki, client, version)
            for listener in LISTENERS for client in CLIENTS for version in TLS_VERSIONS}


@pytest.fixture(scope="module")
def outcomes(pki, tmp_path_factory) -> dict[str, dict]:
    seen = {}
    settings, ports = listeners_setting({"PLAINTEXT": "PLAINTEXT", **{name: "SSL" for name in LISTENERS}})
    weir = ConfiguredBroker(tmp_path_factory.mktemp("weir-client-auth"), {**settings, **_tls_settings(pki)},
                            ports).start()
    try:
        seen["weir"] = _outcomes(weir, pki)
    finally:
        weir.stop()
    kafka = KafkaProcess(tmp_path_factory.mktemp("kafka-client-auth"),
                         extra_listeners={name: "SSL" for name in LISTENERS}, overrides=_tls_settings(pki)).start()
    try:
        seen["kafka"] = _outcomes(kafka, pki)
    finally:
        kafka.stop()
    return seen


def test_client_auth_outcomes_match_kafka(outcomes):
    weir, kafka = outcomes["weir"], outcomes["kafka"]
    assert {key: (weir[key], kafka[key]) for key in kafka if weir[key] != kafka[key]} == {}


def test_client_auth_outcomes_are_the_settings(outcomes):
    """What both must show, so that agreeing on refusing (or serving) everything would not pass."""
    by_listener_and_client = {(listener, client): {outcome for (name, who, _), outcome in outcomes["weir"].items()
                                                   if (name, who) == (listener, client)}
                              for listener in LISTENERS for client in CLIENTS}
    assert by_listener_and_client == {
        ("OPEN", "no certificate"): {"served"}, ("OPEN", "trusted"): {"served"}, ("OPEN", "untrusted"): {"served"},
        ("ASKS", "no certificate"): {"served"}, ("ASKS", "trusted"): {"served"}, ("ASKS", "untrusted"): {"refused"},
        ("NEEDS", "no certificate"): {"refused"}, ("NEEDS", "trusted"): {"served"},
        ("NEEDS", "untrusted"): {"refused"}}
