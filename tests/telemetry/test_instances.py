"""Client instances and the receiver on a manual clock: the timing rules past what the
differential tests can wait for, expiry, and how pushed points become Prometheus samples."""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from opentelemetry.proto.metrics.v1 import metrics_pb2

from weir.broker.clock import ManualClock
from weir.broker.telemetry.instances import CACHE_EXPIRY_MS, ClientInstances, instance_id_text
from weir.broker.telemetry.collector import TelemetryCollector
from weir.broker.telemetry.receiver import TelemetryReceiver, decode
from weir.broker.telemetry.subscriptions import ClientMetricsConfigs
from weir.protocol.compression import Compression, compress
from weir.protocol.errors import Errors, KafkaError

from .wire import ZERO, otlp_payload

CLIENT = {"client_id": "app", "client_software_name": "apache-kafka-java", "client_software_version": "4.4.0",
          "client_source_address": "127.0.0.1", "client_source_port": "50000"}


@pytest.fixture
def instances(tmp_path):
    configs = ClientMetricsConfigs(tmp_path)
    configs.replace("java", {"metrics": "org.apache.kafka.producer.", "interval.ms": "1000",
                             "match": "client_software_name=apache-kafka-java, client_software_version=4\\..*"})
    configs.replace("other", {"metrics": "*", "interval.ms": "500", "match": "client_id=someone-else"})
    return ClientInstances(configs, max_bytes=1000)


def test_selectors_and_intervals(instances):
    connection = object()
    got = instances.get_subscription(ZERO, CLIENT, connection, now_ms=10_000)
    assert (got.metrics, got.interval_ms) == (["org.apache.kafka.producer."], 1000)
    assert got.client["client_instance_id"] == instance_id_text(got.instance_id)
    python = instances.get_subscription(ZERO, {**CLIENT, "client_software_name": "confluent-kafka-python"},
                                        connection, now_ms=10_000)
    assert (python.metrics, python.interval_ms) == ([], 300_000)  # no match: nothing, at the default interval


def test_push_and_get_follow_the_interval(instances):
    connection = object()
    got = instances.get_subscription(ZERO, CLIENT, connection, now_ms=10_000)
    push = instances.check_push
    push(got.instance_id, got.subscription_id, False, 0, 10, CLIENT, connection, now_ms=10_001)  # right after Get
    with pytest.raises(KafkaError) as early:
        push(got.instance_id, got.subscription_id, False, 0, 10, CLIENT, connection, now_ms=10_999)
    assert early.value.code == Errors.THROTTLING_QUOTA_EXCEEDED
    push(got.instance_id, got.subscription_id, False, 0, 10, CLIENT, connection, now_ms=11_001)
    with pytest.raises(KafkaError) as get_early:
        instances.get_subscription(got.instance_id, CLIENT, connection, now_ms=11_500)
    assert get_early.value.code == Errors.THROTTLING_QUOTA_EXCEEDED
    assert instances.get_subscription(got.instance_id, CLIENT, connection, now_ms=12_001) is got


def test_instances_expire_and_go_with_their_connection(instances):
    first, second = object(), object()
    a = instances.get_subscription(ZERO, CLIENT, first, now_ms=0)
    b = instances.get_subscription(ZERO, CLIENT, second, now_ms=CACHE_EXPIRY_MS - 1)
    instances.forget_connection(second)
    assert set(instances.instances) == {a.instance_id}
    instances.get_subscription(ZERO, CLIENT, second, now_ms=CACHE_EXPIRY_MS + 1)  # a's 60 s are over
    assert a.instance_id not in instances.instances and b.instance_id not in instances.instances


def test_a_change_gives_a_new_subscription_id(instances, tmp_path):
    connection = object()
    got = instances.get_subscription(ZERO, CLIENT, connection, now_ms=0)
    instances.configs.replace("java", {"metrics": "org.apache.kafka.producer.", "interval.ms": "2000"})
    again = instances.get_subscription(got.instance_id, CLIENT, connection, now_ms=1)
    assert (again.interval_ms, again.subscription_id != got.subscription_id) == (2000, True)
    reloaded = ClientMetricsConfigs(tmp_path)
    reloaded.load()
    assert reloaded.texts == instances.configs.texts


def _samples(receiver) -> dict:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(TelemetryCollector(receiver, ManualClock(start_ms=0)))
    text = generate_latest(registry).decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def test_deltas_add_up_and_cumulatives_replace():
    receiver = TelemetryReceiver()
    for value in (3.0, 4.0):
        receiver.receive("id-1", decode(0, otlp_payload(value=value, topic="t"), 10_000), 1000, now_ms=0)
        receiver.receive("id-1", decode(0, otlp_payload("org.apache.kafka.producer.io.ratio", value, delta=False),
                                        10_000), 1000, now_ms=0)
    samples = _samples(receiver)
    assert samples[("org_apache_kafka_producer_record_send_total",
                    (("client_instance_id", "id-1"), ("topic", "t")))] == 7.0
    assert samples[("org_apache_kafka_producer_io_ratio_total", (("client_instance_id", "id-1"),))] == 4.0
    receiver.expire(CACHE_EXPIRY_MS + 1)
    assert _samples(receiver) == {}


def test_compressed_payloads_are_bounded_after_decompression():
    payload = otlp_payload(name="x" * 5000)
    assert decode(Compression.ZSTD, compress(Compression.ZSTD, payload), 10_000).resource_metrics
    with pytest.raises(KafkaError) as too_large:
        decode(Compression.ZSTD, compress(Compression.ZSTD, payload), 1000)
    assert too_large.value.code == Errors.TELEMETRY_TOO_LARGE


def test_only_kip_714_names_and_one_kind_per_name_are_shown():
    receiver = TelemetryReceiver()
    receiver.receive("id-1", decode(0, otlp_payload("process.open.fds"), 10_000), 1000, now_ms=0)
    receiver.receive("id-1", decode(0, otlp_payload("org.apache.kafka.x", 1.0), 10_000), 1000, now_ms=0)
    receiver.receive("id-2", decode(0, otlp_payload("org.apache.kafka.x", 2.0, delta=False), 10_000), 1000,
                     now_ms=0)
    data = metrics_pb2.MetricsData()
    gauge = data.resource_metrics.add().scope_metrics.add().metrics.add()
    gauge.name = "org.apache.kafka.x"
    gauge.gauge.data_points.add().as_int = 5
    receiver.receive("id-3", data, 1000, now_ms=0)
    assert {name for name, _ in _samples(receiver)} == {"org_apache_kafka_x_total"}
