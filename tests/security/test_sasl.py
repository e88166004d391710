"""SASL on Weir: PLAIN (JAAS users) and SCRAM-SHA-256/512 (credentials set through
AlterUserScramCredentials), over SASL_PLAINTEXT and SASL_SSL, with clients nobody here wrote;
the pre-authentication rules seen from a bare socket."""

from __future__ import annotations

import ssl

import pytest
from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import AdminClient

from weir.protocol.errors import Errors

from tests.security import round_trips
from tests.security.brokers import ConfiguredBroker, listeners_setting
from weir.testing.certs import Pki
from tests.security.sasl_setup import (SCRAM_PASSWORD, add_scram_user, confluent_config, java_client_properties,
                                      sasl_settings)
from tests.security.sasl_wire import CLOSED, SaslWire, plain_token

MECHANISMS = ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]



@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    pki = Pki(tmp_path_factory.mktemp("pki"))
    pki.broker = pki.issue("broker", [("CN", "localhost")], server=True)
    return pki


@pytest.fixture(scope="module")
def sasl_broker(pki, tmp_path_factory):
    settings, ports = listeners_setting({"PLAINTEXT": "PLAINTEXT", "SASL_PLAINTEXT": "SASL_PLAINTEXT",
                                         "SASL_SSL": "SASL_SSL"})
    settings.update(sasl_settings(["SASL_PLAINTEXT", "SASL_SSL"]))
    settings.update({"ssl.keystore.location": str(pki.broker.keystore_path)})
    broker = ConfiguredBroker(tmp_path_factory.mktemp("sasl"), settings, ports).start()
    add_scram_user(broker.bootstrap_for("PLAINTEXT"), "alice", SCRAM_PASSWORD)
    yield broker
    broker.stop()
    text = "".join(broker.lines)
    for secret in ("alice-secret", "admin-secret", SCRAM_PASSWORD, "wrong-password"):
        assert secret not in text  # secrets never reach a log line


def _credentials(mechanism):
    return ("alice", "alice-secret") if mechanism == "PLAIN" else ("alice", SCRAM_PASSWORD)


def _client_config(broker, pki, protocol, mechanism, **extra):
    user, password = _credentials(mechanism)
    config = confluent_config(broker.bootstrap_for(protocol), protocol, mechanism, user, password, **extra)
    if protocol == "SASL_SSL":
        config["ssl.ca.location"] = str(pki.ca_path)
    return config


@pytest.mark.parametrize("protocol", ["SASL_PLAINTEXT", "SASL_SSL"])
@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_confluent_produces_and_consumes(sasl_broker, pki, protocol, mechanism, topic_name):
    round_trips.confluent(_client_config(sasl_broker, pki, protocol, mechanism), topic_name, 20)


@pytest.mark.parametrize("protocol, mechanism", [("SASL_PLAINTEXT", "PLAIN"), ("SASL_SSL", "SCRAM-SHA-512"),
                                                 ("SASL_PLAINTEXT", "SCRAM-SHA-256")])
def test_kafka_python(sasl_broker, pki, protocol, mechanism, topic_name):
    user, password = _credentials(mechanism)
    common = dict(bootstrap_servers=sasl_broker.bootstrap_for(protocol), security_protocol=protocol,
                  sasl_mechanism=mechanism, sasl_plain_username=user, sasl_plain_password=password)
    if protocol == "SASL_SSL":
        common["ssl_cafile"] = str(pki.ca_path)
    round_trips.kafka_python(common, topic_name, 10)


@pytest.mark.parametrize("protocol, mechanism", [("SASL_SSL", "PLAIN"), ("SASL_PLAINTEXT", "SCRAM-SHA-512"),
                                                 ("SASL_SSL", "SCRAM-SHA-256")])
async def test_aiokafka(sasl_broker, pki, protocol, mechanism, topic_name):
    user, password = _credentials(mechanism)
    common = dict(bootstrap_servers=sasl_broker.bootstrap_for(protocol), security_protocol=protocol,
                  sasl_mechanism=mechanism, sasl_plain_username=user, sasl_plain_password=password)
    if protocol == "SASL_SSL":
        common["ssl_context"] = ssl.create_default_context(cafile=str(pki.ca_path))
    await round_trips.aiokafka(common, topic_name, 10)


