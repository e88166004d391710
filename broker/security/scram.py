"""SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677), the server's side, as Kafka serves it.

    client-first  n,,n=<user>,r=<client nonce>[,<extension>...]
    server-first  r=<client nonce><server nonce>,s=<salt>,i=<iterations>
    client-final  c=biws,r=<nonce>,p=<proof>
    server-final  v=<server signature>

The broker keeps only the salt, the iteration count, StoredKey = H(HMAC(SaltedPassword,
"Client Key")) and ServerKey = HMAC(SaltedPassword, "Server Key"): never the password.
Channel binding is refused (``p=``), as Kafka does. Extensions after the nonce are read as
Kafka's ScramExtensions reads them: ``tokenauth=true`` makes the user name a delegation token id
whose credential comes from the token store (broker/security/delegation_tokens.py), and the
principal the token's owner; other extensions are ignored.

Deviation: for a user without credentials (or an unknown token id with ``tokenauth``) Kafka
fails at the client-first message; Weir answers with a made-up salt (derived from the name and
a per-process secret, so a repeated attempt sees the same one) and fails at the client-final
message, as RFC 5802 section 9 suggests, so an attacker cannot tell a missing user from a
wrong password. Both end in SASL_AUTHENTICATION_FAILED with the same message.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import secrets
from dataclasses import dataclass

MECHANISM_TYPES = {"SCRAM-SHA-256": 1, "SCRAM-SHA-512": 2}  # the int8 of the SCRAM credential APIs
MECHANISM_NAMES = {code: name for name, code in MECHANISM_TYPES.items()}
HASHES = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}
MIN_ITERATIONS, MAX_ITERATIONS = 4096, 16384  # Kafka's ScramMechanism bounds, for both
_FAKE_SALT_SECRET = os.urandom(32)


class ScramError(Exception):
    """The exchange failed; the message is safe to send to the client (no secret, no user name)."""


@dataclass(frozen=True)
class ScramCredential:
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int


def _hmac(hash_name: str, key: bytes, data: bytes) -> bytes:
    return hmac.new(key, data, hash_name).digest()


def credential_from_salted_password(mechanism: str, salt: bytes, salted_password: bytes,
                                    iterations: int) -> ScramCredential:
    """What AlterUserScramCredentials turns a client's salted password into, as Kafka's controller does."""
    hash_name = HASHES[mechanism]
    client_key = _hmac(hash_name, salted_password, b"Client Key")
    return ScramCredential(salt, hashlib.new(hash_name, client_key).digest(),
                           _hmac(hash_name, salted_password, b"Server Key"), iterations)


def salted_password(mechanism: str, password: str, salt: bytes, iterations: int) -> bytes:
    return hashlib.pbkdf2_hmac(HASHES[mechanism], password.encode(), salt, iterations)


def _attributes(message: str) -> list[tuple[str, str]]:
    pairs = []
    for part in message.split(","):
        if len(part) < 2 or part[1] != "=":
            raise ScramError("Invalid SCRAM message")
        pairs.append((part[0], part[2:]))
    return pairs


def _sasl_name(text: str) -> str:
    if "=" in text.replace("=2C", "").replace("=3D", ""):
        raise ScramError("Invalid username")
    return text.replace("=2C", ",").replace("=3D", "=")


class ScramServer:
    """One exchange: ``evaluate(token)`` twice; ``user`` is set once it succeeded."""

    def __init__(self, mechanism: str, credentials, tokens=None):
        self.mechanism = mechanism
        self._hash = HASHES[mechanism]
        self._credentials = credentials  # ScramStore: get(user, mechanism) -> ScramCredential | None
        self._tokens = tokens  # DelegationTokens: credential(token id, mechanism) -> (credential, token) | None
        self._step = 0
        self.user: str | None = None
        self.token = None  # the delegation token that authenticated (its expiry ends the session)
        self.complete = False

    @property
    def token_authenticated(self) -> bool:
        return self.token is not None

    def evaluate(self, token: bytes) -> bytes:
        self._step += 1
        try:
            text = token.decode("utf-8")
        except UnicodeDecodeError:
            raise ScramError("Invalid SCRAM message") from None
        if self._step == 1:
            return self._client_first(text)
        if self._step == 2:
            return self._client_final(text)
        raise ScramError("Unexpected SCRAM message")

    def _client_first(self, text: str) -> bytes:
        parts = text.split(",", 2)
        if len(parts) != 3 or parts[0] not in ("n", "y"):
            raise ScramError("Invalid SCRAM client first message" if not text.startswith("p")
                             else "Channel binding is not supported")
        authzid = parts[1][2:] if parts[1].startswith("a=") else ""
        if parts[1] and not parts[1].startswith("a="):
            raise ScramError("Invalid SCRAM client first message")
        self._gs2_header = f"{parts[0]},{parts[1]},"
        self._client_first_bare = parts[2]
        items = parts[2].split(",")
        attributes = _attributes(",".join(items[:2]))
        if len(attributes) < 2 or attributes[0][0] != "n" or attributes[1][0] != "r" or not attributes[1][1]:
            raise ScramError("Invalid SCRAM client first message")
        extensions = dict(item.partition("=")[::2] for item in items[2:])  # names longer than one letter
        if "m" in extensions or any("=" not in item for item in items[2:]):
            raise ScramError("Invalid SCRAM client first message")  # mandatory extensions are not understood
        user = _sasl_name(attributes[0][1])
        if authzid and _sasl_name(authzid) != user:
            raise ScramError("Authentication failed: Client requested an authorization id that is "
                             "different from username")
        self._user = user
        credential: ScramCredential | None
        self._token = None
        if extensions.get("tokenauth", "").lower() == "true":  # Boolean.parseBoolean, as Kafka reads it
            found = self._tokens.credential(user, self.mechanism) if self._tokens is not None else None
            credential, self._token = found if found is not None else (None, None)
        else:
            credential = self._credentials.get(user, self.mechanism)
        self._unknown = credential is None
        if credential is None:  # answered like a wrong password (see the module docstring)
            salt = _hmac("sha256", _FAKE_SALT_SECRET, f"{self.mechanism}:{user}".encode())[:16]
            credential = ScramCredential(salt, b"", b"", MIN_ITERATIONS)
        self._credential = credential
        self._nonce = attributes[1][1] + secrets.token_urlsafe(24)
        self._server_first = (f"r={self._nonce},s={base64.b64encode(self._credential.salt).decode()},"
                              f"i={self._credential.iterations}")
        return self._server_first.encode()

    def _client_final(self, text: str) -> bytes:
        without_proof, sep, proof_text = text.rpartition(",p=")
        if not sep:
            raise ScramError("Invalid SCRAM client final message")
        attributes = dict(_attributes(without_proof))
        if attributes.get("r") != self._nonce:
            raise ScramError("Invalid client nonce in the final client message.")
        if attributes.get("c") != base64.b64encode(self._gs2_header.encode()).decode():
            raise ScramError("Invalid channel binding in the final client message.")
        try:
            proof = base64.b64decode(proof_text, validate=True)
        except ValueError:
            raise ScramError("Invalid SCRAM client final message") from None
        auth_message = f"{self._client_first_bare},{self._server_first},{without_proof}".encode()
        credential = self._credential
        signature = _hmac(self._hash, credential.stored_key, auth_message)
        if self._unknown or len(proof) != len(signature):
            raise ScramError("Invalid client credentials")
        client_key = bytes(a ^ b for a, b in zip(proof, signature, strict=False))
        if not hmac.compare_digest(hashlib.new(self._hash, client_key).digest(), credential.stored_key):
            raise ScramError("Invalid client credentials")
        # a token authenticates its owner (Kafka's principal builder makes User:<owner name>)
        self.user = self._user if self._token is None else self._token.owner.partition(":")[2]
        self.token = self._token
        self.complete = True
        server_signature = _hmac(self._hash, credential.server_key, auth_message)
        return b"v=" + base64.b64encode(server_signature)
