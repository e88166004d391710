"""The SASL pre-authentication rules and the SCRAM credential APIs on Weir and on Apache Kafka
4.3.1, configured alike (PLAINTEXT + SASL_PLAINTEXT with PLAIN and both SCRAM mechanisms),
from a bare socket: what each answers and when each closes.

Differences, written down where they live:
- OUT_OF_PLACE_REQUEST: a request other than SaslAuthenticate after the handshake. Kafka answers
  it with that request type's error response (ILLEGAL_SASL_STATE) and closes; Weir closes
  without an answer (authenticator.py).
- SCRAM_UNKNOWN_USER: Kafka fails an unknown SCRAM user at the client-first message; Weir answers
  a made-up salt and fails at client-final, so a missing user looks like a wrong password (scram.py).
"""

from __future__ import annotations

import pytest

from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import Errors
from weir.protocol.messages import alter_user_scram_credentials as alter
from weir.protocol.messages import describe_user_scram_credentials as describe

from reference.kafka import KafkaProcess
from tests.security.brokers import ConfiguredBroker, listeners_setting
from tests.security.sasl_setup import sasl_settings
from tests.security.sasl_wire import CLOSED, SaslWire, plain_token


@pytest.fixture(scope="module")
def kafka_sasl(tmp_path_factory):
    kafka = KafkaProcess(tmp_path_factory.mktemp("kafka-sasl"), extra_listeners={"SASL_PLAINTEXT": "SASL_PLAINTEXT"},
                         overrides=sasl_settings(["SASL_PLAINTEXT"])).start()
    yield kafka
    kafka.stop()


@pytest.fixture(scope="module")
def weir_sasl(tmp_path_factory):
    settings, ports = listeners_setting({"PLAINTEXT": "PLAINTEXT", "SASL_PLAINTEXT": "SASL_PLAINTEXT"})
    settings.update(sasl_settings(["SASL_PLAINTEXT"]))
    broker = ConfiguredBroker(tmp_path_factory.mktemp("weir-sasl"), settings, ports).start()
    yield broker
    broker.stop()


@pytest.fixture(params=["weir", "kafka"])
def sasl_broker(request):
    return request.getfixturevalue(f"{request.param}_sasl")


def _scenario(broker) -> dict:
    seen = {}
    sasl = broker.bootstrap_for("SASL_PLAINTEXT")

    wire = SaslWire(sasl)
    seen["api_versions_first"] = wire.api_versions().error_code
    seen["metadata_before_handshake"] = wire.metadata()
    wire.close()

    wire = SaslWire(sasl)
    answer = wire.handshake("GSSAPI")
    seen["unsupported_mechanism"] = (answer.error_code, sorted(answer.mechanisms), wire.closed())
    wire.close()

    wire = SaslWire(sasl)
    wire.handshake("PLAIN")
    answer = wire.authenticate(plain_token("alice", "wrong"))
    seen["wrong_password"] = (answer.error_code, answer.error_message, wire.closed())
    wire.close()

    wire = SaslWire(sasl)
    wire.handshake("PLAIN")
    answer = wire.authenticate(plain_token("nobody", "wrong"))
    seen["unknown_user"] = (answer.error_code, answer.error_message)
    wire.close()

    wire = SaslWire(sasl)
    seen["handshake_v1"] = wire.handshake("PLAIN").error_code
    answer = wire.authenticate(plain_token("alice", "alice-secret"), version=2)
    seen["authenticated"] = (answer.error_code, answer.auth_bytes)
    seen["metadata_after"] = [b.port for b in wire.metadata().brokers] == [int(sasl.rsplit(":", 1)[1])]
    seen["handshake_again"] = wire.handshake("PLAIN").error_code
    answer = wire.authenticate(b"x")
    seen["authenticate_again"] = answer.error_code
    wire.close()

    wire = SaslWire(sasl)
    seen["handshake_v0"] = wire.handshake("PLAIN", version=0).error_code
    seen["bare_token"] = wire.raw_token(plain_token("admin", "admin-secret"))
    seen["metadata_after_v0"] = bool(wire.metadata().brokers)
    wire.close()

    wire = SaslWire(sasl)
    wire.handshake("PLAIN")
    answer = wire.metadata()
    seen["metadata_after_handshake"] = (answer if answer == CLOSED else
                                        [t.error_code for t in answer.topics] or "answered", wire.closed())
    wire.close()

    wire = SaslWire(sasl)
    wire.handshake("SCRAM-SHA-256")
    answer = wire.authenticate(b"n,,n=nobody,r=abcdef")
    seen["scram_unknown_user_first"] = answer.error_code
    wire.close()

    plain = SaslWire(broker.bootstrap_for("PLAINTEXT"))
    plaintext_port = int(broker.bootstrap_for("PLAINTEXT").rsplit(":", 1)[1])
    seen["metadata_on_plaintext"] = [b.port for b in plain.metadata().brokers] == [plaintext_port]
    seen["handshake_on_plaintext"] = plain.handshake("PLAIN").error_code
    results = plain.call(ApiKey.ALTER_USER_SCRAM_CREDENTIALS, 0, alter.REQUEST(
        deletions=[alter.Deletion(name="ghost", mechanism=1)],
        upsertions=[alter.Upsertion(name="two", mechanism=1, iterations=4096, salt=b"s", salted_password=bytes(32)),
                    alter.Upsertion(name="two", mechanism=2, iterations=4096, salt=b"s", salted_password=bytes(64)),
                    alter.Upsertion(name="few", mechanism=1, iterations=10, salt=b"s", salted_password=bytes(32)),
                    alter.Upsertion(name="", mechanism=1, iterations=4096, salt=b"s", salted_password=bytes(32)),
                    alter.Upsertion(name="odd", mechanism=7, iterations=4096, salt=b"s", salted_password=bytes(32)),
                    alter.Upsertion(name="ok", mechanism=2, iterations=8192, salt=b"s", salted_password=bytes(64))]))
    seen["alter"] = sorted((r.user, r.error_code, r.error_message) for r in results.results)
    described = plain.call(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, 0, describe.REQUEST(
        users=[describe.UserName(name="ok"), describe.UserName(name="missing")]))
    seen["describe"] = sorted((r.user, r.error_code, r.error_message, [(c.mechanism, c.iterations)
                                                                       for c in r.credential_infos])
                              for r in described.results)
    plain.close()
    return seen


