"""Kafka's listener, TLS and SASL broker settings, under Kafka's names.

Kept apart from ``broker/config.py`` (which merges them into its table) because they
come in families: each may also be given per listener as ``listener.name.<listener>.<name>``
(lower-case listener name, as Kafka writes it), and the JAAS settings exist only in that
form, with the mechanism in between: ``listener.name.sasl_ssl.plain.sasl.jaas.config``.

Values are (parse, default, doc) as ``config.Setting`` takes them; parsers raise ValueError.
"""

from __future__ import annotations

import re

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")
DEFAULT_PROTOCOL_MAP = "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL"


def _str(text: str) -> str:
    return text.strip()


def _list(text: str) -> tuple[str, ...]:
    return tuple(item.strip() for item in text.split(",") if item.strip())


def _choice(*allowed: str):
    def parse(text: str) -> str:
        value = text.strip().lower()
        if value not in allowed:
            raise ValueError(f"String must be one of: {', '.join(allowed)}")
        return value
    return parse


def _store_type(text: str) -> str:
    value = text.strip().upper()
    if value != "PEM":
        # Deviation: JKS and PKCS12 keystores are Java formats; Python's ssl reads PEM only.
        raise ValueError("Weir reads PEM key and trust stores only (ssl.keystore.type=PEM)")
    return value


def _mechanisms(text: str) -> tuple[str, ...]:
    names = _list(text)
    unknown = [name for name in names if name not in MECHANISMS]
    if unknown:
        raise ValueError(f"unsupported SASL mechanism(s) {', '.join(unknown)}; Weir serves {', '.join(MECHANISMS)}")
    return names


def _protocol_map(text: str) -> dict[str, str]:
    mapping = {}
    for item in _list(text):
        name, sep, protocol = item.partition(":")
        name, protocol = name.strip().upper(), protocol.strip().upper()
        if not sep or not name:
            raise ValueError(f"expected LISTENER:PROTOCOL, got {item!r}")
        if protocol not in PROTOCOLS:
            raise ValueError(f"unknown security protocol {protocol!r} (one of {', '.join(PROTOCOLS)})")
        mapping[name] = protocol
    return mapping


