"""SASL/PLAIN (RFC 4616), checked against the listener's JAAS ``user_<name>`` entries as Kafka's
``PlainServerCallbackHandler`` does. One message: ``[authzid] NUL user NUL password``."""

from __future__ import annotations

import hmac


class PlainError(Exception):
    """Failed; the message is Kafka's and safe to send to the client."""


class PlainServer:
    mechanism = "PLAIN"

    def __init__(self, users: dict[str, str]):
        self._users = users
        self.user: str | None = None
        self.complete = False

    def evaluate(self, token: bytes) -> bytes:
        parts = token.decode("utf-8", errors="replace").split("\0")
        if len(parts) != 3:
            raise PlainError("Invalid SASL/PLAIN response: expected 3 tokens, got " + str(len(parts)))
        authzid, user, password = parts
        if not user:
            raise PlainError("Authentication failed: username not specified")
        if not password:
            raise PlainError("Authentication failed: password not specified")
        expected = self._users.get(user)
        # compared even for an unknown user, so the time taken does not tell whether it exists
        matches = hmac.compare_digest((expected or "\0" + password).encode(), password.encode())
        if expected is None or not matches:
            raise PlainError("Authentication failed: Invalid username or password")
        if authzid and authzid != user:
            raise PlainError("Authentication failed: Client requested an authorization id that is "
                             "different from username")
        self.user = user
        self.complete = True
        return b""
