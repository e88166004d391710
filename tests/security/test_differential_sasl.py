"""The SASL pre-authentication rules and the SCRAM credential APIs on Weir and on Apache Kafka
4.4.0, configured alike (PLAINTEXT + SASL_PLAINTEXT with PLAIN and both SCRAM mechanisms),
from a bare socket: what each answers and when each closes.

Differences, written down where they live:
- OUT_OF_PLACE_REQUEST: a request other than SaslAuthenticate after the handshake. Kafka answers
  it with that request type's error response (ILLEGAL_SASL_STATE) and closes; Weir closes
  without an answer (authenticator.py).
- SCRAM_UNKNOWN_USER: Kafka fails an unknown SCRAM user at the client-first message; Weir answers
  a made-up salt and fails at client-final, so a missing user looks like a wrong password (scram.py).

A third listener, REAUTH, has connections.max.reauth.ms set: re-authentication (KIP-368) compared.
"""

from __future__ import annotations

import asyncio
import time

import pytest
from confluent_kafka import Producer

from weir.client.errors import KafkaException

from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import Errors
from weir.protocol.messages import alter_user_scram_credentials as alter
from weir.protocol.messages import describe_user_scram_credentials as describe

from reference.kafka import KafkaProcess
from tests.security import round_trips
from tests.security.brokers import ConfiguredBroker, listeners_setting
from tests.security.sasl_setup import add_scram_user, confluent_config, sasl_settings
from tests.security.sasl_wire import CLOSED, SaslWire, plain_token
from tests.support.admin_cli import cli as admin_cli, cli_json as admin_cli_json, run_cli
from tests.support.waiting import wait_until


SESSION_MS = 1500
REAUTH_SETTINGS = {"listener.name.reauth.connections.max.reauth.ms": str(SESSION_MS)}  # KIP-368 on REAUTH only


@pytest.fixture(scope="module")
def kafka_sasl(tmp_path_factory):
    kafka = KafkaProcess(tmp_path_factory.mktemp("kafka-sasl"),
                         extra_listeners={"SASL_PLAINTEXT": "SASL_PLAINTEXT", "REAUTH": "SASL_PLAINTEXT"},
                         overrides={**sasl_settings(["SASL_PLAINTEXT", "REAUTH"]), **REAUTH_SETTINGS}).start()
    yield kafka
    kafka.stop()


@pytest.fixture(scope="module")
def weir_sasl(tmp_path_factory):
    settings, ports = listeners_setting({"PLAINTEXT": "PLAINTEXT", "SASL_PLAINTEXT": "SASL_PLAINTEXT",
                                         "REAUTH": "SASL_PLAINTEXT"})
    settings.update({**sasl_settings(["SASL_PLAINTEXT", "REAUTH"]), **REAUTH_SETTINGS})
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

    wire = SaslWire(sasl)  # a request sent right behind the last bare token is a request, not a token
    wire.handshake("PLAIN", version=0)
    answer, metadata_answer = wire.raw_token_then_metadata(plain_token("admin", "admin-secret"))
    seen["metadata_pipelined_after_v0"] = (answer, metadata_answer if metadata_answer == CLOSED
                                           else bool(metadata_answer.brokers))
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
    # Kafka's brokers learn credentials from the metadata log a moment after the controller answered the
    # alteration: ask until "ok" is there (at once on Weir), then compare the whole answer
    def ok_described():
        nonlocal described
        described = plain.call(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, 0, describe.REQUEST(
            users=[describe.UserName(name="ok"), describe.UserName(name="missing")]))
        return any(r.user == "ok" and r.error_code == 0 for r in described.results)
    described = None
    wait_until(ok_described, "the new SCRAM credential to be described", timeout=15)
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
    assert seen["metadata_pipelined_after_v0"] == (b"", True)
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


def _reauth_scenario(broker) -> dict:
    seen = {}
    reauth = broker.bootstrap_for("REAUTH")

    wire = SaslWire(broker.bootstrap_for("SASL_PLAINTEXT"))
    wire.handshake("PLAIN")
    seen["lifetime_without_reauth"] = wire.authenticate(plain_token("alice", "alice-secret")).session_lifetime_ms
    wire.close()

    wire = SaslWire(reauth)
    wire.handshake("PLAIN")
    answer = wire.authenticate(plain_token("alice", "alice-secret"))
    seen["login"] = (answer.error_code, answer.session_lifetime_ms)
    seen["reauth_handshake"] = wire.handshake("PLAIN").error_code
    answer = wire.authenticate(plain_token("alice", "alice-secret"))
    seen["reauth"] = (answer.error_code, answer.error_message, answer.session_lifetime_ms)
    seen["serves_after_reauth"] = wire.metadata() != CLOSED
    wire.close()

    wire = SaslWire(reauth)
    wire.handshake("PLAIN")
    wire.authenticate(plain_token("alice", "alice-secret"))
    seen["other_principal_handshake"] = wire.handshake("PLAIN").error_code
    answer = wire.authenticate(plain_token("admin", "admin-secret"))
    seen["other_principal"] = answer if answer == CLOSED else (answer.error_code, answer.error_message, wire.closed())
    wire.close()

    wire = SaslWire(reauth)
    wire.handshake("PLAIN")
    wire.authenticate(plain_token("alice", "alice-secret"))
    seen["other_mechanism_handshake"] = wire.handshake("SCRAM-SHA-256").error_code
    answer = wire.authenticate(b"n,,n=alice,r=abcdef")
    seen["other_mechanism"] = answer if answer == CLOSED else (answer.error_code, answer.error_message, wire.closed())
    wire.close()

    wire = SaslWire(reauth)
    wire.handshake("PLAIN")
    wire.authenticate(plain_token("alice", "alice-secret"))
    seen["serves_before_expiry"] = wire.metadata() != CLOSED
    time.sleep(SESSION_MS / 1000 + 0.5)  # what is tested is a session outliving its lifetime: nothing to wait on
    seen["after_expiry"] = wire.metadata()
    wire.close()
    return seen


