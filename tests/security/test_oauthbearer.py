"""SASL/OAUTHBEARER on Weir and on Apache Kafka 4.4.0 configured alike: a listener with Kafka's
unsecured validator (a required scope) and a named listener SIGNED with the JWKS validator (an RSA
key in a JWKS file, an expected issuer). The same exchanges from a bare socket on both brokers, and
confluent-kafka and aiokafka clients logging in on Weir."""

from __future__ import annotations

import asyncio
import base64
import json
import time

import jwt
import pytest
from aiokafka.abc import AbstractTokenProvider
from confluent_kafka import KafkaError, Producer
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm

from weir.client.errors import KafkaException
from weir.protocol.errors import Errors

from reference.kafka import JVM_OPTIONS, KafkaProcess
from tests.security import round_trips
from tests.security.brokers import ConfiguredBroker, listeners_setting
from tests.security.sasl_wire import CLOSED, SaslWire

MODULE = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
JWKS_VALIDATOR = "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler"
ISSUER = "https://issuer.weir.test"
AUDIENCE = "weir-test-cluster"
REQUIRED_SCOPE = "kafka"
SEP = "\x01"


def _b64(document: dict) -> str:
    return base64.urlsafe_b64encode(json.dumps(document, separators=(",", ":")).encode()).rstrip(b"=").decode()


def unsecured_token(claims: dict) -> str:
    """An unsigned JWS in the alphabet both brokers decode: Kafka 4's unsecured validator reads
    plain base64, so a padding claim is varied until no '-' or '_' appears."""
    for pad in range(64):
        token = f"{_b64({'alg': 'none'})}.{_b64({**claims, 'pad': 'x' * pad})}."
        if "-" not in token and "_" not in token:
            return token
    raise AssertionError("no token free of - and _")


def initial_response(token: str, authzid: str = "") -> bytes:
    return f"n,{'a=' + authzid if authzid else ''},{SEP}auth=Bearer {token}{SEP}{SEP}".encode()


def claims(subject: str = "alice", lifetime: int = 3600, **extra) -> dict:
    now = int(time.time())
    return {"sub": subject, "iat": now, "exp": now + lifetime, **extra}


@pytest.fixture(scope="module")
def keys(tmp_path_factory):
    """The issuer's signing key (in a JWKS file the brokers read) and a stranger's."""
    directory = tmp_path_factory.mktemp("jwks")
    issuer = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    stranger = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    public = json.loads(RSAAlgorithm.to_jwk(issuer.public_key()))
    jwks = directory / "jwks.json"
    jwks.write_text(json.dumps({"keys": [{**public, "kid": "k1", "use": "sig", "alg": "RS256"}]}))
    return {"issuer": issuer, "stranger": stranger, "jwks_url": jwks.as_uri()}


def signed_token(key, kid: str = "k1", **claim_values) -> str:
    return jwt.encode({"iss": ISSUER, "aud": AUDIENCE, **claims(**claim_values)}, key, algorithm="RS256",
                      headers={"kid": kid})


def oauth_settings(jwks_url: str) -> dict[str, str]:
    # unsecuredLoginStringClaim_sub: Kafka's broker logs in itself at start-up (a token of its own);
    # Weir, which never sends a token, ignores the login options
    return {
        "sasl.enabled.mechanisms": "OAUTHBEARER",
        "listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config":
            f'{MODULE} required unsecuredLoginStringClaim_sub="broker" '
            f'unsecuredValidatorRequiredScope="{REQUIRED_SCOPE}";',
        "listener.name.signed.oauthbearer.sasl.jaas.config":
            f'{MODULE} required unsecuredLoginStringClaim_sub="broker";',
        "listener.name.signed.oauthbearer.sasl.server.callback.handler.class": JWKS_VALIDATOR,
        "listener.name.signed.sasl.oauthbearer.jwks.endpoint.url": jwks_url,
        "listener.name.signed.sasl.oauthbearer.expected.issuer": ISSUER,
        # Kafka 4.4 starts a listener checking signed tokens only if it expects an audience (or is
        # told to take any): test_a_signed_listener_must_expect_an_audience below
        "listener.name.signed.sasl.oauthbearer.expected.audience": AUDIENCE,
    }


