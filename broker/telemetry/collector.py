"""The metrics clients push (telemetry/receiver.py) as Prometheus families on the metrics listener."""

from __future__ import annotations

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from .receiver import COUNTER, TelemetryReceiver


class TelemetryCollector(Collector):
    """The pushed metrics as Prometheus families, built at scrape time."""

    def __init__(self, receiver: TelemetryReceiver, clock) -> None:
        self.receiver = receiver
        self.clock = clock

    def collect(self):
        self.receiver.expire(self.clock.now_ms())
        by_name: dict[str, list[tuple[str, tuple[tuple[str, str], ...], float]]] = {}
        kinds: dict[str, str] = {}
        for instance_id, series in self.receiver.clients.items():
            for (name, kind), values in series.values.items():
                if kinds.setdefault(name, kind) != kind:
                    continue
                rows = by_name.setdefault(name, [])
                rows.extend((instance_id, labels, value) for labels, value in values.items())
        for name, rows in sorted(by_name.items()):
            kind = kinds[name]
            keys = sorted({key for _, labels, _ in rows for key, _ in labels} - {"client_instance_id"})
            family_type = CounterMetricFamily if kind == COUNTER else GaugeMetricFamily
            family = family_type(name, "Pushed by clients (KIP-714 client telemetry)",
                                 labels=["client_instance_id", *keys])
            for instance_id, labels, value in rows:
                found = dict(labels)
                family.add_metric([instance_id, *(found.get(key, "") for key in keys)], value)
            yield family
