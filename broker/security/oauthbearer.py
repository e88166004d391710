"""SASL/OAUTHBEARER (RFC 7628), the broker's side, as Kafka serves it.

    client  n,[a=<authzid>],^Aauth=Bearer <token>^A[<key>=<value>^A]...^A
    server  (empty: done)  or  {"status":"invalid_token"}  (then the client sends ^A and fails)

The token is checked by one of Kafka's two validators, chosen as Kafka chooses them by
``listener.name.<l>.oauthbearer.sasl.server.callback.handler.class``:

* none given: the *unsecured* validator, for development. The token is an unsigned JWS
  (``alg`` ``none``, empty signature) whose claims name the principal (``sub``) and the expiry
  (``exp``, required); options from the listener's OAUTHBEARER JAAS entry:
  ``unsecuredValidatorPrincipalClaimName``, ``unsecuredValidatorScopeClaimName``,
  ``unsecuredValidatorRequiredScope`` (space-separated), ``unsecuredValidatorAllowableClockSkewMs``.
* ``org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler``: a
  signed JWT (any algorithm but ``none``) verified with the keys of the JWKS at
  ``sasl.oauthbearer.jwks.endpoint.url`` (``file:`` or ``http(s):``, re-read every
  ``sasl.oauthbearer.jwks.endpoint.refresh.ms``), with ``exp`` and ``iat`` required,
  ``sasl.oauthbearer.expected.audience`` / ``.expected.issuer`` checked when set, the principal
  from ``sasl.oauthbearer.sub.claim.name``, a leeway of ``sasl.oauthbearer.clock.skew.seconds``.

SASL extensions are accepted and ignored, as both Kafka validators accept every extension.
The session lasts until the token expires (or connections.max.reauth.ms, if sooner): the client
re-authenticates with a fresh token before then (KIP-368, broker/security/authenticator.py).

Deviations: the unsecured validator decodes base64url and base64 alike (JWTs use base64url;
Kafka 4.3's decodes plain base64 only and so refuses tokens holding ``-`` or ``_``); a signed token whose ``kid`` the
current key set
lacks fails until the next refresh (Kafka's HTTPS resolver also refreshes at once on a miss).
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import re
import threading
import time
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import jwt

log = logging.getLogger(__name__)

MECHANISM = "OAUTHBEARER"
UNSECURED_HANDLER = "org.apache.kafka.common.security.oauthbearer.internals.unsecured." \
                    "OAuthBearerUnsecuredValidatorCallbackHandler"
JWKS_HANDLERS = ("org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler",
                 "org.apache.kafka.common.security.oauthbearer.secured.OAuthBearerValidatorCallbackHandler")

_SEPARATOR = "\x01"
_SASLNAME = r"(?:[\x01-\x2b\x2d-\x3c\x3e-\x7f]|=2C|=3D)+"  # RFC 5801 saslname: no ',' or '=' but escaped
_KEY = r"[A-Za-z]+"
_VALUE = r"[\x21-\x7e \t\r\n]+"
_INITIAL_RESPONSE = re.compile(
    rf"n,(?:a=(?P<authzid>{_SASLNAME}))?,\x01(?P<pairs>(?:{_KEY}={_VALUE}\x01)*)\x01")
_AUTH = re.compile(r"(?P<scheme>\w+) +(?P<token>[-_~+/.a-zA-Z0-9]+=*)")


class OAuthBearerError(Exception):
    """The exchange failed; the message is Kafka's and safe to send to the client. ``generic``: Kafka
    answers it (a SaslException, not a SaslAuthenticationException) with its generic message."""

    def __init__(self, message: str, *, generic: bool = False):
        super().__init__(message)
        self.generic = generic


class InvalidToken(Exception):
    """The token was refused; ``status`` and ``scope`` go into the JSON answer (RFC 7628 3.2.2)."""

    def __init__(self, reason: str, scope: str | None = None):
        super().__init__(reason)
        self.status = "insufficient_scope" if scope is not None else "invalid_token"
        self.scope = scope


@dataclass(frozen=True)
class ValidToken:
    principal: str
    expires_ms: int
    scope: frozenset[str]


class OAuthBearerServer:
    mechanism = MECHANISM

    def __init__(self, validator):
        self._validator = validator  # UnsecuredValidator or JwksValidator
        self._error: str | None = None  # the JSON answer sent; the client's ^A after it fails the login
        self.user: str | None = None
        self.token: ValidToken | None = None
        self.complete = False

    def evaluate(self, response: bytes) -> bytes:
        if response == _SEPARATOR.encode() and self._error is not None:
            raise OAuthBearerError(self._error)
        self._error = None
        authzid, token_value = _parse_initial_response(response)
        try:
            token = self._validator.validate(token_value)
        except InvalidToken as refused:
            log.debug("OAUTHBEARER token refused: %s", refused)
            self._error = _error_answer(refused)
            return self._error.encode()
        if authzid and authzid != token.principal:
            raise OAuthBearerError(f"Authentication failed: Client requested an authorization id ({authzid}) that "
                                   f"is different from the token's principal name ({token.principal})")
        self.user, self.token, self.complete = token.principal, token, True
        return b""


def _error_answer(refused: InvalidToken) -> str:
    """RFC 7628's JSON error, spelt byte for byte as Kafka writes it (clients may show it)."""
    answer = f'{{"status":"{refused.status}"'
    if refused.scope is not None:
        answer += f', "scope":"{refused.scope}"'
    return answer + "}"


