"""Client instances of KIP-714: GetTelemetrySubscriptions and PushTelemetry, as Kafka 4.4's
ClientMetricsManager answers them.

A client sends a zero client instance id first and gets a random one back (never a reserved
id, nor one whose base64 text starts with '-', as Kafka's Uuid.randomUuid). Its subscription is
every matching subscription's metrics (just ``*`` when one asks for all) at the smallest
interval of them (5 minutes when none matches); the subscription id is a CRC32C of that set and
interval XORed with the instance id's hash, so it changes when the subscription does. An instance
is re-evaluated at its next request after any subscription changed.

Timing, as Kafka's ClientMetricsInstance: a Get earlier than one interval after the last Get or
Push is THROTTLING_QUOTA_EXCEEDED (unless the last error was UNKNOWN_SUBSCRIPTION_ID or
UNSUPPORTED_COMPRESSION_TYPE); a Push is allowed right after a Get, otherwise one interval after
the last Push (a terminating push always). A Push is then checked in Kafka's order: after a
terminating push INVALID_REQUEST; too early THROTTLING_QUOTA_EXCEEDED; another subscription id
UNKNOWN_SUBSCRIPTION_ID; a compression type that is none of Kafka's UNSUPPORTED_COMPRESSION_TYPE;
a payload over ``telemetry.max.bytes`` TELEMETRY_TOO_LARGE. A zero or reserved instance id is
INVALID_REQUEST.

Kafka forgets an instance when its connection closes or after max(60 s, 3 intervals) without a
request, and holds at most 16384; so does Weir, expiring lazily at the next request instead of
on a timer thread.
"""

from __future__ import annotations

import base64
import struct
import uuid
from collections import OrderedDict
from dataclasses import dataclass

import crc32c

from weir.protocol.compression import Compression
from weir.protocol.errors import Errors, KafkaError

from .subscriptions import ALL_METRICS, DEFAULT_INTERVAL_MS, ClientMetricsConfigs

ZERO_ID, ONE_ID = bytes(16), bytes(15) + b"\x01"  # Kafka's Uuid.RESERVED
#: Kafka's preference order, the first one the client should use
ACCEPTED_COMPRESSION = [Compression.ZSTD, Compression.LZ4, Compression.GZIP, Compression.SNAPPY]
CACHE_MAX_SIZE = 16384
CACHE_EXPIRY_MS = 60_000
_TWO_LONGS = struct.Struct(">qq")
NEVER = -(2**62)  # Kafka's 0 on its wall clock: long enough ago on any clock, so a first request is never early


def instance_id_text(instance_id: bytes) -> str:
    """Kafka's Uuid.toString: URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(instance_id).rstrip(b"=").decode()


def _java_hash(instance_id: bytes) -> int:
    """Kafka's Uuid.hashCode."""
    most, least = _TWO_LONGS.unpack(instance_id)
    mixed = (most ^ least) & 0xFFFF_FFFF_FFFF_FFFF
    return (mixed ^ (mixed >> 32)) & 0xFFFF_FFFF


def _signed32(value: int) -> int:
    return value - (1 << 32) if value >= 1 << 31 else value


@dataclass
class ClientInstance:
    instance_id: bytes
    client: dict[str, str]  # the selector values (subscriptions.SELECTORS)
    subscription_version: int
    subscription_id: int
    metrics: list[str]
    interval_ms: int
    last_get_ms: int = NEVER
    last_push_ms: int = NEVER
    last_error: int = Errors.NONE
    terminating: bool = False
    expires_at_ms: int = 0
    connection: object = None  # the connection it was created on (Kafka's clientConnectionIdMap)