LISTENERS = {"PLAINTEXT": "PLAINTEXT", "SASL_PLAINTEXT": "SASL_PLAINTEXT", "SIGNED": "SASL_PLAINTEXT"}


@pytest.fixture(scope="module")
def weir_oauth(tmp_path_factory, keys):
    settings, ports = listeners_setting(LISTENERS)
    settings.update(oauth_settings(keys["jwks_url"]))
    broker = ConfiguredBroker(tmp_path_factory.mktemp("weir-oauth"), settings, ports).start()
    yield broker
    broker.stop()


@pytest.fixture(scope="module")
def kafka_oauth(tmp_path_factory, keys):
    # Kafka 4 reads a JWKS only from URLs this JVM property allows
    jvm = [*JVM_OPTIONS, f"-Dorg.apache.kafka.sasl.oauthbearer.allowed.urls={keys['jwks_url']}"]
    kafka = KafkaProcess(tmp_path_factory.mktemp("kafka-oauth"), jvm_options=jvm,
                         extra_listeners={"SASL_PLAINTEXT": "SASL_PLAINTEXT", "SIGNED": "SASL_PLAINTEXT"},
                         overrides=oauth_settings(keys["jwks_url"])).start()
    yield kafka
    kafka.stop()


@pytest.fixture(params=["weir", "kafka"])
def oauth_broker(request):
    return request.getfixturevalue(f"{request.param}_oauth")


def _login(bootstrap: str, *responses: bytes) -> list:
    """Each SaslAuthenticate answer as (error code, message, auth bytes), CLOSED once the broker closes."""
    wire = SaslWire(bootstrap)
    try:
        answers = [(wire.handshake("OAUTHBEARER").error_code,)]
        for response in responses:
            answer = wire.authenticate(response)
            if answer == CLOSED:
                answers.append(CLOSED)
                break
            answers.append((answer.error_code, answer.error_message, bytes(answer.auth_bytes)))
        else:
            if answers[-1][:1] == (0,) and answers[-1][2:] == (b"",):  # logged in: it serves requests now
                answers.append("serves" if wire.metadata() != CLOSED else CLOSED)
            else:  # refused: the broker closes the connection (closed() waits for that, boundedly)
                answers.append("closed" if wire.closed() else "open")
        return answers
    finally:
        wire.close()


def _session_lifetime_ms(bootstrap: str, token: str) -> int:
    wire = SaslWire(bootstrap)
    try:
        wire.handshake("OAUTHBEARER")
        return wire.authenticate(initial_response(token)).session_lifetime_ms
    finally:
        wire.close()


def _scenario(broker, keys) -> dict:
    unsecured, signed = broker.bootstrap_for("SASL_PLAINTEXT"), broker.bootstrap_for("SIGNED")
    with_scope = claims(scope=REQUIRED_SCOPE)
    return {
        # the session lasts as long as the token (KIP-368), even at connections.max.reauth.ms=0
        "lifetime_ms": _session_lifetime_ms(unsecured, unsecured_token(claims(lifetime=600, scope=REQUIRED_SCOPE))),
        "unsecured_ok": _login(unsecured, initial_response(unsecured_token(with_scope))),
        "unsecured_authzid_ok": _login(unsecured, initial_response(unsecured_token(with_scope), authzid="alice")),
        "unsecured_authzid_other": _login(unsecured, initial_response(unsecured_token(with_scope), authzid="bob")),
        "unsecured_expired": _login(unsecured, initial_response(unsecured_token(claims(lifetime=-60,
                                                                                       scope=REQUIRED_SCOPE))),
                                    SEP.encode()),
        "unsecured_no_scope": _login(unsecured, initial_response(unsecured_token(claims())), SEP.encode()),
        "unsecured_signed_alg": _login(unsecured, initial_response(signed_token(keys["issuer"])), SEP.encode()),
        "malformed": _login(unsecured, b"n,,auth=Bearer x"),
        "not_bearer": _login(unsecured, f"n,,{SEP}auth=Basic abc{SEP}{SEP}".encode()),
        "signed_ok": _login(signed, initial_response(signed_token(keys["issuer"]))),
        "signed_by_stranger": _login(signed, initial_response(signed_token(keys["stranger"])), SEP.encode()),
        "signed_unsigned": _login(signed, initial_response(unsecured_token(with_scope)), SEP.encode()),
        "signed_expired": _login(signed, initial_response(signed_token(keys["issuer"], lifetime=-600)),
                                 SEP.encode()),
        "signed_wrong_issuer": _login(signed, initial_response(jwt.encode(
            {**claims(), "iss": "https://elsewhere", "aud": AUDIENCE}, keys["issuer"], algorithm="RS256",
            headers={"kid": "k1"})), SEP.encode()),
        "signed_wrong_audience": _login(signed, initial_response(jwt.encode(
            {**claims(), "iss": ISSUER, "aud": "another-cluster"}, keys["issuer"], algorithm="RS256",
            headers={"kid": "k1"})), SEP.encode()),
    }