def test_sasl_rules_and_scram_apis_match_kafka(sasl_broker, request):
    seen = _scenario(sasl_broker)
    on_kafka = sasl_broker.kind == "kafka"
    # OUT_OF_PLACE_REQUEST: both close; Kafka first answers the Metadata request with its error
    assert seen["metadata_after_handshake"] == (("answered", True) if on_kafka else (CLOSED, True))
    # SCRAM_UNKNOWN_USER: Kafka refuses at client-first; Weir carries on to fail at client-final
    assert seen["scram_unknown_user_first"] == (Errors.SASL_AUTHENTICATION_FAILED if on_kafka else 0)
    assert seen["api_versions_first"] == 0
    assert seen["metadata_before_handshake"] == CLOSED
    assert seen["unsupported_mechanism"] == (Errors.UNSUPPORTED_SASL_MECHANISM,
                                             ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"], True)
    assert seen["wrong_password"] == (Errors.SASL_AUTHENTICATION_FAILED,
                                      "Authentication failed: Invalid username or password", True)
    assert seen["unknown_user"] == (Errors.SASL_AUTHENTICATION_FAILED,
                                    "Authentication failed: Invalid username or password")
    assert seen["handshake_v1"] == 0 and seen["authenticated"] == (0, b"") and seen["metadata_after"]
    assert seen["handshake_again"] == Errors.ILLEGAL_SASL_STATE
    assert seen["authenticate_again"] == Errors.ILLEGAL_SASL_STATE
    assert (seen["handshake_v0"], seen["bare_token"], seen["metadata_after_v0"]) == (0, b"", True)
    assert seen["handshake_on_plaintext"] == Errors.ILLEGAL_SASL_STATE
    assert seen["metadata_on_plaintext"]  # each listener advertises itself
    assert seen["alter"] == sorted([
        ("ghost", Errors.RESOURCE_NOT_FOUND, "Attempt to delete a user credential that does not exist"),
        ("two", Errors.DUPLICATE_RESOURCE, "A user credential cannot be altered twice in the same request"),
        ("few", Errors.UNACCEPTABLE_CREDENTIAL, "Too few iterations"),
        ("", Errors.UNACCEPTABLE_CREDENTIAL, "Username must not be empty"),
        ("odd", Errors.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"),
        ("ok", 0, None)])
    assert seen["describe"] == sorted([
        ("ok", 0, "", [(2, 8192)]),
        ("missing", Errors.RESOURCE_NOT_FOUND, "Attempt to describe a user credential that does not exist: missing",
         [])])
