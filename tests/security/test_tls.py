"""TLS listeners (Kafka's PEM settings) with clients nobody here wrote: confluent-kafka, kafka-python,
aiokafka and the Java client; with and without client certificates."""

from __future__ import annotations

import ssl

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from weir.client.errors import SslAuthenticationError

from tests.security import round_trips
from tests.security.brokers import ConfiguredBroker, listeners_setting
from weir.testing.certs import Pki


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    pki = Pki(tmp_path_factory.mktemp("pki"))
    pki.broker = pki.issue("broker", [("O", "Weir tests"), ("CN", "localhost")], server=True, key_password="kpw")
    pki.alice = pki.issue("alice", [("C", "US"), ("O", "Weir, Inc"), ("OU", "eng"), ("CN", "alice")])
    return pki


@pytest.fixture(scope="module")
def tls_broker(pki, tmp_path_factory):
    """PLAINTEXT, SSL without client auth (inline PEM), and MTLS requiring a client certificate."""
    settings, ports = listeners_setting({"PLAINTEXT": "PLAINTEXT", "SSL": "SSL", "MTLS": "SSL"})
    settings.update({
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(pki.broker.keystore_path),
        "ssl.key.password": "kpw",
        "listener.name.ssl.ssl.keystore.location": str(pki.broker.keystore_path),
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(pki.ca_path),
        "listener.name.mtls.ssl.client.auth": "required",
        "ssl.enabled.protocols": "TLSv1.2,TLSv1.3",
    })
    broker = ConfiguredBroker(tmp_path_factory.mktemp("tls"), settings, ports).start()
    yield broker
    broker.stop()


def _confluent(broker, listener, pki, cert=None, **extra):
    config = {"bootstrap.servers": broker.bootstrap_for(listener), "security.protocol": "SSL",
              "ssl.ca.location": str(pki.ca_path), **extra}
    if cert is not None:
        config.update({"ssl.certificate.location": str(cert.cert_path), "ssl.key.location": str(cert.key_path)})
    return config


@pytest.mark.parametrize("listener, with_cert", [("SSL", False), ("MTLS", True)])
def test_confluent_produces_and_consumes_over_tls(tls_broker, pki, listener, with_cert, topic_name):
    config = _confluent(tls_broker, listener, pki, pki.alice if with_cert else None)
    round_trips.confluent(config, topic_name, 50)
    brokers = AdminClient(config).list_topics(timeout=10).brokers
    assert [(b.host, b.port) for b in brokers.values()] == [("127.0.0.1", tls_broker.ports[listener])]


def test_required_client_auth_refuses_a_client_without_a_certificate(tls_broker, pki):
    admin = AdminClient(_confluent(tls_broker, "MTLS", pki, log_level=0))
    with pytest.raises(KafkaException):
        admin.list_topics(timeout=3)
    assert tls_broker.wait_for_log("SSL handshake failed")
    # and the broker serves others meanwhile
    AdminClient(_confluent(tls_broker, "MTLS", pki, pki.alice)).list_topics(timeout=10)


def test_a_client_that_does_not_trust_the_broker_fails_and_plaintext_on_tls_is_refused(tls_broker, pki, tmp_path):
    other = Pki(tmp_path / "other")
    errors = []
    admin = AdminClient({"bootstrap.servers": tls_broker.bootstrap_for("SSL"), "security.protocol": "SSL",
                         "ssl.ca.location": str(other.ca_path), "error_cb": errors.append})
    with pytest.raises(KafkaException):
        admin.list_topics(timeout=3)
    plain = AdminClient({"bootstrap.servers": tls_broker.bootstrap_for("SSL"), "error_cb": errors.append})
    with pytest.raises(KafkaException):
        plain.list_topics(timeout=3)


def test_kafka_python_over_tls_with_a_client_certificate(tls_broker, pki, topic_name):
    common = dict(bootstrap_servers=tls_broker.bootstrap_for("MTLS"), security_protocol="SSL",
                  ssl_cafile=str(pki.ca_path), ssl_certfile=str(pki.alice.cert_path),
                  ssl_keyfile=str(pki.alice.key_path))
    round_trips.kafka_python(common, topic_name, 20)


async def test_aiokafka_over_tls(tls_broker, pki, topic_name):
    context = ssl.create_default_context(cafile=str(pki.ca_path))
    await round_trips.aiokafka(dict(bootstrap_servers=tls_broker.bootstrap_for("SSL"), security_protocol="SSL",
                                    ssl_context=context), topic_name, 20)


async def test_our_client_over_tls_with_and_without_a_client_certificate(tls_broker, pki, topic_name):
    context = ssl.create_default_context(cafile=str(pki.ca_path))
    await round_trips.ours(tls_broker.bootstrap_for("SSL"), topic_name, security_protocol="SSL", ssl_context=context)
    with_cert = ssl.create_default_context(cafile=str(pki.ca_path))
    with_cert.load_cert_chain(str(pki.alice.cert_path), str(pki.alice.key_path))
    await round_trips.ours(tls_broker.bootstrap_for("MTLS"), f"{topic_name}-mtls", security_protocol="SSL",
                           ssl_context=with_cert)
    with pytest.raises(SslAuthenticationError):  # a CA the broker's certificate does not chain to: not retried
        await round_trips.ours(tls_broker.bootstrap_for("SSL"), f"{topic_name}-x", security_protocol="SSL",
                               ssl_context=ssl.create_default_context(cafile=str(Pki(pki.directory / "x").ca_path)))


def test_java_tools_over_tls_with_a_pem_client_keystore(tls_broker, pki, tmp_path, topic_name):
    """kafka-producer-perf-test and kafka-consumer-perf-test (the Java client) with Kafka's PEM client settings."""
    client = tmp_path / "client.properties"
    client.write_text(f"security.protocol=SSL\nssl.truststore.type=PEM\nssl.truststore.location={pki.ca_path}\n"
                      f"ssl.keystore.type=PEM\nssl.keystore.location={pki.alice.keystore_path}\n")
    round_trips.java_perf_tools(tls_broker.bootstrap_for("MTLS"), client, topic_name, 2000)
