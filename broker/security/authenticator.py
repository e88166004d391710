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

Deviations: a request other than SaslAuthenticate after the handshake closes the connection
without the ILLEGAL_SASL_STATE error response Kafka builds for that request type; no
re-authentication (KIP-368), so ``session_lifetime_ms`` is 0.
"""

from __future__ import annotations

import logging
import struct

from weir.protocol.api_keys import ApiKey
from weir.protocol.connection import ServerConnection
from weir.protocol.errors import Errors
from weir.protocol.messages import sasl_authenticate, sasl_handshake

from .oauthbearer import OAuthBearerError
from .plain import PlainError
from .scram import ScramError

log = logging.getLogger(__name__)

HANDSHAKE, AUTHENTICATE, AUTHENTICATE_RAW = "handshake", "authenticate", "authenticate-raw"
MECHANISM_ERRORS = (PlainError, ScramError, OAuthBearerError)  # failed logins, with a message fit for the client


class Authenticator:
    def __init__(self, settings, session, codec, dispatch, peer: str):
        self._settings = settings  # listener_security.SaslSettings
        self._session = session
        self._codec = codec  # ServerConnection: bare frames after SaslHandshake v0
        self._dispatch = dispatch
        self._peer = peer
        self._state = HANDSHAKE
        self._exchange = None  # PlainServer / ScramServer once a mechanism is chosen

    async def handle(self, request) -> tuple[bytes | None, str | None]:
        """(response to write or None, reason to close the connection after it or None)."""
        if self._state == AUTHENTICATE_RAW:
            return self._raw_token(request)
        header = request.header
        if self._state == HANDSHAKE:
            if header.api_key == ApiKey.API_VERSIONS:
                return await self._dispatch(request, self._session.client_host, self._session), None
            if header.api_key == ApiKey.SASL_HANDSHAKE:
                return self._handshake(request)
            return None, f"Unexpected Kafka request of type {_name(header.api_key)} during SASL handshake."
        if header.api_key != ApiKey.SASL_AUTHENTICATE:
            return None, f"Unexpected Kafka request of type {_name(header.api_key)} during SASL authentication."
        return self._authenticate(request)

    def _handshake(self, request):
        header = request.header
        if not 0 <= header.api_version <= 1:
            return None, f"SaslHandshake v{header.api_version} is not supported"
        body = sasl_handshake.REQUEST.decode(header.api_version, request.body, exact=False)
        enabled = list(self._settings.mechanisms)
        if body.mechanism not in enabled:
            response = sasl_handshake.RESPONSE(error_code=Errors.UNSUPPORTED_SASL_MECHANISM, mechanisms=enabled)
            return (ServerConnection.encode_response(header, header.api_version, sasl_handshake.RESPONSE, response),
                    f"Unsupported SASL mechanism {body.mechanism}")
        self._exchange = self._settings.server_for(body.mechanism)
        if header.api_version == 0:
            self._state = AUTHENTICATE_RAW
            self._codec.raw_frames = True  # set before the answer goes out: the next frame is a bare token
        else:
            self._state = AUTHENTICATE
        response = sasl_handshake.RESPONSE(error_code=Errors.NONE, mechanisms=enabled)
        return ServerConnection.encode_response(header, header.api_version, sasl_handshake.RESPONSE, response), None

    def _authenticate(self, request):
        header = request.header
        body = sasl_authenticate.REQUEST.decode(header.api_version, request.body, exact=False)
        try:
            token = self._exchange.evaluate(bytes(body.auth_bytes))
        except MECHANISM_ERRORS as exc:
            message = self._failure_message(exc)
            response = sasl_authenticate.RESPONSE(error_code=Errors.SASL_AUTHENTICATION_FAILED,
                                                  error_message=message)
            return (ServerConnection.encode_response(header, header.api_version, sasl_authenticate.RESPONSE,
                                                     response), self._failed(message))
        self._check_complete()
        # error_message "": Kafka's generated message sends its default, the empty string, not null
        response = sasl_authenticate.RESPONSE(error_code=Errors.NONE, error_message="", auth_bytes=token,
                                              session_lifetime_ms=0)
        return ServerConnection.encode_response(header, header.api_version, sasl_authenticate.RESPONSE, response), None

    def _raw_token(self, request):
        try:
            token = self._exchange.evaluate(bytes(request.body))
        except MECHANISM_ERRORS as exc:
            return None, self._failed(self._failure_message(exc))
        if self._check_complete():
            self._codec.raw_frames = False
        return struct.pack(">i", len(token)) + token, None

    def _check_complete(self) -> bool:
        exchange = self._exchange
        if not exchange.complete:
            return False
        session = self._session
        session.principal = f"User:{exchange.user}"
        session.mechanism = exchange.mechanism
        session.authenticated = True
        return True

    def _failure_message(self, exc: Exception) -> str:
        if isinstance(exc, ScramError) and "authorization id" not in str(exc) or getattr(exc, "generic", False):
            # As Kafka: a SaslException's own text could tell whether the user exists; the client gets this.
            return ("Authentication failed during authentication due to invalid credentials with SASL "
                    f"mechanism {self._exchange.mechanism}")
        return str(exc)

    def _failed(self, message: str) -> str:
        log.info("Failed authentication with %s (%s)", self._peer, message)
        return f"failed authentication ({message})"


def _name(api_key: int) -> str:
    try:
        return ApiKey(api_key).name
    except ValueError:
        return str(api_key)