def _bool(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered not in ("true", "false"):
        raise ValueError("Expected value to be either true or false")
    return lowered == "true"


def _int(text: str) -> int:
    return int(text.strip())


def _positive(text: str) -> int:
    value = int(text.strip())
    if value < 1:
        raise ValueError("Value must be at least 1")
    return value


def _non_negative(text: str) -> int:
    value = int(text.strip())
    if value < 0:
        raise ValueError("must be 0 or more")
    return value


def _jaas(text: str) -> str:
    from weir.protocol.jaas import parse_jaas  # checked at start-up, kept as text
    parse_jaas(text)
    return text.strip()


def _server_callback_handler(mechanism: str, text: str) -> str:
    """Kafka's validator classes, by name: a class of one's own cannot be loaded into Weir."""
    from .oauthbearer import JWKS_HANDLERS, UNSECURED_HANDLER
    name = text.strip()
    if mechanism != "OAUTHBEARER" or name not in (UNSECURED_HANDLER, *JWKS_HANDLERS):
        raise ValueError(f"{mechanism}: Weir serves only Kafka's OAUTHBEARER validators ({', '.join(JWKS_HANDLERS)} "
                         f"or {UNSECURED_HANDLER}); custom callback handler classes cannot be loaded")
    return name


#: Settings that also exist per listener (``listener.name.<l>.<name>``).
LISTENER_SCOPED = {
    "ssl.keystore.type": (_store_type, "PEM", "format of the key store: PEM"),
    "ssl.keystore.location": (_str, "", "PEM file with the private key and certificate chain"),
    "ssl.keystore.key": (_str, "", "PEM private key given inline (instead of ssl.keystore.location)"),
    "ssl.keystore.certificate.chain": (_str, "", "PEM certificate chain given inline"),
    "ssl.key.password": (_str, "", "password of an encrypted private key"),
    "ssl.keystore.password": (_str, "", "password of the key store (of an encrypted PEM key)"),
    "ssl.truststore.type": (_store_type, "PEM", "format of the trust store: PEM"),
    "ssl.truststore.location": (_str, "", "PEM file of the certificates trusted to sign client certificates"),
    "ssl.truststore.certificates": (_str, "", "trusted PEM certificates given inline"),
    "ssl.truststore.password": (_str, "", "ignored for PEM trust stores, as in Kafka"),
    "ssl.client.auth": (_choice("none", "requested", "required"), "none",
                        "whether TLS clients must (required), may (requested) or do not present a certificate"),
    "ssl.enabled.protocols": (_list, ("TLSv1.2", "TLSv1.3"), "TLS versions accepted"),
    "ssl.protocol": (_str, "TLSv1.3", "accepted for compatibility; ssl.enabled.protocols decides"),
    "ssl.cipher.suites": (_list, (), "TLS 1.2 cipher suites (OpenSSL or IANA names); empty = the defaults"),
    "ssl.endpoint.identification.algorithm": (_str, "https", "a client setting; accepted and unused by a broker"),
    "ssl.principal.mapping.rules": (_str, "DEFAULT", "rules mapping a certificate's subject DN to a user name"),
    "sasl.enabled.mechanisms": (_mechanisms, ("GSSAPI",),
                                "SASL mechanisms served: PLAIN, SCRAM-SHA-256/512, OAUTHBEARER"),
    "sasl.server.max.receive.size": (_int, 524288, "largest frame accepted before authentication"),
    "connections.max.reauth.ms": (_non_negative, 0, "SASL sessions expire after this and must re-authenticate "
                                  "(KIP-368); 0: only when an OAUTHBEARER token does"),
    "sasl.oauthbearer.jwks.endpoint.url": (_str, "", "file: or http(s): URL of the JWKS verifying signed tokens"),
    "sasl.oauthbearer.jwks.endpoint.refresh.ms": (_int, 3600000, "how often the JWKS is read again"),
    "sasl.oauthbearer.expected.audience": (_list, (), "audiences a signed token must name one of (empty: none)"),
    "sasl.oauthbearer.expected.issuer": (_str, "", "the issuer a signed token must name (empty: any)"),
    # Kafka 4.4: a listener checking signed tokens must expect an audience and an issuer unless
    # told it may accept any (broker/security/listener_security.py refuses to start otherwise)
    "sasl.oauthbearer.allow.unverified.audience": (_bool, False, "accept signed tokens whatever their audience"),
    "sasl.oauthbearer.allow.unverified.issuer": (_bool, False, "accept signed tokens whatever their issuer"),
    "sasl.oauthbearer.sub.claim.name": (_str, "sub", "claim of a signed token naming the principal"),
    "sasl.oauthbearer.scope.claim.name": (_str, "scope", "claim of a signed token holding its scope"),
    "sasl.oauthbearer.clock.skew.seconds": (_int, 30, "leeway for a signed token's exp and iat"),
}

SECURITY_SETTINGS = {
    "listeners": (_str, "", "NAME://host:port,...; default PLAINTEXT on --host/--port"),
    "listener.security.protocol.map": (_protocol_map, _protocol_map(DEFAULT_PROTOCOL_MAP),
                                       "listener name -> PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL"),
    "sasl.mechanism.inter.broker.protocol": (_str, "GSSAPI", "accepted; one broker has no inter-broker traffic"),
    "inter.broker.listener.name": (_str, "", "accepted; one broker has no inter-broker traffic"),
    "security.inter.broker.protocol": (_str, "PLAINTEXT", "accepted; one broker has no inter-broker traffic"),
    **LISTENER_SCOPED,
    # delegation tokens (broker/security/delegation_tokens.py); Kafka 4 no longer reads the old
    # delegation.token.master.key name
    "delegation.token.secret.key": (_str, "", "HMAC key of delegation tokens; empty = tokens disabled"),
    "delegation.token.max.lifetime.ms": (_positive, 604800000, "a token cannot be renewed past this age"),
    "delegation.token.expiry.time.ms": (_positive, 86400000, "a token expires this long after creation or "
                                                             "renewal unless renewed"),
    "delegation.token.expiry.check.interval.ms": (_positive, 3600000, "how often expired tokens are removed"),
}

_PREFIXED = re.compile(r"listener\.name\.([a-z0-9_.\-]+?)\.(?:([a-z0-9\-]+)\.)?"
                       r"((?:ssl|sasl)\..+|connections\.max\.reauth\.ms)")
_PER_MECHANISM = ("sasl.jaas.config", "sasl.server.callback.handler.class")


def parse_prefixed(name: str, text: str):
    """(listener, setting, value) of a ``listener.name.<l>.[<mechanism>.]<setting>`` entry; None if
    ``name`` is not one. The JAAS and callback-handler settings exist only with the mechanism (kept
    as ``<mechanism>.<setting>``); on the others, as ``sasl.oauthbearer.*``, it may be given or not."""
    match = _PREFIXED.fullmatch(name)
    if not match:
        return None
    listener, mechanism, setting = match.groups()
    if mechanism is not None and mechanism.upper() not in MECHANISMS:
        raise ValueError(f"unsupported SASL mechanism {mechanism.upper()!r}")
    if setting in _PER_MECHANISM or (setting == "connections.max.reauth.ms" and mechanism is not None):
        if mechanism is None:
            return None
        if setting == "sasl.jaas.config":
            return listener, f"{mechanism}.{setting}", _jaas(text)
        if setting == "connections.max.reauth.ms":  # Kafka also takes it per mechanism
            return listener, f"{mechanism}.{setting}", _non_negative(text)
        return listener, f"{mechanism}.{setting}", _server_callback_handler(mechanism.upper(), text)
    if setting not in LISTENER_SCOPED:
        return None
    return listener, setting, LISTENER_SCOPED[setting][0](text)
