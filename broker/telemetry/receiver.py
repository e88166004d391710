"""The metrics clients push (KIP-714), decoded and shown on the Prometheus listener.

Kafka hands a pushed payload to a ClientTelemetryReceiver plugin and has none built in: with no
plugin it does not advertise GetTelemetrySubscriptions/PushTelemetry in ApiVersions (so clients
never push) and drops what arrives. Weir, deliberately, advertises both and receives the
metrics itself: the payload (an OTLP ``MetricsData``, compressed with the push's compression
type) is decompressed, bounded by ``telemetry.max.bytes`` (TELEMETRY_TOO_LARGE past it) and
parsed with opentelemetry-proto (INVALID_RECORD when it is not OTLP, as Kafka answers a payload
its plugin refuses).

Each client instance's latest values are kept and exported on the metrics listener: the OTLP
name with every character Prometheus does not allow turned into ``_``, labelled
``client_instance_id`` plus the data point's attributes. Gauges and cumulative sums show their
last value; delta sums (the temporality the broker asks for, as Kafka) are added up into
counters. Histograms and summaries are not exported (neither the Java client nor librdkafka
pushes them). Only KIP-714's names (``org.apache.kafka.*``) are kept, so a client cannot shadow
the broker's own families; a name pushed as a counter by one client and a gauge by another is
shown as the kind seen first, so the exposition stays valid. An instance's metrics go when it
has not pushed for max(60 s, 3 push intervals).
"""

from __future__ import annotations

import re
from collections import OrderedDict
from dataclasses import dataclass, field

from typing import TYPE_CHECKING

from weir.protocol.compression import Compression, DecompressedTooLarge, decompress
from weir.protocol.errors import Errors, KafkaError

from .instances import CACHE_EXPIRY_MS, CACHE_MAX_SIZE

if TYPE_CHECKING:
    from opentelemetry.proto.metrics.v1 import metrics_pb2

# protobuf and opentelemetry-proto (~40 ms of a broker's start) are imported by the first push,
# prometheus_client by the metrics listener (TelemetryCollector: telemetry/collector.py)
_NOT_ALLOWED = re.compile(r"[^a-zA-Z0-9_:]")
GAUGE, COUNTER = "gauge", "counter"
KIP_714_PREFIX = "org.apache.kafka."


def prometheus_name(name: str) -> str:
    cleaned = _NOT_ALLOWED.sub("_", name)
    return "_" + cleaned if cleaned[:1].isdigit() else cleaned


@dataclass
class ClientSeries:
    """One client instance's latest values: (name, kind) -> label pairs -> value."""
    values: dict[tuple[str, str], dict[tuple[tuple[str, str], ...], float]] = field(default_factory=dict)
    expires_at_ms: int = 0


def _point_value(point) -> float:
    return float(point.as_double if point.WhichOneof("value") == "as_double" else point.as_int)


def _labels(point) -> tuple[tuple[str, str], ...]:
    pairs = []
    for attribute in point.attributes:
        value = attribute.value
        kind = value.WhichOneof("value")
        pairs.append((prometheus_name(attribute.key), "" if kind is None else str(getattr(value, kind))))
    return tuple(sorted(pairs))


def decode(compression: int, payload: bytes, max_bytes: int) -> metrics_pb2.MetricsData:
    """The pushed MetricsData, or KafkaError (TELEMETRY_TOO_LARGE, INVALID_RECORD)."""
    try:
        raw = decompress(Compression(compression), payload, max_size=max_bytes) if compression else bytes(payload)
    except DecompressedTooLarge:
        raise KafkaError(Errors.TELEMETRY_TOO_LARGE, f"Decompressed telemetry is larger than {max_bytes} bytes") \
            from None
    except Exception as exc:  # a codec's own error: the payload is not what its compression type says
        raise KafkaError(Errors.INVALID_RECORD, f"Telemetry does not decompress: {exc}") from None
    from google.protobuf.message import DecodeError
    from opentelemetry.proto.metrics.v1 import metrics_pb2
    data = metrics_pb2.MetricsData()
    try:
        data.ParseFromString(raw)
    except DecodeError as exc:
        raise KafkaError(Errors.INVALID_RECORD, f"Telemetry is not OTLP MetricsData: {exc}") from None
    return data


class TelemetryReceiver:
    """The one owner of the pushed metrics."""

    def __init__(self) -> None:
        self.clients: OrderedDict[str, ClientSeries] = OrderedDict()

    def receive(self, instance_id: str, data: metrics_pb2.MetricsData, interval_ms: int, now_ms: int) -> None:
        series = self.clients.pop(instance_id, None) or ClientSeries()
        self.clients[instance_id] = series  # the most recent last: expiry looks at the front
        series.expires_at_ms = now_ms + max(CACHE_EXPIRY_MS, 3 * interval_ms)
        for resource_metrics in data.resource_metrics:
            for scope_metrics in resource_metrics.scope_metrics:
                for metric in scope_metrics.metrics:
                    self._take(series, metric)
        while len(self.clients) > CACHE_MAX_SIZE:
            self.clients.popitem(last=False)

    @staticmethod
    def _take(series: ClientSeries, metric) -> None:
        from opentelemetry.proto.metrics.v1 import metrics_pb2  # imported already by decode()
        if not metric.name.startswith(KIP_714_PREFIX):
            return
        name = prometheus_name(metric.name)
        kind = metric.WhichOneof("data")
        if kind == "gauge":
            values = series.values.setdefault((name, GAUGE), {})
            for point in metric.gauge.data_points:
                values[_labels(point)] = _point_value(point)
        elif kind == "sum":
            total = metric.sum
            counted = total.is_monotonic
            values = series.values.setdefault((name, COUNTER if counted else GAUGE), {})
            for point in total.data_points:
                labels = _labels(point)
                if total.aggregation_temporality == metrics_pb2.AGGREGATION_TEMPORALITY_DELTA:
                    values[labels] = values.get(labels, 0.0) + _point_value(point)
                else:
                    values[labels] = _point_value(point)

    def expire(self, now_ms: int) -> None:
        while self.clients:
            instance_id, series = next(iter(self.clients.items()))
            if series.expires_at_ms > now_ms:
                return
            del self.clients[instance_id]