def _parse_initial_response(response: bytes) -> tuple[str, str]:
    """(authorization id or "", token) of a client's first message."""
    match = _INITIAL_RESPONSE.fullmatch(response.decode("utf-8", errors="replace"))
    if not match:
        raise OAuthBearerError("Invalid OAUTHBEARER client first message", generic=True)
    pairs = dict(pair.split("=", 1) for pair in match.group("pairs").split(_SEPARATOR) if pair)
    auth = pairs.get("auth")
    if auth is None:
        raise OAuthBearerError("Invalid OAUTHBEARER client first message: 'auth' not specified", generic=True)
    auth_match = _AUTH.fullmatch(auth)
    if not auth_match:
        raise OAuthBearerError("Invalid OAUTHBEARER client first message: invalid 'auth' format", generic=True)
    if auth_match.group("scheme").lower() != "bearer":
        raise OAuthBearerError(f"Invalid scheme in OAUTHBEARER client first message: {auth_match.group('scheme')}",
                               generic=True)
    return match.group("authzid") or "", auth_match.group("token")


def _scope_of(claims: dict, scope_claim: str) -> frozenset[str]:
    value = claims.get(scope_claim)
    if isinstance(value, str):
        return frozenset([value.strip()]) if value.strip() else frozenset()
    if isinstance(value, list):
        return frozenset(str(item) for item in value)
    return frozenset()


def _number(claims: dict, name: str, required: bool) -> float | None:
    value = claims.get(name)
    if value is None:
        if required:
            raise InvalidToken(f"Required claim missing: {name}")
        return None
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise InvalidToken(f"The claim {name} is not a number")
    return float(value)


class UnsecuredValidator:
    """Kafka's OAuthBearerUnsecuredValidatorCallbackHandler: unsigned tokens, for development only."""

    def __init__(self, options: dict[str, str]):
        self._principal_claim = options.get("unsecuredValidatorPrincipalClaimName", "").strip() or "sub"
        self._scope_claim = options.get("unsecuredValidatorScopeClaimName", "").strip() or "scope"
        self._required_scope = options.get("unsecuredValidatorRequiredScope", "").split()
        skew = options.get("unsecuredValidatorAllowableClockSkewMs", "").strip() or "0"
        self._skew_ms = int(skew)  # ValueError: a configuration error at start-up
        if self._skew_ms < 0:
            raise ValueError(f"Allowable clock skew millis must not be negative: {skew}")

    def validate(self, token: str) -> ValidToken:
        if ".." in token:
            raise InvalidToken("Malformed compact serialization contains '..'")
        parts = token.split(".")
        if len(parts) != 3:
            raise InvalidToken("Unsecured JWS compact serializations must have 3 dot-separated Base64URL-encoded "
                               "values")
        header, claims = _json_part(parts[0]), _json_part(parts[1])
        if header.get("alg") != "none":
            raise InvalidToken("Unsecured JWS must have 'none' for an algorithm")
        if parts[2]:
            raise InvalidToken("Unsecured JWS must not contain a digital signature")
        principal = claims.get(self._principal_claim)
        if not isinstance(principal, str) or not principal.strip():
            raise InvalidToken(f"No principal name in JWT claim: {self._principal_claim}")
        now_ms = time.time() * 1000
        expires = _number(claims, "exp", required=True)
        issued = _number(claims, "iat", required=False)
        if issued is not None and issued * 1000 > now_ms + self._skew_ms:
            raise InvalidToken("The Issued At value was after the indicated time plus allowable clock skew")
        assert expires is not None
        if now_ms - self._skew_ms >= expires * 1000:
            raise InvalidToken("The indicated time minus allowable clock skew was on or after the Expiration Time")
        if issued is not None and expires <= issued:
            raise InvalidToken("The Expiration Time was not after the Issued At time")
        scope = _scope_of(claims, self._scope_claim)
        for required in self._required_scope:
            if required not in scope:
                raise InvalidToken(f"The provided scope was missing a required scope ({required})",
                                   scope="[" + ", ".join(self._required_scope) + "]")  # as Java prints a list
        return ValidToken(principal, int(expires * 1000), scope)


