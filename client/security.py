"""TLS and SASL for the client's connections, configured with aiokafka's option names.

    Producer(bootstrap, security_protocol="SASL_SSL", ssl_context=context,
             sasl_mechanism="SCRAM-SHA-512", sasl_plain_username="alice", sasl_plain_password="...")

``security_protocol`` is one of Kafka's four (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL). TLS uses
``ssl_context`` (``ssl.create_default_context()`` when none is given: the system's CAs, host names
checked). SASL runs after ApiVersions on every new connection, as the Java client does:
SaslHandshake v1, then SaslAuthenticate carrying the tokens of PLAIN, SCRAM-SHA-256/512 (through
the ``scramp`` library; with ``sasl_scram_token_auth=True`` as a delegation token, whose id and
HMAC are the user name and password) or OAUTHBEARER (a token from ``sasl_oauth_token_provider``, an object with
an async ``token()`` and optionally ``extensions()``, as aiokafka's AbstractTokenProvider).

Deviation: sessions are not re-authenticated (KIP-368); against a broker whose sessions expire the
connection is closed at expiry and the next request opens a new one.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Protocol, TypedDict

from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import Errors

from .errors import raise_for

if TYPE_CHECKING:
    from .connection import Connection

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")


class TokenProvider(Protocol):
    """What ``sasl_oauth_token_provider`` is (aiokafka's AbstractTokenProvider): an async ``token()``, and
    optionally ``extensions()``, a dict of SASL extensions sent with the token."""

    async def token(self) -> str: ...


#: One SASL exchange: send a token, get the broker's answer.
Exchange = Callable[[bytes], Awaitable[bytes]]


class SecurityOptions(TypedDict, total=False):
    """The security keywords Producer, Consumer and Admin take (aiokafka's names)."""

    security_protocol: str
    ssl_context: ssl.SSLContext | None
    sasl_mechanism: str
    sasl_plain_username: str | None
    sasl_plain_password: str | None
    sasl_oauth_token_provider: TokenProvider | None
    sasl_scram_token_auth: bool


@dataclass(frozen=True)
class ClientSecurity:
    protocol: str = "PLAINTEXT"
    ssl_context: ssl.SSLContext | None = None
    mechanism: str = "PLAIN"
    username: str | None = None
    password: str | None = None
    token_provider: TokenProvider | None = None
    scram_token_auth: bool = False  # SCRAM as a delegation token (the tokenauth extension)

    @classmethod
    def from_options(cls, security_protocol: str = "PLAINTEXT", ssl_context: ssl.SSLContext | None = None,
                     sasl_mechanism: str = "PLAIN", sasl_plain_username: str | None = None,
                     sasl_plain_password: str | None = None,
                     sasl_oauth_token_provider: TokenProvider | None = None,
                     sasl_scram_token_auth: bool = False) -> ClientSecurity:
        protocol = security_protocol.upper()
        if protocol not in PROTOCOLS:
            raise ValueError(f"security_protocol must be one of {', '.join(PROTOCOLS)}, not {security_protocol!r}")
        if protocol.startswith("SASL_"):
            if sasl_mechanism not in MECHANISMS:
                raise ValueError(f"sasl_mechanism must be one of {', '.join(MECHANISMS)}, not {sasl_mechanism!r}")
            if sasl_mechanism == "OAUTHBEARER":
                if sasl_oauth_token_provider is None:
                    raise ValueError("sasl_mechanism OAUTHBEARER needs sasl_oauth_token_provider")
            elif sasl_plain_username is None or sasl_plain_password is None:
                raise ValueError(f"sasl_mechanism {sasl_mechanism} needs sasl_plain_username and sasl_plain_password")
            if sasl_scram_token_auth and not sasl_mechanism.startswith("SCRAM-"):
                raise ValueError("sasl_scram_token_auth (a delegation token) needs SCRAM-SHA-256 or SCRAM-SHA-512")
        if protocol in ("SSL", "SASL_SSL") and ssl_context is None:
            ssl_context = ssl.create_default_context()
        return cls(protocol, ssl_context, sasl_mechanism, sasl_plain_username, sasl_plain_password,
                   sasl_oauth_token_provider, sasl_scram_token_auth)

    @property
    def tls(self) -> ssl.SSLContext | None:
        return self.ssl_context if self.protocol in ("SSL", "SASL_SSL") else None

    @property
    def uses_sasl(self) -> bool:
        return self.protocol.startswith("SASL_")


PLAINTEXT = ClientSecurity()


async def authenticate(connection: Connection, security: ClientSecurity) -> None:
    """The SASL exchange on a new connection (after ApiVersions); raises the broker's error on failure."""
    # Imported here, not at the top: most connections never authenticate, and ``import weir.client``
    # stays quick (tests/client/test_import_cost.py).
    from weir.protocol.messages import sasl_authenticate, sasl_handshake
    handshake = await connection.request(ApiKey.SASL_HANDSHAKE, connection.version_for(ApiKey.SASL_HANDSHAKE, 1),
                                         sasl_handshake.REQUEST(mechanism=security.mechanism))
    if handshake.error_code != Errors.NONE:
        raise_for(handshake.error_code, f"SASL mechanism {security.mechanism}: the broker enables "
                                        f"{', '.join(handshake.mechanisms or ())}")
    version = connection.version_for(ApiKey.SASL_AUTHENTICATE, 2)

    async def exchange(token: bytes) -> bytes:
        answer = await connection.request(ApiKey.SASL_AUTHENTICATE, version,
                                          sasl_authenticate.REQUEST(auth_bytes=token))
        if answer.error_code != Errors.NONE:
            raise_for(answer.error_code, answer.error_message or "SASL authentication failed")
        return bytes(answer.auth_bytes)

    if security.mechanism == "PLAIN":
        await exchange(f"\0{security.username}\0{security.password}".encode())
    elif security.mechanism == "OAUTHBEARER":
        assert security.token_provider is not None  # from_options requires one for OAUTHBEARER
        await _oauthbearer(exchange, security.token_provider)
    else:
        await _scram(exchange, security)


async def _scram(exchange: Exchange, security: ClientSecurity) -> None:
    from scramp import ScramClient, ScramException  # with asn1crypto, ~20 ms to import: only when used
    client = ScramClient([security.mechanism], security.username, security.password)
    first = client.get_client_first()
    if security.scram_token_auth:  # a delegation token: the id as user, the HMAC as password (KIP-48)
        first += ",tokenauth=true"
        client.client_first_bare += ",tokenauth=true"  # scramp signs the bare message it keeps
    try:
        client.set_server_first((await exchange(first.encode())).decode())
        client.set_server_final((await exchange(client.get_client_final().encode())).decode())
    except ScramException as exc:  # the broker's proof did not check out: not the broker we trust
        raise_for(Errors.SASL_AUTHENTICATION_FAILED, f"SCRAM: {exc}")


async def _oauthbearer(exchange: Exchange, provider: TokenProvider) -> None:
    token = await provider.token()
    extensions = provider.extensions() if hasattr(provider, "extensions") else {}
    pairs = "".join(f"{key}={value}\x01" for key, value in (extensions or {}).items())
    answer = await exchange(f"n,,\x01auth=Bearer {token}\x01{pairs}\x01".encode())
    if answer:  # RFC 7628: a JSON error; the client's ^A ends the exchange, and the broker fails it
        await exchange(b"\x01")
        raise_for(Errors.SASL_AUTHENTICATION_FAILED, answer.decode(errors="replace"))