INVALID = b'{"status":"invalid_token"}'
FAILED = Errors.SASL_AUTHENTICATION_FAILED
GENERIC = "Authentication failed during authentication due to invalid credentials with SASL mechanism OAUTHBEARER"


def _refused(answer: bytes) -> list:
    """Refused with RFC 7628's JSON challenge; the client's ^A then fails the login with it as the message."""
    return [(0,), (0, "", answer), (FAILED, answer.decode(), b""), "closed"]


def test_oauthbearer_exchanges_match_kafka(oauth_broker, keys):
    seen = _scenario(oauth_broker, keys)
    assert 590_000 < seen["lifetime_ms"] <= 600_000
    assert seen["unsecured_ok"] == [(0,), (0, "", b""), "serves"]
    assert seen["unsecured_authzid_ok"] == [(0,), (0, "", b""), "serves"]
    assert seen["unsecured_authzid_other"] == [(0,), (FAILED, "Authentication failed: Client requested an "
                                                      "authorization id (bob) that is different from the token's "
                                                      "principal name (alice)", b""), "closed"]
    assert seen["unsecured_expired"] == _refused(INVALID)
    assert seen["unsecured_no_scope"] == _refused(f'{{"status":"insufficient_scope", "scope":"[{REQUIRED_SCOPE}]"}}'
                                                  .encode())
    assert seen["unsecured_signed_alg"] == _refused(INVALID)
    assert seen["malformed"] == [(0,), (FAILED, GENERIC, b""), "closed"]
    # NOT_BEARER: Kafka (4.3.1, 4.4.0) fails building its "Invalid scheme" message (it reads a regex group the
    # matcher lacks) and closes without an answer; Weir answers the generic failure, then closes.
    assert seen["not_bearer"] == ([(0,), CLOSED] if oauth_broker.kind == "kafka" else
                                  [(0,), (FAILED, GENERIC, b""), "closed"])
    assert seen["signed_ok"] == [(0,), (0, "", b""), "serves"]
    for case in ("signed_by_stranger", "signed_unsigned", "signed_expired", "signed_wrong_issuer",
                 "signed_wrong_audience"):
        assert seen[case] == _refused(INVALID), case


def test_a_signed_listener_must_expect_an_audience(tmp_path, keys):
    """Kafka 4.4 refuses to start a listener checking signed tokens with no expected audience and
    no sasl.oauthbearer.allow.unverified.audience; Weir refuses it too, in the same words."""
    settings = {name: value for name, value in oauth_settings(keys["jwks_url"]).items()
                if not name.endswith("expected.audience")}
    refusal = ('The OAuth validator for the broker requires "sasl.oauthbearer.expected.audience" to be configured '
               'so that the token\'s audience ("aud") claim can be verified, but it was not set.')
    allowed_urls = f"-Dorg.apache.kafka.sasl.oauthbearer.allowed.urls={keys['jwks_url']}"
    kafka = KafkaProcess(tmp_path / "kafka", overrides=settings, jvm_options=[*JVM_OPTIONS, allowed_urls],
                         extra_listeners={"SASL_PLAINTEXT": "SASL_PLAINTEXT", "SIGNED": "SASL_PLAINTEXT"})
    with pytest.raises(RuntimeError, match="Kafka exited"):
        kafka.start()
    kafka.stop()
    assert refusal in "".join(kafka.lines)
    listeners, ports = listeners_setting(LISTENERS)
    (tmp_path / "weir").mkdir()
    weir = ConfiguredBroker(tmp_path / "weir", {**listeners, **settings}, ports)
    with pytest.raises(RuntimeError) as weir_refused:
        weir.start()
    weir.stop()
    assert refusal in str(weir_refused.value)


