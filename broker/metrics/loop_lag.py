"""Event-loop lag (Weir only), kept while the metrics listener is on.

One event loop does all of a Weir broker's work, so every request waits while the loop runs
something else or waits for a CPU. A task sleeps ``INTERVAL_S`` and records how much later than
asked it woke: ``weir_event_loop_lag_ms``, a histogram, and ``weir_event_loop_lag_max_ms``, the
worst since start. Kafka has no such figure (its nearest are the network and request handler
threads' idle percentages). Issue 23 found the broker's stalls on a loaded machine this way:
most of the lag was time the loop thread waited for a CPU, not time it ran.
"""

from __future__ import annotations

import asyncio
import time
from bisect import bisect_left
from collections.abc import Iterator
from itertools import accumulate

from prometheus_client.core import GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector

INTERVAL_S = 0.05  # 20 wake-ups a second: cheap, and finer than the stalls worth seeing
BUCKETS_MS = (1.0, 5.0, 10.0, 25.0, 50.0, 100.0, 250.0, 1000.0)  # +Inf is implied


class LoopLagMonitor(Collector):
    def __init__(self) -> None:
        self.buckets = [0] * (len(BUCKETS_MS) + 1)  # not cumulative; the last is +Inf
        self.sum_ms = 0.0
        self.max_ms = 0.0
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None

    def record(self, lag_ms: float) -> None:
        self.buckets[bisect_left(BUCKETS_MS, lag_ms)] += 1
        self.sum_ms += lag_ms
        self.max_ms = max(self.max_ms, lag_ms)

    async def _run(self) -> None:
        while True:
            asked = time.monotonic() + INTERVAL_S
            await asyncio.sleep(INTERVAL_S)
            self.record(max(time.monotonic() - asked, 0.0) * 1000)

    def collect(self) -> Iterator[Metric]:
        labels = [str(bound) for bound in BUCKETS_MS] + ["+Inf"]
        histogram = HistogramMetricFamily(
            "weir_event_loop_lag_ms", f"How late the event loop ran a {INTERVAL_S * 1000:g} ms timer, in ms")
        histogram.add_metric([], list(zip(labels, accumulate(self.buckets), strict=True)), self.sum_ms)
        yield histogram
        yield GaugeMetricFamily("weir_event_loop_lag_max_ms", "The longest event-loop lag since start, in ms",
                                value=self.max_ms)