@pytest.mark.parametrize("protocol, mechanism", [("SASL_SSL", "SCRAM-SHA-256"), ("SASL_PLAINTEXT", "PLAIN")])
def test_java_client(sasl_broker, pki, tmp_path, protocol, mechanism, topic_name):
    user, password = _credentials(mechanism)
    client = tmp_path / "client.properties"
    client.write_text(java_client_properties(protocol, mechanism, user, password,
                                             pki.ca_path if protocol == "SASL_SSL" else None))
    round_trips.java_perf_tools(sasl_broker.bootstrap_for(protocol), client, topic_name, 1000)


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_a_wrong_password_is_an_authentication_error_for_the_client(sasl_broker, pki, mechanism):
    errors = []
    config = _client_config(sasl_broker, pki, "SASL_PLAINTEXT", mechanism, error_cb=errors.append, log_level=0)
    config["sasl.password"] = "wrong-password"
    producer = Producer(config)
    producer.produce("never", b"x")
    deadline = 100
    while not any(e.code() == KafkaError._AUTHENTICATION for e in errors) and deadline:
        producer.poll(0.1)
        deadline -= 1
    failure = next(e for e in errors if e.code() == KafkaError._AUTHENTICATION)
    assert "Authentication failed" in failure.str()
    # the broker still serves the right password
    AdminClient(_client_config(sasl_broker, pki, "SASL_PLAINTEXT", mechanism)).list_topics(timeout=10)


def test_failed_login_answers_once_logs_once_and_closes_and_hides_whether_the_user_exists(sasl_broker):
    answers = []
    for user in ("alice", "nobody"):
        wire = SaslWire(sasl_broker.bootstrap_for("SASL_PLAINTEXT"))
        host, port = wire.sock.getsockname()[:2]
        this_connection = f"Failed authentication with {host}:{port} "
        assert wire.handshake("PLAIN").error_code == 0
        answer = wire.authenticate(plain_token(user, "wrong-password"))
        assert answer.error_code == Errors.SASL_AUTHENTICATION_FAILED
        assert wire.closed()
        wire.close()
        assert sasl_broker.wait_for_log(this_connection)
        assert sum(this_connection in line for line in sasl_broker.lines) == 1
        answers.append(answer.error_message)
    assert answers[0] == answers[1] == "Authentication failed: Invalid username or password"


def test_requests_before_authentication_close_the_connection(sasl_broker):
    wire = SaslWire(sasl_broker.bootstrap_for("SASL_PLAINTEXT"))
    assert wire.api_versions().error_code == 0  # allowed before the handshake
    assert wire.metadata() == CLOSED
    wire.close()
    wire = SaslWire(sasl_broker.bootstrap_for("SASL_PLAINTEXT"))
    assert wire.handshake("PLAIN").error_code == 0
    assert wire.metadata() == CLOSED  # after the handshake only SaslAuthenticate
    wire.close()
    wire = SaslWire(sasl_broker.bootstrap_for("SASL_PLAINTEXT"))
    answer = wire.handshake("GSSAPI")
    assert (answer.error_code, answer.mechanisms) == (Errors.UNSUPPORTED_SASL_MECHANISM, MECHANISMS)
    assert wire.closed()
    wire.close()


def test_after_authentication_everything_is_served_and_sasl_requests_are_out_of_place(sasl_broker):
    wire = SaslWire(sasl_broker.bootstrap_for("SASL_PLAINTEXT"))
    assert wire.handshake("PLAIN").error_code == 0
    answer = wire.authenticate(plain_token("alice", "alice-secret"), version=1)
    assert (answer.error_code, answer.auth_bytes, answer.session_lifetime_ms) == (0, b"", 0)
    assert wire.metadata().brokers[0].port == sasl_broker.ports["SASL_PLAINTEXT"]
    assert wire.handshake("PLAIN").error_code == Errors.ILLEGAL_SASL_STATE
    wire.close()
    plain = SaslWire(sasl_broker.bootstrap_for("PLAINTEXT"))
    assert plain.handshake("PLAIN").error_code == Errors.ILLEGAL_SASL_STATE
    plain.close()


def test_sasl_handshake_v0_is_followed_by_bare_tokens(sasl_broker):
    wire = SaslWire(sasl_broker.bootstrap_for("SASL_PLAINTEXT"))
    assert wire.handshake("PLAIN", version=0).error_code == 0
    assert wire.raw_token(plain_token("admin", "admin-secret")) == b""
    assert wire.metadata().brokers  # authenticated
    wire.close()
    wire = SaslWire(sasl_broker.bootstrap_for("SASL_PLAINTEXT"))
    assert wire.handshake("PLAIN", version=0).error_code == 0
    assert wire.raw_token(plain_token("admin", "wrong-password")) == CLOSED
    wire.close()
