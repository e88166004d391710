"""A rate measured over sampled windows, as Kafka's ``Rate`` over a ``SampledStat`` measures it
for quotas: ``samples`` windows of ``window_ms`` each; a new window starts at the first record
past the current one's end; windows older than ``samples * window_ms`` are reset. The elapsed
time a rate divides by counts at least ``samples - 1`` whole windows, so a new client's first
bytes are spread over ten seconds (by default) rather than over the few milliseconds it has
been sending, which is what lets a burst through before throttling starts.
"""

from __future__ import annotations


class SampledRate:
    __slots__ = ("_samples", "_window_ms", "_starts", "_values", "_current")

    def __init__(self, samples: int, window_ms: int, now_ms: int):
        self._samples = samples
        self._window_ms = window_ms
        self._starts = [now_ms] * samples
        self._values = [0.0] * samples
        self._current = 0

    def record(self, value: float, now_ms: int) -> None:
        if now_ms >= self._starts[self._current] + self._window_ms:
            self._current = (self._current + 1) % self._samples
            self._starts[self._current] = now_ms
            self._values[self._current] = 0.0
        self._values[self._current] += value

    def _purge(self, now_ms: int) -> None:
        expire_before = now_ms - self._samples * self._window_ms
        for index, start in enumerate(self._starts):
            if start <= expire_before:  # Kafka's purgeObsoleteSamples: reset to start now
                self._starts[index] = now_ms
                self._values[index] = 0.0

    def window_ms(self, now_ms: int) -> int:
        """The time the rate divides by (Kafka's Rate.windowSize)."""
        self._purge(now_ms)
        elapsed = now_ms - min(self._starts)
        full_windows = elapsed // self._window_ms
        if full_windows < self._samples - 1:
            elapsed += (self._samples - 1 - full_windows) * self._window_ms
        return max(elapsed, 1)

    def per_second(self, now_ms: int) -> float:
        window = self.window_ms(now_ms)  # purges first
        return sum(self._values) * 1000.0 / window


class TokenBucket:
    """Kafka's TokenBucket, which controller_mutation_rate is measured with (KIP-599): it holds up to
    quota x samples x window seconds of tokens (the burst), starts full, refills at the quota per
    second, and each mutation (a partition created or deleted) takes one; below zero the client is
    over its quota until the debt is refilled."""

    __slots__ = ("_burst_seconds", "tokens", "_last_ms")

    def __init__(self, samples: int, window_ms: int):
        self._burst_seconds = samples * window_ms / 1000
        self.tokens: float | None = None  # full at the first use
        self._last_ms = 0

    def measure(self, quota: float, now_ms: int) -> float:
        burst = quota * self._burst_seconds
        if self.tokens is None:
            self.tokens = burst
        else:
            self.tokens = min(burst, self.tokens + quota * (now_ms - self._last_ms) / 1000)
        self._last_ms = now_ms
        return self.tokens

    def record(self, quota: float, value: float, now_ms: int) -> None:
        self.tokens = min(quota * self._burst_seconds, self.measure(quota, now_ms) - value)