class ClientInstances:
    """The one owner of the client instances this broker knows."""

    def __init__(self, configs: ClientMetricsConfigs, max_bytes: int):
        self.configs = configs
        self.max_bytes = max_bytes  # telemetry.max.bytes
        self.instances: OrderedDict[bytes, ClientInstance] = OrderedDict()

    def get_subscription(self, instance_id: bytes, client: dict[str, str], connection: object,
                         now_ms: int) -> ClientInstance:
        """GetTelemetrySubscriptions: the instance (a new id for a zero one) or KafkaError."""
        if instance_id == ZERO_ID:
            instance_id = self._new_id()
        instance = self._instance(instance_id, client, connection, now_ms)
        since = now_ms - max(instance.last_get_ms, instance.last_push_ms)
        if since < instance.interval_ms and instance.last_error not in (Errors.UNKNOWN_SUBSCRIPTION_ID,
                                                                        Errors.UNSUPPORTED_COMPRESSION_TYPE):
            raise KafkaError(Errors.THROTTLING_QUOTA_EXCEEDED, f"Request from the client "
                             f"[{instance_id_text(instance_id)}] arrived before the next push interval time")
        if since >= instance.interval_ms:
            instance.last_get_ms = now_ms
        instance.last_error = Errors.NONE
        return instance

    def check_push(self, instance_id: bytes, subscription_id: int, terminating: bool, compression: int,
                   size: int, client: dict[str, str], connection: object, now_ms: int) -> ClientInstance:
        """PushTelemetry's checks, in Kafka's order; the instance, or KafkaError (remembered as its last error)."""
        if instance_id in (ZERO_ID, ONE_ID):
            raise KafkaError(Errors.INVALID_REQUEST, f"Invalid request from the client "
                                                     f"[{instance_id_text(instance_id)}], invalid client instance id")
        instance = self._instance(instance_id, client, connection, now_ms)
        text = instance_id_text(instance_id)
        try:
            if instance.terminating:
                raise KafkaError(Errors.INVALID_REQUEST, f"Client [{text}] sent the previous request with state "
                                                         f"terminating to TRUE, can not acceptany requests after that")
            allowed = (instance.last_get_ms > instance.last_push_ms
                       or now_ms - instance.last_push_ms >= instance.interval_ms)
            if allowed:
                instance.last_push_ms = now_ms
            elif not terminating:
                raise KafkaError(Errors.THROTTLING_QUOTA_EXCEEDED,
                                 f"Request from the client [{text}] arrived before the next push interval time")
            if subscription_id != instance.subscription_id:
                raise KafkaError(Errors.UNKNOWN_SUBSCRIPTION_ID, f"Unknown client subscription id for the client "
                                                                 f"[{text}]")
            if compression not in set(Compression):
                raise KafkaError(Errors.UNSUPPORTED_COMPRESSION_TYPE, f"Unknown compression type [{compression}] is "
                                                                      f"received in telemetry request from [{text}]")
            if size > self.max_bytes:
                raise KafkaError(Errors.TELEMETRY_TOO_LARGE, f"Telemetry request from [{text}] is larger than the "
                                                             f"maximum allowed size [{self.max_bytes}]")
        except KafkaError as exc:
            instance.last_error = exc.code
            raise
        finally:
            instance.terminating = terminating
        return instance

    def watch(self, session) -> None:
        """Forget the instances created on this connection when it closes (once per connection)."""
        if session is not None:
            session.on_close[self] = lambda: self.forget_connection(session)

    def forget_connection(self, connection: object) -> None:
        """A connection closed: Kafka drops the instances created on it."""
        for instance_id, instance in list(self.instances.items()):
            if instance.connection is connection:
                del self.instances[instance_id]

    def _new_id(self) -> bytes:
        while True:
            candidate = uuid.uuid4().bytes
            if candidate not in (ZERO_ID, ONE_ID) and candidate not in self.instances \
                    and not instance_id_text(candidate).startswith("-"):
                return candidate

    def _instance(self, instance_id: bytes, client: dict[str, str], connection: object,
                  now_ms: int) -> ClientInstance:
        self._expire(now_ms)
        instance = self.instances.get(instance_id)
        if instance is None or instance.subscription_version != self.configs.version:
            client = instance.client if instance is not None else {**client,
                                                                   "client_instance_id": instance_id_text(instance_id)}
            fresh = self._evaluate(instance_id, client)  # a new instance: its timestamps start over, as Kafka's
            fresh.connection = connection
            instance = self.instances[instance_id] = fresh
            while len(self.instances) > CACHE_MAX_SIZE:
                self.instances.popitem(last=False)
        self.instances.move_to_end(instance_id)
        instance.expires_at_ms = now_ms + max(CACHE_EXPIRY_MS, 3 * instance.interval_ms)
        return instance

    def _evaluate(self, instance_id: bytes, client: dict[str, str]) -> ClientInstance:
        interval, everything = DEFAULT_INTERVAL_MS, False
        metrics: set[str] = set()
        for subscription in self.configs.subscriptions.values():
            if subscription.matches(client):
                everything = everything or ALL_METRICS in subscription.metrics
                metrics |= subscription.metrics
                interval = min(interval, subscription.interval_ms)
        requested = [ALL_METRICS] if everything else sorted(metrics)
        digest = crc32c.crc32c(("[" + ", ".join(requested) + "]" + str(interval)).encode())
        subscription_id = _signed32(digest ^ _java_hash(instance_id))
        return ClientInstance(instance_id, client, self.configs.version, subscription_id, requested, interval)

    def _expire(self, now_ms: int) -> None:
        while self.instances:
            oldest = next(iter(self.instances.values()))
            if oldest.expires_at_ms > now_ms:
                return
            del self.instances[oldest.instance_id]
