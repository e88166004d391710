"""Everything one listener needs to secure its connections, built once at start-up: its
spec, SSL context (SSL, SASL_SSL), principal mapping rules and SASL mechanisms (SASL_*).
A setting that does not work (a key that does not load, a SASL listener without usable
mechanisms, PLAIN without its JAAS users) is a ConfigError before the broker serves."""

from __future__ import annotations

import dataclasses
import re
import ssl

from ..config import ConfigError
from weir.protocol.jaas import module_options, plain_users
from .listeners import ListenerSpec
from .oauthbearer import JWKS_HANDLERS, JwksKeys, JwksValidator, OAuthBearerServer, UnsecuredValidator
from .plain import PlainServer
from .principal import PrincipalMapper
from .scram import HASHES, ScramServer
from .tls import server_context

#: The server side of one SASL exchange, for the mechanism the client chose.
SaslExchange = PlainServer | ScramServer | OAuthBearerServer


class SaslSettings:
    def __init__(self, config, listener: str, scram_store, tokens=None):
        self.mechanisms: tuple[str, ...] = config.for_listener(listener, "sasl.enabled.mechanisms")
        if "GSSAPI" in self.mechanisms:
            raise ConfigError(f"listener {listener}: Weir has no GSSAPI (Kerberos); set sasl.enabled.mechanisms "
                              "(or listener.name.<listener>.sasl.enabled.mechanisms) to PLAIN, SCRAM-SHA-256, "
                              "SCRAM-SHA-512 and/or OAUTHBEARER")
        self.max_receive_size: int = config.for_listener(listener, "sasl.server.max.receive.size")
        self._plain_users: dict[str, str] = {}
        if "PLAIN" in self.mechanisms:
            jaas = config.for_listener(listener, "plain.sasl.jaas.config")
            if jaas is None:
                raise ConfigError(f"listener {listener}: PLAIN needs listener.name.{listener.lower()}"
                                  ".plain.sasl.jaas.config with user_<name>=\"<password>\" entries")
            try:
                self._plain_users = plain_users(jaas)
            except ValueError as exc:
                raise ConfigError(f"listener.name.{listener.lower()}.plain.sasl.jaas.config: {exc}") from None
        self._scram_store = scram_store
        self._tokens = tokens  # delegation tokens authenticate through SCRAM (tokenauth=true)
        self._oauthbearer = _oauthbearer_validator(config, listener) if "OAUTHBEARER" in self.mechanisms else None
        self._max_reauth_ms = {
            mechanism: _first_set(config.listener_override(listener, f"{mechanism.lower()}.connections.max.reauth.ms"),
                                  config.for_listener(listener, "connections.max.reauth.ms"))
            for mechanism in self.mechanisms}

    def max_reauth_ms(self, mechanism: str) -> int:
        """connections.max.reauth.ms for ``mechanism`` on this listener (0: sessions do not expire by it)."""
        return self._max_reauth_ms[mechanism]

    def server_for(self, mechanism: str) -> SaslExchange:
        """A fresh exchange for ``mechanism`` (one of ``mechanisms``)."""
        if mechanism == "PLAIN":
            return PlainServer(self._plain_users)
        if mechanism == "OAUTHBEARER":
            return OAuthBearerServer(self._oauthbearer)
        assert mechanism in HASHES
        return ScramServer(mechanism, self._scram_store, self._tokens)


def _first_set(*values):
    return next(value for value in values if value is not None)


def _oauthbearer_validator(config, listener: str):
    """The listener's OAUTHBEARER validator, as Kafka picks it: signed tokens against a JWKS when the
    server callback handler is Kafka's OAuthBearerValidatorCallbackHandler, else unsecured ones."""
    handler = config.for_listener(listener, "oauthbearer.sasl.server.callback.handler.class")
    jaas = config.for_listener(listener, "oauthbearer.sasl.jaas.config")
    try:
        options = module_options(jaas, "OAUTHBEARER") if jaas else {}
        if handler not in JWKS_HANDLERS:
            return UnsecuredValidator(options)
        url = config.for_listener(listener, "sasl.oauthbearer.jwks.endpoint.url")
        if not url:
            raise ValueError(f"{handler} needs sasl.oauthbearer.jwks.endpoint.url")
        _require_claim_checks(config, listener)
        keys = JwksKeys(url, config.for_listener(listener, "sasl.oauthbearer.jwks.endpoint.refresh.ms"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"listener {listener}: OAUTHBEARER: {exc}") from None
    return JwksValidator(keys, audience=config.for_listener(listener, "sasl.oauthbearer.expected.audience"),
                         issuer=config.for_listener(listener, "sasl.oauthbearer.expected.issuer"),
                         sub_claim=config.for_listener(listener, "sasl.oauthbearer.sub.claim.name"),
                         scope_claim=config.for_listener(listener, "sasl.oauthbearer.scope.claim.name"),
                         clock_skew_s=config.for_listener(listener, "sasl.oauthbearer.clock.skew.seconds"))


#: (claim, what it names, the setting expecting it, the one waiving the check, what to set) as Kafka 4.4's
#: broker validator requires them
_CLAIM_CHECKS = (
    ("audience", "aud", "sasl.oauthbearer.expected.audience", "sasl.oauthbearer.allow.unverified.audience",
     "the audience(s) that identify this cluster"),
    ("issuer", "iss", "sasl.oauthbearer.expected.issuer", "sasl.oauthbearer.allow.unverified.issuer",
     "the issuer URL of the OAuth/OIDC provider that signs the tokens"),
)


def _require_claim_checks(config, listener: str) -> None:
    """Kafka 4.4 refuses to start a listener checking signed tokens that would take any audience or
    any issuer, unless told to: the same refusal, in Kafka's words."""
    for claim, name, expected, waiver, what in _CLAIM_CHECKS:
        if not config.for_listener(listener, expected) and not config.for_listener(listener, waiver):
            raise ValueError(
                f'The OAuth validator for the broker requires "{expected}" to be configured so that the token\'s '
                f'{claim} ("{name}") claim can be verified, but it was not set. Set "{expected}" to {what}, '
                f'or set "{waiver}" to true to accept tokens regardless of their {claim}.')


@dataclasses.dataclass
class ListenerSecurity:
    spec: ListenerSpec
    ssl_context: ssl.SSLContext | None
    principal_mapper: PrincipalMapper | None
    sasl: SaslSettings | None

    @classmethod
    def build(cls, config, spec: ListenerSpec, scram_store, tokens=None) -> ListenerSecurity:
        context = mapper = sasl = None
        if spec.uses_tls:
            context = server_context(config, spec.name, spec.protocol)
            try:
                mapper = PrincipalMapper(config.for_listener(spec.name, "ssl.principal.mapping.rules"))
            except (ValueError, re.error) as exc:
                raise ConfigError(f"ssl.principal.mapping.rules: {exc}") from None
        if spec.uses_sasl:
            sasl = SaslSettings(config, spec.name, scram_store, tokens)
        return cls(spec, context, mapper, sasl)

    def bound_to(self, port: int) -> None:
        """Record the port bound (for port 0) and advertise it where no other port was given."""
        self.spec = dataclasses.replace(self.spec, port=port, advertised_port=self.spec.advertised_port or port)
