"""Unmodified clients push their metrics to Weir once a subscription selects them, and the
metrics show on Weir's Prometheus listener; subscriptions survive a restart.

The Java client (Kafka's ProducerPerformance in the tools' shared JVM) and librdkafka
(confluent-kafka) push by default (``enable.metrics.push`` is true in both). Each gets a
subscription of its own, selected by client id, asking for a different metric prefix, so each
series on the listener can only have come from the client it names, and only what was asked for.
"""

from __future__ import annotations

import urllib.request

import pytest
from confluent_kafka import Producer
from prometheus_client.parser import text_string_to_metric_families

from tests.broker_process import BrokerProcess
from tests.support.waiting import wait_until
from tests.tools.tools import run_tool
from weir.testing.settings import free_port

CLIENT_METRICS = "org.apache.kafka.tools.ClientMetricsCommand"
JAVA, RDKAFKA = "telemetry-java", "telemetry-rdkafka"
JAVA_PREFIX, RDKAFKA_PREFIX = "org.apache.kafka.producer.batch.", "org.apache.kafka.producer.request.latency."
TOPIC = "telemetry-pushed"


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    metrics_port = free_port()
    process = BrokerProcess(tmp_path_factory.mktemp("telemetry") / "data",
                            overrides={"metrics.listener": f"127.0.0.1:{metrics_port}"}).start()
    process.metrics_url = f"http://127.0.0.1:{metrics_port}/metrics"
    yield process
    process.stop()


def _tool(broker, *args: str) -> str:
    run = run_tool(CLIENT_METRICS, "--bootstrap-server", broker.bootstrap, *args)
    assert run.returncode == 0, run.stdout + run.stderr
    return run.stdout


def _pushed(broker) -> dict[str, set[str]]:
    """client_instance_id -> the names of the series it pushed, as scraped now."""
    text = urllib.request.urlopen(broker.metrics_url, timeout=10).read().decode()
    found: dict[str, set[str]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if "client_instance_id" in sample.labels:
                found.setdefault(sample.labels["client_instance_id"], set()).add(sample.name)
    return found


def _instances_with(broker, prefix: str) -> dict[str, set[str]]:
    flat = prefix.replace(".", "_")
    return {instance: names for instance, names in _pushed(broker).items() if any(n.startswith(flat) for n in names)}


@pytest.fixture(scope="module")
def subscribed(broker):
    for name, client_id, prefix in ((JAVA, JAVA, JAVA_PREFIX), (RDKAFKA, RDKAFKA, RDKAFKA_PREFIX)):
        assert _tool(broker, "--alter", "--name", name, "--metrics", prefix, "--interval", "500",
                     "--match", f"client_id={client_id}") == f"Altered client metrics config for {name}.\n"
    return broker


def test_java_client_pushes_what_it_was_asked_for(subscribed):
    broker = subscribed
    run = run_tool("org.apache.kafka.tools.ProducerPerformance", "--topic", TOPIC, "--num-records", "20",
                   "--record-size", "10", "--throughput", "10", "--producer-props",
                   f"bootstrap.servers={broker.bootstrap}", f"client.id={JAVA}")
    assert run.returncode == 0, run.stderr
    # its final push (terminating, at close) has arrived once the tool has returned
    pushed = wait_until(lambda: _instances_with(broker, JAVA_PREFIX), "the Java producer's metrics", timeout=60)
    for names in pushed.values():
        assert all(name.startswith(JAVA_PREFIX.replace(".", "_")) for name in names), names
    assert any(name.startswith("org_apache_kafka_producer_batch_size_avg") for names in pushed.values()
               for name in names)


def test_librdkafka_pushes_what_it_was_asked_for(subscribed):
    broker = subscribed
    producer = Producer({"bootstrap.servers": broker.bootstrap, "client.id": RDKAFKA})
    try:
        for _ in range(10):
            producer.produce(TOPIC, b"x" * 10)
        assert producer.flush(30) == 0

        def pushed():
            producer.poll(0.1)
            return _instances_with(broker, RDKAFKA_PREFIX)
        found = wait_until(pushed, "librdkafka's metrics", timeout=60)
    finally:
        producer.flush(10)
    for names in found.values():
        assert all(name.startswith(RDKAFKA_PREFIX.replace(".", "_")) for name in names), names
    assert any(name == "org_apache_kafka_producer_request_latency_avg" for names in found.values() for name in names)


def test_subscriptions_survive_a_restart(subscribed):
    broker = subscribed
    broker.stop()
    broker.start()
    assert set(_tool(broker, "--list").split()) >= {JAVA, RDKAFKA}
    assert _tool(broker, "--describe", "--name", JAVA) == (
        f"Client metrics configs for {JAVA} are:\n  interval.ms=500\n  match=client_id={JAVA}\n"
        f"  metrics={JAVA_PREFIX}\n")
