"""Which quota a client is held to, its measured use, and how long to throttle it.

A client is (user, client id): the user is its principal's name (``ANONYMOUS`` on a listener
without authentication). Its quota of each kind is the first of Kafka's eight levels that sets
one (DefaultQuotaCallback): user and client id, user and default client, user, default user
and client id, default user and default client, default user, client id, default client.
Clients that level covers share one measured rate, keyed as Kafka keys its sensors: by user
and client id where both count, by user alone for a user-only quota, by client id alone for
a client-only one, so a default applies to each user or client on its own.

A byte rate is measured over ``quota.window.num`` windows of ``quota.window.size.seconds``
(rate.py); once a record takes it over the quota, the throttle time is how long the client
must stay quiet for the rate to come back to it: (rate - quota) / quota x the measured window,
as Kafka's QuotaUtils.throttleTime computes it.

controller_mutation_rate is a token bucket (rate.py), as KIP-599 measures it: the partitions a
CreateTopics, CreatePartitions or DeleteTopics creates or deletes take tokens; from the versions
where Kafka enforces it strictly a request finding the bucket in debt is refused per topic
(THROTTLING_QUOTA_EXCEEDED), older ones are let through and throttled (throttling.py).

Simplifications: Produce and Fetch are measured by their record bytes, where Kafka counts the
whole request (Produce) or response (Fetch) size; the frame around the records is a few dozen
bytes per partition. Rates of clients gone quiet are dropped after an hour, as Kafka expires
its quota sensors.
"""

from __future__ import annotations

from dataclasses import dataclass

from .rate import SampledRate, TokenBucket
from .store import CLIENT_ID, USER, QuotaStore

PRODUCE, FETCH = "producer_byte_rate", "consumer_byte_rate"
MUTATIONS = "controller_mutation_rate"
REQUESTS = "request_percentage"
_IDLE_EXPIRY_MS = 3_600_000


@dataclass
class _Measured:
    rate: SampledRate
    last_ms: int
    quota: float = 0.0
    throttle_ms_total: int = 0
    throttled: int = 0  # responses that carried a throttle time


def user_of(principal: str) -> str:
    """The quota user of a principal: ``User:alice`` -> ``alice``."""
    return principal.split(":", 1)[1] if ":" in principal else principal


class QuotaManager:
    def __init__(self, store: QuotaStore, config):
        self.store = store
        self._samples = config["quota.window.num"]
        self._window_ms = config["quota.window.size.seconds"] * 1000
        self._resolved: dict[tuple[str, str, str], tuple[float | None, tuple[str, str]]] = {}
        self._resolved_version = -1
        self._measured: dict[tuple[str, str, str], _Measured] = {}  # (kind, user tag, client tag)
        self._last_expiry_ms = 0
        self._buckets: dict[tuple[str, str], TokenBucket] = {}  # controller_mutation_rate, by (user, client) tag

    def quota_for(self, kind: str, user: str, client_id: str) -> tuple[float | None, tuple[str, str]]:
        """(quota or None, (user tag, client-id tag)) by Kafka's precedence."""
        if self._resolved_version != self.store.version:
            self._resolved.clear()
            self._resolved_version = self.store.version
        key = (kind, user, client_id)
        found = self._resolved.get(key)
        if found is None:
            found = self._resolved[key] = self._resolve(kind, user, client_id)
        return found

    def _resolve(self, kind: str, user: str, client_id: str) -> tuple[float | None, tuple[str, str]]:
        get = self.store.get
        levels = (
            (((CLIENT_ID, client_id), (USER, user)), (user, client_id)),
            (((CLIENT_ID, None), (USER, user)), (user, client_id)),
            (((USER, user),), (user, "")),
            (((CLIENT_ID, client_id), (USER, None)), (user, client_id)),
            (((CLIENT_ID, None), (USER, None)), (user, client_id)),
            (((USER, None),), (user, "")),
            (((CLIENT_ID, client_id),), ("", client_id)),
            (((CLIENT_ID, None),), ("", client_id)),
        )
        for entity, tags in levels:
            value = get(entity).get(kind)
            if value is not None:
                return value, tags
        return None, (user, client_id)

    def max_in_window(self, kind: str, principal: str, client_id: str) -> float | None:
        """What the client's quota lets through in all windows but one (Kafka's getMaxValueInQuotaWindow)."""
        quota, _tags = self.quota_for(kind, user_of(principal), client_id)
        return None if quota is None else quota * (self._samples - 1) * self._window_ms / 1000

    def record(self, kind: str, principal: str, client_id: str, amount: float, now_ms: int,
               check: bool = True) -> int:
        """Record ``amount`` against the client's quota of ``kind``; the throttle time in ms (0: none).
        ``check=False`` records without a verdict (taking back what a throttled answer did not send)."""
        user = user_of(principal)
        quota, tags = self.quota_for(kind, user, client_id)
        if quota is None:
            return 0
        key = (kind, *tags)
        measured = self._measured.get(key)
        if measured is None:
            self._expire(now_ms)
            measured = self._measured[key] = _Measured(SampledRate(self._samples, self._window_ms, now_ms), now_ms)
        measured.last_ms, measured.quota = now_ms, quota
        measured.rate.record(amount, now_ms)
        if not check:
            return 0
        rate = measured.rate.per_second(now_ms)
        if rate <= quota:
            return 0
        throttle_ms = round((rate - quota) / quota * measured.rate.window_ms(now_ms))
        if kind == REQUESTS:  # Kafka's ClientRequestQuotaManager bounds it by one window
            throttle_ms = min(throttle_ms, self._window_ms)
        measured.throttle_ms_total += throttle_ms
        measured.throttled += 1
        return throttle_ms

    @property
    def times_requests(self) -> bool:
        """Whether any request_percentage quota is set (the dispatcher times handlers only then)."""
        return self.store.has_key(REQUESTS)

    def mutations(self, principal: str, client_id: str) -> tuple[float, TokenBucket] | None:
        """The client's controller_mutation_rate and its token bucket; None without such a quota."""
        quota, tags = self.quota_for(MUTATIONS, user_of(principal), client_id)
        if quota is None:
            return None
        bucket = self._buckets.get(tags)
        if bucket is None:
            if len(self._buckets) > 100_000:  # bounded: a full bucket is what a new one starts as
                self._buckets.clear()
            bucket = self._buckets[tags] = TokenBucket(self._samples, self._window_ms)
        return quota, bucket

    def _expire(self, now_ms: int) -> None:
        if now_ms - self._last_expiry_ms < _IDLE_EXPIRY_MS:
            return
        self._last_expiry_ms = now_ms
        for key in [key for key, m in self._measured.items() if now_ms - m.last_ms > _IDLE_EXPIRY_MS]:
            del self._measured[key]

    def snapshot(self, now_ms: int) -> list[tuple[str, str, str, float, float, int, int]]:
        """(kind, user tag, client tag, quota, rate per second, throttled responses, throttle ms total)
        per measured client, for the metrics listener."""
        rows = []
        for (kind, user, client), measured in sorted(self._measured.items()):
            rows.append((kind, user, client, measured.quota, measured.rate.per_second(now_ms), measured.throttled,
                         measured.throttle_ms_total))
        return rows
