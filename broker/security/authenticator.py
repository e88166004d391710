"""The SASL exchange on a connection of a SASL listener, before any other request is served.

Kafka's ``SaslServerAuthenticator`` rules, which Weir follows:

* Before the handshake only ApiVersions and SaslHandshake are answered; any other request
  closes the connection without a response ("Unexpected Kafka request of type ... during
  SASL handshake").
* SaslHandshake names a mechanism: one not enabled on the listener is answered
  UNSUPPORTED_SASL_MECHANISM (with the enabled ones) and the connection closed.
* After SaslHandshake v1 the client sends SaslAuthenticate requests carrying the tokens.
  After v0 (deprecated, still served by Kafka 4) it sends the tokens as bare size-prefixed
  frames and gets bare frames back.
* A failed exchange is answered SASL_AUTHENTICATION_FAILED with a message that names no user
  and no password (bare tokens: no answer), logged once at INFO, and the connection closed.

Re-authentication (KIP-368): a session expires ``connections.max.reauth.ms`` after it was
authenticated, or when its credential (an OAUTHBEARER token) does if sooner, and the client is
told so in ``session_lifetime_ms``. Before then a client that authenticated with SaslAuthenticate
v1+ may send SaslHandshake again on the same connection: a new Authenticator (``previous`` set)
takes the exchange, which must keep the mechanism and end with the same principal. After expiry
the connection closes on the next request (broker/connection.py).

Deviation: a request other than SaslAuthenticate after the handshake closes the connection
without the ILLEGAL_SASL_STATE error response Kafka builds for that request type.
"""

from __future__ import annotations

import logging
import struct
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from weir.protocol.api_keys import ApiKey
from weir.protocol.connection import RawRequest, ServerConnection
from weir.protocol.errors import Errors
from weir.protocol.messages import sasl_authenticate, sasl_handshake

from .oauthbearer import OAuthBearerError
from .plain import PlainError
from .scram import ScramError

if TYPE_CHECKING:
    from weir.protocol.response_pieces import ResponsePieces

    from .listener_security import SaslExchange, SaslSettings
    from .session import Session

    #: Dispatcher.dispatch (broker/dispatcher.py): (request, client host, session) to the response or None.
    Dispatch = Callable[[RawRequest, str, Session | None], Awaitable[ResponsePieces | None]]
log = logging.getLogger(__name__)

HANDSHAKE, AUTHENTICATE, AUTHENTICATE_RAW = "handshake", "authenticate", "authenticate-raw"

#: What handling a request gives the connection: (response to write or None, reason to close after it or None).
Answer = tuple[bytes | bytearray | None, str | None]


class ReauthenticationRefused(Exception):
    """A re-authentication changed the mechanism or the principal; the message is Kafka's."""


MECHANISM_ERRORS = (PlainError, ScramError, OAuthBearerError, ReauthenticationRefused)  # messages fit for the client


