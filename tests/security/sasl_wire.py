"""A bare socket speaking the SASL pre-authentication protocol, to see exactly what a broker answers
and when it closes (the same calls run against Weir and Kafka)."""

from __future__ import annotations

import socket
import struct

from weir.protocol.api_keys import ApiKey
from weir.protocol.connection import ClientConnection
from weir.protocol.messages import api_versions, metadata, sasl_authenticate, sasl_handshake

CLOSED = "closed"


class SaslWire:
    def __init__(self, bootstrap: str, timeout: float = 10.0):
        host, port = bootstrap.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        self.codec = ClientConnection("sasl-wire")

    def close(self) -> None:
        self.sock.close()

    def call(self, api_key: int, version: int, body):
        """The decoded answer, or CLOSED when the broker closes the connection instead."""
        try:
            self.sock.sendall(self.codec.send_request(api_key, version, body))
            while True:
                data = self.sock.recv(65536)
                if not data:
                    return CLOSED
                answers = self.codec.receive_data(data)
                if answers:
                    return answers[0]
        except ConnectionResetError:
            return CLOSED

    def closed(self) -> bool:
        """True once the broker has closed the connection (waits up to the socket timeout)."""
        try:
            return self.sock.recv(1) == b""
        except ConnectionResetError:
            return True

    def api_versions(self):
        return self.call(ApiKey.API_VERSIONS, 3, api_versions.REQUEST(client_software_name="w",
                                                                      client_software_version="1"))

    def metadata(self):
        return self.call(ApiKey.METADATA, 12, metadata.REQUEST(topics=[]))

    def handshake(self, mechanism: str, version: int = 1):
        return self.call(ApiKey.SASL_HANDSHAKE, version, sasl_handshake.REQUEST(mechanism=mechanism))

    def authenticate(self, token: bytes, version: int = 2):
        return self.call(ApiKey.SASL_AUTHENTICATE, version, sasl_authenticate.REQUEST(auth_bytes=token))

    def raw_token(self, token: bytes) -> bytes | str:
        """After SaslHandshake v0: a bare size-prefixed token, and the bare answer (or CLOSED)."""
        self.sock.sendall(struct.pack(">i", len(token)) + token)
        return self._read_bare()

    def raw_token_then_metadata(self, token: bytes):
        """After SaslHandshake v0: the last bare token and, in the same write, a Metadata request behind
        it; (the bare answer, the Metadata answer), either CLOSED when the broker closes instead."""
        request = self.codec.send_request(ApiKey.METADATA, 12, metadata.REQUEST(topics=[]))
        self.sock.sendall(struct.pack(">i", len(token)) + token + request)
        answer = self._read_bare()
        if answer == CLOSED:
            return CLOSED, CLOSED
        header = self._read(4)
        body = self._read(struct.unpack(">i", header)[0]) if header is not None else None
        if body is None:
            return answer, CLOSED
        return answer, self.codec.receive_data(header + body)[0]

    def _read_bare(self) -> bytes | str:
        header = self._read(4)
        if header is None:
            return CLOSED
        body = self._read(struct.unpack(">i", header)[0])
        return CLOSED if body is None else body

    def _read(self, size: int) -> bytes | None:
        data = b""
        while len(data) < size:
            try:
                chunk = self.sock.recv(size - len(data))
            except ConnectionResetError:
                return None
            if not chunk:
                return None
            data += chunk
        return data


def plain_token(user: str, password: str) -> bytes:
    return f"\0{user}\0{password}".encode()