def _json_part(part: str) -> dict:
    try:
        url_safe = part.replace("+", "-").replace("/", "_")  # either alphabet: see the module's deviations
        value = json.loads(base64.urlsafe_b64decode(url_safe + "=" * (-len(url_safe) % 4)))
    except (binascii.Error, ValueError):
        raise InvalidToken("malformed Base64 URL encoded value or JSON") from None
    if not isinstance(value, dict):
        raise InvalidToken("malformed JSON")
    return value


class JwksKeys:
    """The verification keys of a JWKS (a ``file:`` or ``http(s):`` URL), re-read in a thread every
    ``refresh_ms``; the first read happens at start-up, so a bad URL stops the broker there."""

    def __init__(self, url: str, refresh_ms: int):
        self._url = url
        self._keys = self._read()
        self._refresh_s = refresh_ms / 1000
        threading.Thread(target=self._refresh_forever, name="weir-jwks-refresh", daemon=True).start()

    def _read(self) -> dict[str | None, jwt.PyJWK]:
        import jwt  # with cryptography ~60 ms of a broker's start: imported by brokers that validate JWTs
        parsed = urllib.parse.urlparse(self._url)
        if parsed.scheme == "file":
            with open(urllib.request.url2pathname(parsed.path), "rb") as file:
                document = json.load(file)
        elif parsed.scheme in ("http", "https"):
            with urllib.request.urlopen(self._url, timeout=10) as answer:  # a thread, never the event loop
                document = json.load(answer)
        else:
            raise ValueError(f"sasl.oauthbearer.jwks.endpoint.url must be a file: or http(s): URL, got {self._url}")
        try:
            key_set = jwt.PyJWKSet.from_dict(document)
        except jwt.PyJWTError as exc:
            raise ValueError(f"the JWKS at {self._url} has no usable key: {exc}") from None
        return {key.key_id: key for key in key_set.keys}

    def _refresh_forever(self) -> None:
        while True:
            time.sleep(self._refresh_s)  # the refresh thread's own pace; nothing waits on it
            try:
                self._keys = self._read()
            except (OSError, ValueError) as exc:
                log.warning("could not refresh the JWKS from %s (keeping the keys read before): %s", self._url, exc)

    def key_for(self, key_id: str | None) -> jwt.PyJWK:
        keys = self._keys
        if key_id in keys:
            return keys[key_id]
        if key_id is None and len(keys) == 1:
            return next(iter(keys.values()))
        raise InvalidToken(f"no verification key with kid {key_id!r} in the JWKS")


class JwksValidator:
    """Kafka's OAuthBearerValidatorCallbackHandler: signed JWTs checked against a JWKS."""

    def __init__(self, keys: JwksKeys, *, audience: tuple[str, ...], issuer: str, sub_claim: str,
                 scope_claim: str, clock_skew_s: int):
        self._keys = keys
        self._audience = list(audience) or None
        self._issuer = issuer or None
        self._sub_claim = sub_claim
        self._scope_claim = scope_claim
        self._leeway = clock_skew_s

    def validate(self, token: str) -> ValidToken:
        import jwt  # imported already: JwksKeys read the keys at start-up
        try:
            header = jwt.get_unverified_header(token)
            if header.get("alg", "none") == "none":
                raise InvalidToken("the JWT is unsigned (alg none)")
            key = self._keys.key_for(header.get("kid"))
            claims = jwt.decode(token, key.key, algorithms=[header["alg"]], audience=self._audience,
                                issuer=self._issuer, leeway=self._leeway, options={"require": ["exp", "iat"]})
            # As Kafka (jose4j's default): a token naming an audience fails when none is expected.
        except jwt.PyJWTError as exc:
            raise InvalidToken(f"Could not validate the access token: {exc}") from None
        subject = claims.get(self._sub_claim)
        if not isinstance(subject, str) or not subject.strip():
            raise InvalidToken(f"the {self._sub_claim} claim is missing or empty")
        return ValidToken(subject.strip(), int(claims["exp"] * 1000), _scope_of(claims, self._scope_claim))
