"""TLS listeners (Kafka's PEM settings) with clients nobody here wrote: confluent-kafka, kafka-python,
aiokafka and the Java client; with and without client certificates."""

from __future__ import annotations

import ssl

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from confluent_kafka import Consumer, KafkaException, Producer
from confluent_kafka.admin import AdminClient
from kafka import KafkaConsumer, KafkaProducer

from tests.security.brokers import ConfiguredBroker, listeners_setting
from tests.security.certs import Pki


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


def _consume_confluent(config, topic, count):
    consumer = Consumer({**config, "group.id": f"g-{topic}", "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    values = []
    try:
        for _ in range(200):
            message = consumer.poll(0.2)
            if message is not None and not message.error():
                values.append(message.value())
                if len(values) == count:
                    break
    finally:
        consumer.close()
    return values


@pytest.mark.parametrize("listener, with_cert", [("SSL", False), ("MTLS", True)])
def test_confluent_produces_and_consumes_over_tls(tls_broker, pki, listener, with_cert, topic_name):
    config = _confluent(tls_broker, listener, pki, pki.alice if with_cert else None)
    producer = Producer(config)
    for i in range(50):
        producer.produce(topic_name, f"v{i}".encode() * 100)
    assert producer.flush(15) == 0
    values = _consume_confluent(config, topic_name, 50)
    assert values == [f"v{i}".encode() * 100 for i in range(50)]
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
    producer = KafkaProducer(**common)
    for i in range(20):
        producer.send(topic_name, f"kp{i}".encode())
    producer.flush(15)
    producer.close()
    consumer = KafkaConsumer(topic_name, auto_offset_reset="earliest", consumer_timeout_ms=10000, **common)
    values = [message.value for _, message in zip(range(20), consumer)]
    consumer.close()
    assert values == [f"kp{i}".encode() for i in range(20)]


async def test_aiokafka_over_tls(tls_broker, pki, topic_name):
    context = ssl.create_default_context(cafile=str(pki.ca_path))
    producer = AIOKafkaProducer(bootstrap_servers=tls_broker.bootstrap_for("SSL"), security_protocol="SSL",
                                ssl_context=context)
    await producer.start()
    try:
        for i in range(20):
            await producer.send_and_wait(topic_name, f"ak{i}".encode())
    finally:
        await producer.stop()
    consumer = AIOKafkaConsumer(topic_name, bootstrap_servers=tls_broker.bootstrap_for("SSL"),
                                security_protocol="SSL", ssl_context=context, auto_offset_reset="earliest")
    await consumer.start()
    try:
        values = [(await consumer.getone()).value for _ in range(20)]
    finally:
        await consumer.stop()
    assert values == [f"ak{i}".encode() for i in range(20)]


def test_java_tools_over_tls_with_a_pem_client_keystore(tls_broker, pki, tmp_path, topic_name):
    """kafka-producer-perf-test and kafka-consumer-perf-test (the Java client) with Kafka's PEM client settings."""
    from tests.tools.tools import CONSUMER_PERF, PRODUCER_PERF, run_tool
    client = tmp_path / "client.properties"
    client.write_text(f"security.protocol=SSL\nssl.truststore.type=PEM\nssl.truststore.location={pki.ca_path}\n"
                      f"ssl.keystore.type=PEM\nssl.keystore.location={pki.alice.keystore_path}\n")
    bootstrap = tls_broker.bootstrap_for("MTLS")
    produced = run_tool(PRODUCER_PERF, "--bootstrap-server", bootstrap, "--topic", topic_name, "--num-records", "2000",
                        "--record-size", "100", "--throughput", "-1", "--command-config", str(client))
    assert produced.returncode == 0, produced.stderr[-3000:]
    assert "2000 records sent" in produced.stdout
    consumed = run_tool(CONSUMER_PERF, "--bootstrap-server", bootstrap, "--topic", topic_name, "--num-records", "2000",
                        "--group", f"perf-{topic_name}", "--timeout", "30000", "--command-config", str(client))
    assert consumed.returncode == 0, consumed.stderr[-3000:]
    header, values = [line.split(", ") for line in consumed.stdout.strip().splitlines()[-2:]]
    assert dict(zip(header, values))["data.consumed.in.nMsg"] == "2000"