def test_reauthentication_matches_kafka(sasl_broker):
    seen = _reauth_scenario(sasl_broker)
    assert seen["lifetime_without_reauth"] == 0
    assert seen["login"] == (0, SESSION_MS)
    assert seen["reauth_handshake"] == 0
    assert seen["reauth"] == (0, "", SESSION_MS) and seen["serves_after_reauth"]
    assert seen["other_principal_handshake"] == 0
    assert seen["other_principal"] == (Errors.SASL_AUTHENTICATION_FAILED, "Cannot change principals during "
                                       "re-authentication from User.alice: User.admin", True)
    assert seen["other_mechanism_handshake"] == 0
    assert seen["other_mechanism"] == CLOSED  # no answer: the handshake was answered, the token is not
    assert seen["serves_before_expiry"]
    assert seen["after_expiry"] == CLOSED


def test_librdkafka_re_authenticates_and_keeps_its_connection(weir_sasl, topic_name):
    """confluent-kafka re-authenticates before each session expires (KIP-368), so the broker never
    has to close its connection: produce through three session lifetimes."""
    delivered, errors = [], []
    log_mark = len(weir_sasl.lines)
    producer = Producer({**confluent_config(weir_sasl.bootstrap_for("REAUTH"), "SASL_PLAINTEXT", "PLAIN", "alice",
                                            "alice-secret"), "error_cb": errors.append})
    began = time.monotonic()
    sent = 0
    while time.monotonic() - began < 3 * SESSION_MS / 1000:
        producer.produce(topic_name, b"v%d" % sent, on_delivery=lambda err, msg: delivered.append(err))
        sent += 1
        producer.flush(10)  # one at a time: each send is a request on a session of its age
    assert producer.flush(10) == 0
    assert delivered == [None] * sent and not errors
    expired = [line for line in weir_sasl.lines[log_mark:] if "SASL session expired" in line]
    assert not expired, "the client's connection was closed at expiry"



@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_our_client_logs_in_with_each_mechanism(sasl_broker, mechanism, topic_name):
    sasl = sasl_broker.bootstrap_for("SASL_PLAINTEXT")
    user, password = ("alice", "alice-secret") if mechanism == "PLAIN" else ("carol", "carol-scram")
    if mechanism != "PLAIN":
        add_scram_user(sasl_broker.bootstrap_for("PLAINTEXT"), user, password)

    def logs_in():  # Kafka's brokers learn a new credential from the metadata log a moment later
        try:
            return asyncio.run(round_trips.ours(sasl, topic_name, security_protocol="SASL_PLAINTEXT",
                                           sasl_mechanism=mechanism, sasl_plain_username=user,
                                           sasl_plain_password=password))
        except KafkaException as exc:
            if getattr(exc, "code", None) != Errors.SASL_AUTHENTICATION_FAILED:
                raise
            return None
    assert wait_until(logs_in, f"{user} to log in with {mechanism}", timeout=20) == [b"ours0", b"ours1", b"ours2"]

    with pytest.raises(KafkaException) as refused:
        asyncio.run(round_trips.ours(sasl, f"{topic_name}-x", security_protocol="SASL_PLAINTEXT",
                                sasl_mechanism=mechanism, sasl_plain_username=user, sasl_plain_password="wrong"))
    assert getattr(refused.value, "code", None) == Errors.SASL_AUTHENTICATION_FAILED


def test_weir_admin_manages_scram_users_and_speaks_sasl_with_a_command_config(sasl_broker, tmp_path, topic_name):
    """``weir-admin users`` on both brokers, through their SASL listener with a Java client properties file
    (``--command-config``, its JAAS value continued over two lines, as such files often have it)."""
    config = tmp_path / "admin.properties"
    config.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
                      "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required \\\n"
                      '    username="admin" password="admin-secret";\n')
    sasl = sasl_broker.bootstrap_for("SASL_PLAINTEXT")
    user = f"dora-{topic_name[-6:]}"
    admin_cli(sasl, "--command-config", str(config), "users", "add", user, "--mechanism", "SCRAM-SHA-256",
              "--password", "dora-pw", "--iterations", "8192")

    def listed():
        return admin_cli_json(sasl, "--command-config", str(config), "users", "list", user)
    assert wait_until(lambda: listed() if listed() else None, f"{user} to be listed", timeout=15) == [
        {"user": user, "mechanism": "SCRAM-SHA-256", "iterations": 8192}]

    def logs_in():
        try:
            return asyncio.run(round_trips.ours(sasl, topic_name, security_protocol="SASL_PLAINTEXT",
                                                sasl_mechanism="SCRAM-SHA-256", sasl_plain_username=user,
                                                sasl_plain_password="dora-pw"))
        except KafkaException as exc:
            if getattr(exc, "code", None) != Errors.SASL_AUTHENTICATION_FAILED:
                raise
            return None
    assert wait_until(logs_in, f"{user} to log in", timeout=20)

    admin_cli(sasl, "--command-config", str(config), "users", "remove", user, "--mechanism", "SCRAM-SHA-256")

    def gone():  # Kafka's brokers see the removal a moment after the controller made it
        listed = run_cli(sasl, "--command-config", str(config), "users", "list", user)
        return listed.returncode == 1 and "RESOURCE_NOT_FOUND" in listed.stderr
    wait_until(gone, f"{user} to be gone", timeout=15)