class Authenticator:
    def __init__(self, settings: SaslSettings, session: Session, codec: ServerConnection, dispatch: Dispatch,
                 peer: str, now_ms: Callable[[], int], *, reauthenticating: bool = False) -> None:
        self._settings = settings
        self._session = session
        self._codec = codec  # ServerConnection: bare frames after SaslHandshake v0
        self._dispatch = dispatch
        self._peer = peer
        self._now_ms = now_ms  # the broker's clock, for the session's expiry
        # re-authentication: the mechanism and principal the new exchange must keep (KIP-368)
        self._previous = (session.mechanism, session.principal) if reauthenticating else None
        self._state = HANDSHAKE
        self._exchange: SaslExchange | None = None  # once the handshake has chosen a mechanism
        self._bad_mechanism: str | None = None  # a re-authentication asked for another mechanism
        self.done = False  # the exchange succeeded; the connection serves requests again

    async def handle(self, request: RawRequest) -> Answer:
        """(response to write or None, reason to close the connection after it or None)."""
        if self._state == AUTHENTICATE_RAW:
            return self._raw_token(request)
        header = request.header
        assert header is not None  # the codec reads bare frames only in AUTHENTICATE_RAW, after SaslHandshake v0
        if self._state == HANDSHAKE:
            if header.api_key == ApiKey.API_VERSIONS:
                return await self._dispatch(request, self._session.client_host, self._session), None
            if header.api_key == ApiKey.SASL_HANDSHAKE:
                return self._handshake(request)
            return None, f"Unexpected Kafka request of type {_name(header.api_key)} during SASL handshake."
        if header.api_key != ApiKey.SASL_AUTHENTICATE:
            return None, f"Unexpected Kafka request of type {_name(header.api_key)} during SASL authentication."
        return self._authenticate(request)

    @property
    def _chosen_exchange(self) -> SaslExchange:
        """The exchange the handshake chose: tokens, and their failures, come only after it."""
        assert self._exchange is not None, "a SASL token before the handshake"
        return self._exchange

    def _handshake(self, request: RawRequest) -> Answer:
        header = request.header
        assert header is not None  # handle() takes bare frames elsewhere
        if not 0 <= header.api_version <= 1:
            return None, f"SaslHandshake v{header.api_version} is not supported"
        body = sasl_handshake.REQUEST.decode(header.api_version, request.body, exact=False)
        enabled = list(self._settings.mechanisms)
        if body.mechanism not in enabled:
            response = sasl_handshake.RESPONSE(error_code=Errors.UNSUPPORTED_SASL_MECHANISM, mechanisms=enabled)
            return (ServerConnection.encode_response(header, header.api_version, sasl_handshake.RESPONSE, response),
                    f"Unsupported SASL mechanism {body.mechanism}")
        self._exchange = self._settings.server_for(body.mechanism)
        if self._previous is not None and body.mechanism != self._previous[0]:
            # As Kafka: the handshake is answered; the token that follows closes the connection unanswered
            self._bad_mechanism = (f"SASL mechanism '{body.mechanism}' requested by client is not supported for "
                                   f"re-authentication of mechanism '{self._previous[0]}'")
        if header.api_version == 0:
            self._state = AUTHENTICATE_RAW
            self._codec.raw_frames = True  # set before the answer goes out: the next frame is a bare token
        else:
            self._state = AUTHENTICATE
        response = sasl_handshake.RESPONSE(error_code=Errors.NONE, mechanisms=enabled)
        return ServerConnection.encode_response(header, header.api_version, sasl_handshake.RESPONSE, response), None

    def _authenticate(self, request: RawRequest) -> Answer:
        header = request.header
        assert header is not None  # handle() takes bare frames elsewhere
        body = sasl_authenticate.REQUEST.decode(header.api_version, request.body, exact=False)
        if self._bad_mechanism is not None:  # as Kafka: closed without an answer
            return None, self._failed(self._bad_mechanism)
        try:
            token = self._chosen_exchange.evaluate(bytes(body.auth_bytes))
            lifetime_ms = self._check_complete(can_reauthenticate=header.api_version > 0)
        except MECHANISM_ERRORS as exc:
            message = self._failure_message(exc)
            response = sasl_authenticate.RESPONSE(error_code=Errors.SASL_AUTHENTICATION_FAILED,
                                                  error_message=message)
            return (ServerConnection.encode_response(header, header.api_version, sasl_authenticate.RESPONSE,
                                                     response), self._failed(message))
        # error_message "": Kafka's generated message sends its default, the empty string, not null
        response = sasl_authenticate.RESPONSE(error_code=Errors.NONE, error_message="", auth_bytes=token,
                                              session_lifetime_ms=lifetime_ms or 0)
        return ServerConnection.encode_response(header, header.api_version, sasl_authenticate.RESPONSE, response), None

    def _raw_token(self, request: RawRequest) -> Answer:
        if self._bad_mechanism is not None:
            return None, self._failed(self._bad_mechanism)
        try:
            token = self._chosen_exchange.evaluate(bytes(request.body))
            complete = self._check_complete(can_reauthenticate=False) is not None
        except MECHANISM_ERRORS as exc:
            return None, self._failed(self._failure_message(exc))
        if complete:
            self._codec.raw_frames = False
        return struct.pack(">i", len(token)) + token, None

    def _check_complete(self, *, can_reauthenticate: bool) -> int | None:
        """None while the exchange goes on; once it succeeds, the session's lifetime in ms (0: none)."""
        exchange = self._chosen_exchange
        if not exchange.complete:
            return None
        principal = f"User:{exchange.user}"
        if self._previous is not None and principal != self._previous[1]:
            raise ReauthenticationRefused("Cannot change principals during re-authentication from "
                                   f"{_dotted(self._previous[1])}: {_dotted(principal)}")
        session = self._session
        session.principal = principal
        session.mechanism = exchange.mechanism
        session.token_authenticated = getattr(exchange, "token_authenticated", False)  # delegation tokens
        session.authenticated = True
        session.can_reauthenticate = session.can_reauthenticate or can_reauthenticate
        lifetime_ms = self._session_lifetime_ms(exchange)
        session.expires_at_ms = None if lifetime_ms is None else self._now_ms() + lifetime_ms
        self.done = True
        return lifetime_ms or 0

    def _session_lifetime_ms(self, exchange: SaslExchange) -> int | None:
        """Kafka's rule: the smaller of connections.max.reauth.ms (when > 0) and what is left of the
        credential's life (OAUTHBEARER tokens, delegation tokens); None when neither applies: the session
        never expires."""
        max_reauth_ms = self._settings.max_reauth_ms(exchange.mechanism)
        token = getattr(exchange, "token", None)
        left_ms = token.expires_ms - self._wall_ms() if token is not None else None
        limits = [limit for limit in (left_ms, max_reauth_ms if max_reauth_ms > 0 else None) if limit is not None]
        return max(0, min(limits)) if limits else None

    @staticmethod
    def _wall_ms() -> int:
        return int(time.time() * 1000)  # token expiries are wall-clock times

    def _failure_message(self, exc: Exception) -> str:
        if isinstance(exc, ScramError) and "authorization id" not in str(exc) or getattr(exc, "generic", False):
            # As Kafka: a SaslException's own text could tell whether the user exists; the client gets this.
            return ("Authentication failed during authentication due to invalid credentials with SASL "
                    f"mechanism {self._chosen_exchange.mechanism}")
        return str(exc)

    def _failed(self, message: str) -> str:
        log.info("Failed authentication with %s (%s)", self._peer, message)
        return f"failed authentication ({message})"


def _dotted(principal: str) -> str:
    """``User:alice`` as Kafka's re-authentication message writes a principal: ``User.alice``."""
    kind, _, name = principal.partition(":")
    return f"{kind}.{name}"


def _name(api_key: int) -> str:
    try:
        return ApiKey(api_key).name
    except ValueError:
        return str(api_key)

