"""A connection's authentication state: its ``Session`` and, while one runs, the SASL exchange.

A TLS listener's handshake is done before the connection is made (listener.py) and a
client certificate names the principal; on a SASL listener the ``Authenticator``
answers every request until the exchange succeeds, with frames bounded by
``sasl.server.max.receive.size`` until then. Once the session has an expiry (KIP-368:
``connections.max.reauth.ms`` or the credential's lifetime), a SaslHandshake before it
begins a re-authentication and the first request after it closes the connection.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING

from weir.protocol.api_keys import ApiKey
from weir.protocol.connection import RawRequest, ServerConnection

from .authenticator import Authenticator
from .principal import subject_dn
from .session import Session

if TYPE_CHECKING:
    from .authenticator import Dispatch
    from .listener_security import ListenerSecurity

log = logging.getLogger("weir.broker.connection")


class ConnectionAuth:
    """One owner for a connection's session and SASL exchange (broker/connection.py holds one)."""

    def __init__(self, security: ListenerSecurity, client_host: str, peer: str, codec: ServerConnection,
                 dispatch: Dispatch, now_ms: Callable[[], int]) -> None:
        self._security = security
        self._peer = peer
        self._codec = codec
        self._dispatch = dispatch
        self._now_ms = now_ms
        self._max_frame_size = codec.max_frame_size
        self.session = Session(security.spec, client_host, peer=peer)
        self.authenticator: Authenticator | None = None  # SASL listeners, while an exchange runs

    def start(self, transport: asyncio.Transport) -> bool:
        """The new connection's principal (a TLS client certificate) or its SASL exchange; False to close."""
        security, session = self._security, self.session
        if security.spec.protocol == "SSL":
            ssl_object = transport.get_extra_info("ssl_object")
            cert = ssl_object.getpeercert() if ssl_object is not None else None
            if cert:
                assert security.principal_mapper is not None  # built for every TLS listener
                try:
                    session.principal = "User:" + security.principal_mapper.name(subject_dn(cert))
                except PermissionError as exc:  # no mapping rule applies: Kafka fails the authentication
                    log.info("Failed authentication with %s (%s)", self._peer, exc)
                    return False
        if security.sasl is None:
            session.authenticated = True
            return True
        self._codec.max_frame_size = min(self._codec.max_frame_size, security.sasl.max_receive_size)
        self.authenticator = Authenticator(security.sasl, session, self._codec, self._dispatch, self._peer,
                                           self._now_ms)
        return True

    async def authenticate(self, request: RawRequest, transport: asyncio.Transport,
                           queue: deque[RawRequest]) -> bool:
        """Hand a request of a connection (re-)authenticating to its authenticator; False once closed."""
        authenticator = self.authenticator
        assert authenticator is not None  # the caller checked
        response, close_reason = await authenticator.handle(request)
        if response is not None and not transport.is_closing():
            transport.write(response)
        if close_reason is not None:
            log.debug("closing connection from %s: %s", self._peer, close_reason)
            transport.close()
            return False
        if authenticator.done:
            self.authenticator = None
            self._codec.max_frame_size = self._max_frame_size
            _reparse_bare_frames(queue)
        return True

    def check_session(self, request: RawRequest, transport: asyncio.Transport) -> bool:
        """KIP-368 on an authenticated SASL connection: False (closed) once its session has expired;
        a SaslHandshake before then begins a re-authentication."""
        session = self.session
        if session.expired(self._now_ms()):
            log.info("closing connection from %s: its SASL session expired (connections.max.reauth.ms or the "
                     "credential's lifetime) and it did not re-authenticate", self._peer)
            transport.close()
            return False
        if request.header is not None and request.header.api_key == ApiKey.SASL_HANDSHAKE \
                and session.can_reauthenticate:
            assert self._security.sasl is not None  # only a SASL exchange sets an expiry
            self.authenticator = Authenticator(self._security.sasl, session, self._codec, self._dispatch,
                                               self._peer, self._now_ms, reauthenticating=True)
        return True


def _reparse_bare_frames(queue: deque[RawRequest]) -> None:
    """Frames a client sent right behind its last bare SASL token (SaslHandshake v0) were read as
    tokens too; the exchange is over, so they are requests, as Kafka reads them."""
    for position, request in enumerate(queue):
        if request.header is None:
            queue[position] = ServerConnection.parse_request(request.body)
