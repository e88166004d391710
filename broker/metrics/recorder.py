"""What the hot path records: request counts and latencies, bytes in and out per topic.

Plain ints and lists on the event loop, no locks (one owner: the loop), so a
request pays one dict lookup, a bisect and a few additions; the Prometheus
families are built from these numbers only when someone scrapes. With the
metrics listener off, ``NULL_RECORDER`` takes the calls and does nothing.
"""

from __future__ import annotations

from bisect import bisect_left

#: Upper bounds (ms) of the request latency buckets; +Inf is implied.
LATENCY_BUCKETS_MS = (0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 25.0, 50.0, 100.0, 250.0, 500.0,
                      1000.0, 2500.0, 5000.0, 10000.0, 30000.0)


class RequestStats:
    """One API's latency histogram (Kafka's TotalTimeMs) and its count per version."""

    __slots__ = ("buckets", "sum_ms", "by_version")

    def __init__(self):
        self.buckets = [0] * (len(LATENCY_BUCKETS_MS) + 1)  # not cumulative; the last is +Inf
        self.sum_ms = 0.0
        self.by_version: dict[int, int] = {}


class MetricsRecorder:
    enabled = True

    def __init__(self, served_versions):
        """``served_versions(api_key)`` gives (min, max) or None; only those are recorded,
        so a client sending made-up keys or versions cannot grow the label set."""
        self._served_versions = served_versions
        self.requests: dict[int, RequestStats] = {}
        self._known: dict[tuple[int, int], RequestStats | None] = {}
        self.bytes_in: dict[str, int] = {}
        self.bytes_out: dict[str, int] = {}

    def request(self, api_key: int, version: int, seconds: float) -> None:
        try:
            stats = self._known[(api_key, version)]
        except KeyError:
            stats = self._learn(api_key, version)
        if stats is None:
            return
        ms = seconds * 1000.0
        stats.buckets[bisect_left(LATENCY_BUCKETS_MS, ms)] += 1
        stats.sum_ms += ms
        stats.by_version[version] += 1

    def _learn(self, api_key: int, version: int) -> RequestStats | None:
        served = self._served_versions(api_key)
        stats = None
        if served is not None and served[0] <= version <= served[1]:
            stats = self.requests.setdefault(api_key, RequestStats())
            stats.by_version.setdefault(version, 0)
        self._known[(api_key, version)] = stats
        return stats

    def produced(self, topic: str, size: int) -> None:
        """A batch of ``size`` bytes was appended to ``topic`` (BytesInPerSec)."""
        self.bytes_in[topic] = self.bytes_in.get(topic, 0) + size

    def fetched(self, responses) -> None:
        """Count the record bytes of a Fetch answer per topic (BytesOutPerSec)."""
        bytes_out = self.bytes_out
        for topic_response in responses:
            size = 0
            for partition in topic_response.partitions:
                if partition.records:
                    size += len(partition.records)
            if size:
                bytes_out[topic_response.topic] = bytes_out.get(topic_response.topic, 0) + size

    def forget_topics(self, keep) -> None:
        """Drop the byte counters of deleted topics, as Kafka removes their metrics."""
        for counters in (self.bytes_in, self.bytes_out):
            for topic in [t for t in counters if t not in keep]:
                del counters[topic]


class NullRecorder:
    """Takes the hooks' calls when the metrics listener is off."""

    enabled = False

    def request(self, api_key: int, version: int, seconds: float) -> None:
        pass

    def produced(self, topic: str, size: int) -> None:
        pass

    def fetched(self, responses) -> None:
        pass


NULL_RECORDER = NullRecorder()