def test_confluent_kafka_logs_in_with_an_unsecured_token_and_with_a_signed_one(weir_oauth, keys, topic_name):
    unsecured = {"bootstrap.servers": weir_oauth.bootstrap_for("SASL_PLAINTEXT"), "security.protocol": "SASL_PLAINTEXT",
                 "sasl.mechanism": "OAUTHBEARER", "enable.sasl.oauthbearer.unsecure.jwt": True,
                 "sasl.oauthbearer.config": f"principal=alice scope={REQUIRED_SCOPE}"}
    round_trips.confluent(unsecured, f"{topic_name}-unsecured", 5)

    def fresh_token(_config):
        token = signed_token(keys["issuer"], subject="carol")
        return token, time.time() + 3600
    signed = {"bootstrap.servers": weir_oauth.bootstrap_for("SIGNED"), "security.protocol": "SASL_PLAINTEXT",
              "sasl.mechanism": "OAUTHBEARER", "oauth_cb": fresh_token}
    round_trips.confluent(signed, f"{topic_name}-signed", 5)


def test_confluent_kafka_with_a_token_the_broker_refuses_gets_an_authentication_error(weir_oauth, keys):
    errors = []

    def stranger_token(_config):
        return signed_token(keys["stranger"]), time.time() + 3600
    producer = Producer({"bootstrap.servers": weir_oauth.bootstrap_for("SIGNED"), "security.protocol": "SASL_PLAINTEXT",
                         "sasl.mechanism": "OAUTHBEARER", "oauth_cb": stranger_token,
                         "error_cb": errors.append})
    deadline = time.monotonic() + 30
    while not any(e.code() == KafkaError._AUTHENTICATION for e in errors) and time.monotonic() < deadline:
        producer.poll(0.1)
    assert any(e.code() == KafkaError._AUTHENTICATION and "invalid_token" in e.str() for e in errors), errors


class _SignedTokens(AbstractTokenProvider):
    def __init__(self, key):
        self._key = key

    async def token(self) -> str:
        return signed_token(self._key, subject="dave")


def test_aiokafka_logs_in_with_a_token_provider(weir_oauth, keys, topic_name):
    common = {"bootstrap_servers": weir_oauth.bootstrap_for("SIGNED"), "security_protocol": "SASL_PLAINTEXT",
              "sasl_mechanism": "OAUTHBEARER", "sasl_oauth_token_provider": _SignedTokens(keys["issuer"])}
    asyncio.run(round_trips.aiokafka(common, topic_name, 5))


def test_our_client_logs_in_with_a_token_provider_on_both_brokers(oauth_broker, keys, topic_name):
    asyncio.run(round_trips.ours(oauth_broker.bootstrap_for("SIGNED"), topic_name, security_protocol="SASL_PLAINTEXT",
                                 sasl_mechanism="OAUTHBEARER", sasl_oauth_token_provider=_SignedTokens(keys["issuer"])))
    with pytest.raises(KafkaException) as refused:
        asyncio.run(round_trips.ours(oauth_broker.bootstrap_for("SIGNED"), f"{topic_name}-x",
                                     security_protocol="SASL_PLAINTEXT", sasl_mechanism="OAUTHBEARER",
                                     sasl_oauth_token_provider=_SignedTokens(keys["stranger"])))
    assert getattr(refused.value, "code", None) == Errors.SASL_AUTHENTICATION_FAILED
    assert "invalid_token" in str(refused.value)
