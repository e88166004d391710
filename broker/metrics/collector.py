"""Builds the Prometheus families at scrape time, on the event loop.

Counters come from the ``MetricsRecorder``; gauges are read from the owners of
the state (transaction coordinator, group coordinator, log store, server) when
the scrape runs, so nothing is kept twice. Names map to Kafka's JMX MBeans the
way the JMX exporter spells them (see ``broker/metrics/__init__.py``).
"""

from __future__ import annotations

from itertools import accumulate

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.registry import Collector

from weir.protocol.api_keys import ApiKey

from ..group.classic import GroupState
from ..txn.state import COMPLETE, TxnState
from .recorder import LATENCY_BUCKETS_MS, MetricsRecorder

_BUCKET_LABELS = [str(bound) for bound in LATENCY_BUCKETS_MS] + ["+Inf"]
_OPEN_TXN_STATES = frozenset(TxnState) - COMPLETE - {TxnState.DEAD}


def request_name(api_key: int) -> str:
    """Kafka's name for an API in RequestMetrics: ``OFFSET_FOR_LEADER_EPOCH`` -> ``OffsetForLeaderEpoch``."""
    return "".join(word.capitalize() for word in ApiKey(api_key).name.split("_"))


class BrokerCollector(Collector):
    def __init__(self, context, recorder: MetricsRecorder, server=None):
        self.context = context
        self.recorder = recorder
        self.server = server

    def collect(self):
        yield from self._requests()
        yield from self._topic_bytes()
        yield from self._transactions()
        yield self._lso_lag()
        yield self._groups()
        yield from self._connections()
        yield from self._log_dir()
        yield from self._quotas()

    def _requests(self):
        requests = CounterMetricFamily(
            "kafka_network_requestmetrics_requests", "Requests answered, per API and version (RequestsPerSec)",
            labels=["request", "version"])
        latency = HistogramMetricFamily(
            "kafka_network_requestmetrics_totaltimems",
            "Time from a request's dispatch to its encoded response, in ms (TotalTimeMs)", labels=["request"])
        for api_key, stats in sorted(self.recorder.requests.items()):
            name = request_name(api_key)
            for version, count in sorted(stats.by_version.items()):
                requests.add_metric([name, str(version)], count)
            latency.add_metric([name], list(zip(_BUCKET_LABELS, accumulate(stats.buckets), strict=True)), stats.sum_ms)
        yield requests
        yield latency

    def _topic_bytes(self):
        recorder = self.recorder
        recorder.forget_topics(self.context.logs.topics)
        for name, counts, doc in (
                ("bytesin", recorder.bytes_in, "Record batch bytes appended by Produce, per topic (BytesInPerSec)"),
                ("bytesout", recorder.bytes_out, "Record batch bytes sent by Fetch, per topic (BytesOutPerSec)")):
            family = CounterMetricFamily(f"kafka_server_brokertopicmetrics_{name}", doc, labels=["topic"])
            for topic, size in sorted(counts.items()):
                family.add_metric([topic], size)
            yield family

    def _transactions(self):
        open_starts = [metadata.start_ms for metadata in self.context.txn.txns.values()
                       if metadata.state in _OPEN_TXN_STATES]
        now_ms = self.context.clock.now_ms()
        yield GaugeMetricFamily("weir_txn_open_transactions",
                                "Transactions begun and not yet completed (Ongoing or Prepare*)",
                                value=len(open_starts))
        yield GaugeMetricFamily("weir_txn_oldest_open_transaction_age_ms",
                                "Age of the oldest open transaction (0 when none is open)",
                                value=max(now_ms - min(open_starts), 0) if open_starts else 0)

    def _lso_lag(self):
        # Only partitions held back by an open transaction: bounded by the open
        # transactions' partitions, not by the number of partitions served.
        family = GaugeMetricFamily(
            "weir_log_last_stable_offset_lag",
            "High watermark minus last stable offset, for partitions where it is not zero",
            labels=["topic", "partition"])
        for topic in self.context.logs.topics.values():
            for partition in topic.partitions:
                lag = partition.high_watermark - partition.last_stable_offset
                if lag:
                    family.add_metric([topic.name, str(partition.index)], lag)
        return family

    def _groups(self):
        counts = dict.fromkeys(GroupState, 0)
        for group in self.context.groups.groups.values():
            counts[group.state] += 1
        family = GaugeMetricFamily("kafka_coordinator_group_groupmetadatamanager_numgroups",
                                   "Classic groups per state (NumGroups<State>)", labels=["state"])
        for state, count in counts.items():
            family.add_metric([state.value], count)
        return family

    def _connections(self):
        if self.server is None:
            return
        yield GaugeMetricFamily("kafka_server_socket_server_metrics_connection_count",
                                "Open client connections", value=self.server.connection_count)
        yield GaugeMetricFamily("kafka_network_socketserver_memorypoolused",
                                "Bytes held for connections: queued requests and unsent responses",
                                value=self.server.bytes_held)

    def _log_dir(self):
        state = self.context.logs.disk
        yield GaugeMetricFamily("kafka_log_logmanager_offlinelogdirectorycount",
                                "Data directories whose writes are failing (0 or 1: Weir has one)",
                                value=1 if state.offline else 0)
        yield CounterMetricFamily("weir_log_dir_write_failures", "Writes to the data directory that failed "
                                  "(answered KAFKA_STORAGE_ERROR)", value=state.failures_total)

    def _quotas(self):
        """Per measured quota client, as Kafka's type=Produce/Fetch sensors with user and client-id tags
        (broker/quota/manager.py keys them: an empty tag where the quota covers every value of it)."""
        labels = ["user", "client_id"]
        families = {kind: (GaugeMetricFamily(f"kafka_server_{name}_byte_rate",
                                             f"{name.capitalize()} bytes per second, as the quota measures them",
                                             labels=labels),
                           GaugeMetricFamily(f"weir_quota_{kind}", f"The {kind} quota the client is held to",
                                             labels=labels),
                           CounterMetricFamily(f"kafka_server_{name}_throttle_time",
                                               "Throttle time the quota gave the client, in ms", labels=labels),
                           CounterMetricFamily(f"weir_quota_{name}_throttled_responses",
                                               "Answers that carried a throttle time", labels=labels))
                    for kind, name in (("producer_byte_rate", "produce"), ("consumer_byte_rate", "fetch"))}
        now_ms = self.context.clock.now_ms()
        for kind, user, client, quota, rate, throttled, throttle_ms in self.context.quotas.snapshot(now_ms):
            if kind not in families:
                continue
            byte_rate, limit, throttle_time, responses = families[kind]
            byte_rate.add_metric([user, client], rate)
            limit.add_metric([user, client], quota)
            throttle_time.add_metric([user, client], throttle_ms)
            responses.add_metric([user, client], throttled)
        for family_set in families.values():
            yield from family_set
