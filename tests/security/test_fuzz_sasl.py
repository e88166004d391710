"""Seeded mutations of the SASL exchange (SaslHandshake v0/v1, SaslAuthenticate, bare tokens,
PLAIN and SCRAM messages) sent before authentication: every connection ends answered or closed,
never with an unexpected error in the broker, and a correct login works throughout.
``WEIR_FUZZ_SEED=n`` replays a run."""

from __future__ import annotations

import base64
import os
import random
import socket
import struct

from weir.protocol.api_keys import ApiKey
from weir.protocol.connection import ClientConnection
from weir.protocol.messages import sasl_authenticate, sasl_handshake

from tests.security.brokers import ConfiguredBroker, listeners_setting
from tests.security.sasl_setup import sasl_settings
from tests.security.sasl_wire import SaslWire, plain_token

CONNECTIONS = 300


def _tokens(rng: random.Random, mechanism: str) -> list[bytes]:
    if mechanism == "PLAIN":
        good = [plain_token(rng.choice(["admin", "alice", "", "x" * 300]), rng.choice(["admin-secret", "", "p"]))]
    else:
        nonce = base64.b64encode(rng.randbytes(12)).decode()
        good = [f"n,,n={rng.choice(['alice', 'a=2Cb', 'a=3', ''])},r={nonce}".encode(),
                f"c=biws,r={nonce}x,p={base64.b64encode(rng.randbytes(32)).decode()}".encode()]
    return [_mutate(rng, token) for token in good]


def _mutate(rng: random.Random, data: bytes) -> bytes:
    data = bytearray(data)
    for _ in range(rng.randint(0, 3)):
        choice = rng.randrange(5)
        if choice == 0 and data:
            data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
        elif choice == 1 and data:
            del data[rng.randrange(len(data)):]
        elif choice == 2:
            data += rng.randbytes(rng.randint(1, 40))
        elif choice == 3 and data:
            data[rng.randrange(len(data))] = rng.choice(b",=\0\xff\x80n")
        else:
            data = bytearray(rng.randbytes(rng.randint(0, 60)))
    return bytes(data)


def _frame(rng: random.Random, payload: bytes) -> bytes:
    if rng.random() < 0.1:  # corrupt the frame itself: size or header bytes
        payload = _mutate(rng, payload)
    return struct.pack(">i", len(payload)) + payload


def _one_connection(rng: random.Random, port: int) -> None:
    codec = ClientConnection(rng.choice(["fuzz", ""]))
    mechanism = rng.choice(["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "GSSAPI", ""])
    version = rng.choice([0, 1, 1, 1])
    frames = [codec.send_request(ApiKey.SASL_HANDSHAKE, version, sasl_handshake.REQUEST(mechanism=mechanism))[4:]]
    for token in _tokens(rng, mechanism if mechanism in ("PLAIN",) else "SCRAM"):
        if version == 0:
            frames.append(token)
        else:
            frames.append(codec.send_request(ApiKey.SASL_AUTHENTICATE, rng.choice([0, 1, 2]),
                                             sasl_authenticate.REQUEST(auth_bytes=token))[4:])
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        try:
            for payload in frames:
                sock.sendall(_frame(rng, payload))
            sock.shutdown(socket.SHUT_WR)
            while sock.recv(65536):
                pass
        except OSError:  # the broker closed first: what it should do with much of this
            pass


def test_mutated_sasl_exchanges_end_answered_or_closed(tmp_path):
    seed = int(os.environ.get("WEIR_FUZZ_SEED", random.randrange(1 << 30)))
    rng = random.Random(seed)
    settings, ports = listeners_setting({"SASL_PLAINTEXT": "SASL_PLAINTEXT"})
    settings.update({**sasl_settings(["SASL_PLAINTEXT"]), "connections.max.idle.ms": "5000"})
    broker = ConfiguredBroker(tmp_path, settings, ports).start()
    try:
        for number in range(CONNECTIONS):
            _one_connection(rng, ports["SASL_PLAINTEXT"])
            if number % 50 == 49:
                wire = SaslWire(broker.bootstrap_for("SASL_PLAINTEXT"))
                assert wire.handshake("PLAIN").error_code == 0, f"seed {seed}"
                assert wire.authenticate(plain_token("admin", "admin-secret")).error_code == 0, f"seed {seed}"
                wire.close()
        assert broker.alive(), f"seed {seed}"
        unexpected = [line for line in broker.lines if "unexpected error" in line or "Traceback" in line]
        assert not unexpected, f"seed {seed}: {''.join(broker.lines[-40:])}"
    finally:
        broker.stop()
