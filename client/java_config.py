"""The Java client's security settings (``security.protocol``, ``sasl.*``, ``ssl.*``) as this
client's security keywords: what Spark's ``kafka.*`` options and ``weir-admin --command-config``
hand over, read as the Java client reads them.

* ``security.protocol``, ``sasl.mechanism``;
* ``sasl.jaas.config``: PlainLoginModule / ScramLoginModule ``username`` and ``password`` (and
  ScramLoginModule's ``tokenauth="true"``: a delegation token);
  OAuthBearerLoginModule's unsecured login options (``unsecuredLoginStringClaim_<name>``,
  ``unsecuredLoginLifetimeSeconds``), which make an unsigned token as the Java client's
  default login handler does;
* PEM stores: ``ssl.truststore.location`` / ``ssl.truststore.certificates``,
  ``ssl.keystore.location`` (key and chain in one file) / ``ssl.keystore.key`` +
  ``ssl.keystore.certificate.chain``, ``ssl.key.password``; ``ssl.cipher.suites``;
  ``ssl.endpoint.identification.algorithm`` (empty: host names not checked).

Refused, with the reason: JKS/PKCS12 stores (Python's ssl reads PEM), GSSAPI, and OAUTHBEARER
logins through a token endpoint (sasl.oauthbearer.token.endpoint.url).
"""

from __future__ import annotations

import base64
import functools
import json
import os
import ssl
import tempfile
import time
from typing import Any

from weir.protocol.jaas import parse_jaas

from .security import ClientSecurity


class SecurityOptionError(ValueError):
    """A security setting this client cannot honour (the message says why)."""


def is_security_setting(java_name: str) -> bool:
    return java_name == "security.protocol" or java_name.startswith(("sasl.", "ssl."))


def security_keywords(java: dict[str, str]) -> dict[str, Any]:
    """The security keywords (Producer, Consumer, Admin) for Java client settings; the SSL context of
    one set of settings is built once per process."""
    return _keywords(tuple(sorted((name, value) for name, value in java.items() if is_security_setting(name))))


@functools.lru_cache(maxsize=16)
def _keywords(settings: tuple[tuple[str, str], ...]) -> dict[str, Any]:
    java = dict(settings)
    protocol = java.get("security.protocol", "PLAINTEXT").strip().upper()
    keywords: dict[str, Any] = {"security_protocol": protocol}
    if protocol in ("SSL", "SASL_SSL"):
        keywords["ssl_context"] = _ssl_context(java)
    if protocol.startswith("SASL_"):
        mechanism = java.get("sasl.mechanism", "GSSAPI").strip().upper()
        if mechanism == "GSSAPI":
            raise SecurityOptionError("kafka.sasl.mechanism GSSAPI (Kerberos) is not supported by the Weir client; "
                                      "use PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER")
        keywords["sasl_mechanism"] = mechanism
        options = _login_options(java.get("sasl.jaas.config", ""))
        if mechanism == "OAUTHBEARER":
            if java.get("sasl.oauthbearer.token.endpoint.url"):
                raise SecurityOptionError("OAUTHBEARER through kafka.sasl.oauthbearer.token.endpoint.url is not "
                                          "supported by the Weir client; only the unsecured login options")
            keywords["sasl_oauth_token_provider"] = UnsecuredLoginTokens(options)
        else:
            if "username" not in options or "password" not in options:
                raise SecurityOptionError(f"kafka.sasl.jaas.config must give username and password for {mechanism}")
            keywords["sasl_plain_username"] = options["username"]
            keywords["sasl_plain_password"] = options["password"]
            if options.get("tokenauth", "").lower() == "true":  # ScramLoginModule's delegation-token login
                keywords["sasl_scram_token_auth"] = True
    ClientSecurity.from_options(**keywords)  # the client's own checks
    return keywords


def _login_options(jaas: str) -> dict[str, str]:
    if not jaas.strip():
        return {}
    try:
        modules = parse_jaas(jaas)
    except ValueError as exc:
        raise SecurityOptionError(f"kafka.sasl.jaas.config: {exc}") from None
    return {name: value for module in modules for name, value in module.options.items()}


def _ssl_context(java: dict[str, str]) -> ssl.SSLContext:
    for store in ("truststore", "keystore"):
        kind = java.get(f"ssl.{store}.type", "PEM").strip().upper()
        if kind != "PEM":
            raise SecurityOptionError(f"kafka.ssl.{store}.type {kind}: the Weir client reads PEM stores only "
                                      f"(ssl.{store}.type=PEM)")
    cafile = java.get("ssl.truststore.location") or None
    cadata = java.get("ssl.truststore.certificates") or None
    context = ssl.create_default_context(cafile=cafile, cadata=cadata)
    if java.get("ssl.endpoint.identification.algorithm", "https").strip() == "":
        context.check_hostname = False  # as the Java client with the algorithm set empty
    if java.get("ssl.cipher.suites"):
        context.set_ciphers(":".join(s.strip() for s in java["ssl.cipher.suites"].split(",")))
    password = java.get("ssl.key.password") or java.get("ssl.keystore.password") or None
    if java.get("ssl.keystore.location"):
        context.load_cert_chain(java["ssl.keystore.location"], password=password)
    elif java.get("ssl.keystore.key"):
        _load_inline_chain(context, java["ssl.keystore.certificate.chain"], java["ssl.keystore.key"], password)
    return context


def _load_inline_chain(context: ssl.SSLContext, chain: str, key: str, password: str | None) -> None:
    """ssl reads a key and chain only from a file: a private one, removed once loaded."""
    handle, path = tempfile.mkstemp(prefix="weir-keystore-", suffix=".pem")  # mode 0600
    try:
        with os.fdopen(handle, "w") as file:
            file.write(key.strip() + "\n" + chain.strip() + "\n")
        context.load_cert_chain(path, password=password)
    finally:
        os.unlink(path)


class UnsecuredLoginTokens:
    """The Java client's unsecured OAUTHBEARER login: an unsigned token with ``sub`` and any other
    ``unsecuredLoginStringClaim_<name>`` claims, living ``unsecuredLoginLifetimeSeconds`` (3600)."""

    def __init__(self, options: dict[str, str]):
        self._claims = {name[len("unsecuredLoginStringClaim_"):]: value for name, value in options.items()
                        if name.startswith("unsecuredLoginStringClaim_")}
        if "sub" not in self._claims:
            raise SecurityOptionError("OAUTHBEARER: kafka.sasl.jaas.config needs unsecuredLoginStringClaim_sub")
        self._lifetime_s = int(options.get("unsecuredLoginLifetimeSeconds", "3600"))

    async def token(self) -> str:
        now = int(time.time())
        claims = {**self._claims, "iat": now, "exp": now + self._lifetime_s}
        return f"{_b64url({'alg': 'none'})}.{_b64url(claims)}."


def _b64url(document: dict[str, object]) -> str:
    return base64.urlsafe_b64encode(json.dumps(document).encode()).rstrip(b"=").decode()
