"""Bad input before authentication costs bounded memory and ends in a closed connection:
garbage instead of a TLS handshake, a frame over sasl.server.max.receive.size, a client that
opens a TLS connection and never speaks; the broker serves others throughout."""

from __future__ import annotations

import os
import socket
import struct
import time

from confluent_kafka.admin import AdminClient

from weir.protocol.api_keys import ApiKey
from weir.protocol.messages import metadata

from tests.security.brokers import ConfiguredBroker, listeners_setting
from weir.testing.certs import Pki
from tests.security.sasl_setup import sasl_settings
from tests.security.sasl_wire import SaslWire


def _closed(sock: socket.socket) -> bool:
    try:
        while True:
            if not sock.recv(65536):
                return True
    except ConnectionResetError:
        return True


def test_garbage_and_oversized_frames_before_authentication_close_only_that_connection(tmp_path):
    pki = Pki(tmp_path / "pki")
    server = pki.issue("broker", [("CN", "localhost")], server=True)
    settings, ports = listeners_setting({"PLAINTEXT": "PLAINTEXT", "SSL": "SSL", "SASL_PLAINTEXT": "SASL_PLAINTEXT"})
    settings.update({**sasl_settings(["SASL_PLAINTEXT"]), "ssl.keystore.location": str(server.keystore_path),
                     "sasl.server.max.receive.size": "4096", "max.connections": "3"})
    broker = ConfiguredBroker(tmp_path, settings, ports).start()
    try:
        # garbage where a TLS ClientHello belongs
        with socket.create_connection(("127.0.0.1", ports["SSL"]), timeout=10) as sock:
            sock.sendall(os.urandom(2048))
            assert _closed(sock)
        assert broker.wait_for_log("SSL handshake failed")

        # silent clients hold handshake slots (at most max.connections = 3 here); past that new ones
        # are refused, and once they leave a well-behaved client is served
        silent = [socket.create_connection(("127.0.0.1", ports["SSL"]), timeout=10) for _ in range(4)]
        assert broker.wait_for_log("TLS handshakes under way")
        for sock in silent:
            sock.close()
        AdminClient({"bootstrap.servers": broker.bootstrap_for("SSL"), "security.protocol": "SSL",
                     "ssl.ca.location": str(pki.ca_path)}).list_topics(timeout=10)

        # before authentication a frame may be at most sasl.server.max.receive.size bytes
        with socket.create_connection(("127.0.0.1", ports["SASL_PLAINTEXT"]), timeout=10) as sock:
            sock.sendall(struct.pack(">i", 1_000_000) + bytes(4096))
            assert _closed(sock)
        # ... the same frame size is fine once authenticated (socket.request.max.bytes applies again)
        wire = SaslWire(broker.bootstrap_for("SASL_PLAINTEXT"))
        assert wire.handshake("PLAIN").error_code == 0
        assert wire.authenticate(b"\0admin\0admin-secret").error_code == 0
        names = [f"no-such-topic-{i:04d}-" + "x" * 20 for i in range(200)]  # a frame of ~8 KB
        answer = wire.call(ApiKey.METADATA, 12, metadata.REQUEST(
            topics=[metadata.RequestTopic(name=name) for name in names], allow_auto_topic_creation=False))
        assert [t.name for t in answer.topics] == names
        wire.close()

        began = time.monotonic()
        AdminClient({"bootstrap.servers": broker.bootstrap_for("PLAINTEXT")}).list_topics(timeout=10)
        assert time.monotonic() - began < 10
        assert broker.alive()
    finally:
        broker.stop()


def test_a_client_that_never_finishes_its_sasl_handshake_is_closed_when_idle(tmp_path):
    """connections.max.idle.ms applies before authentication too (as in Kafka): a client that opens a
    SASL connection, asks for ApiVersions and stops there holds its slot only until it is idle that long."""
    settings, ports = listeners_setting({"PLAINTEXT": "PLAINTEXT", "SASL_PLAINTEXT": "SASL_PLAINTEXT"})
    settings.update({**sasl_settings(["SASL_PLAINTEXT"]), "connections.max.idle.ms": "1000"})
    broker = ConfiguredBroker(tmp_path, settings, ports).start()
    try:
        stalled = SaslWire(broker.bootstrap_for("SASL_PLAINTEXT"))
        assert stalled.api_versions().error_code == 0
        began = time.monotonic()
        assert _closed(stalled.sock)  # blocks until the broker closes it (the socket's timeout is 10 s)
        assert 0.9 < time.monotonic() - began < 8
        stalled.close()
    finally:
        broker.stop()
