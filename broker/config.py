"""Broker settings under Apache Kafka's config names.

Read from a ``server.properties`` file and ``--override name=value`` flags. An
unknown name or a bad value is a ``ConfigError`` at start-up, never a silent
default. Only the settings Weir acts on are known; the rest of Kafka's long
list (replication, quotas, SASL, ...) has nothing to act on in one process.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any
from collections.abc import Callable

from .properties import read_properties  # noqa: F401  (the file format; re-exported for callers)
from .acl.settings import ACL_SETTINGS
from .quota.settings import QUOTA_SETTINGS
from .security.settings import SECURITY_SETTINGS, parse_prefixed
from .share.settings import SHARE_SETTINGS
from .group.streams.settings import STREAMS_SETTINGS, check as check_streams_settings
from . import inert_settings

LONG_MAX = 2**63 - 1


class ConfigError(ValueError):
    pass


def _bool(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered not in ("true", "false"):
        raise ValueError("expected true or false")
    return lowered == "true"


def _int(minimum: int | None = None, maximum: int | None = None) -> Callable[[str], int]:
    def parse(text: str) -> int:
        value = int(text.strip())
        if minimum is not None and value < minimum:
            raise ValueError(f"must be at least {minimum}")
        if maximum is not None and value > maximum:
            raise ValueError(f"must be at most {maximum}")
        return value
    return parse


def _float(minimum: float, maximum: float) -> Callable[[str], float]:
    def parse(text: str) -> float:
        value = float(text.strip())
        if not minimum <= value <= maximum:
            raise ValueError(f"must be between {minimum} and {maximum}")
        return value
    return parse


def _cleanup_policy(text: str) -> str:
    """``delete``, ``compact`` or both, kept in the order given (Kafka reports the list as set)."""
    parts = [part.strip() for part in text.split(",") if part.strip()]
    if not parts or not set(parts) <= {"delete", "compact"} or len(set(parts)) != len(parts):
        raise ValueError("expected delete, compact or compact,delete")
    return ",".join(parts)


def _str(text: str) -> str:
    return text.strip()


def _one_of(*allowed: str, why: str) -> Callable[[str], str]:
    def parse(text: str) -> str:
        value = text.strip()
        if value not in allowed:
            raise ValueError(f"Weir supports only {', '.join(allowed)} ({why})")
        return value
    return parse


def _choice(*allowed: str) -> Callable[[str], str]:
    def parse(text: str) -> str:
        value = text.strip()
        if value not in allowed:
            raise ValueError(f"String must be one of: {', '.join(allowed)}")
        return value
    return parse


def _gzip_level(text: str) -> int:
    value = int(text.strip())
    if value != -1 and not 1 <= value <= 9:
        raise ValueError("must be -1 or between 1 and 9")
    return value


COMPRESSION_TYPES = ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")


def parse_host_port(text: str) -> tuple[str, int]:
    """``host:port`` (a ``scheme://`` prefix is allowed; no host = every interface; port 0 = any free one)."""
    address = text.strip().split("://", 1)[-1]
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit() or int(port) > 65535:
        raise ValueError("expected host:port")
    return host.strip("[]") or "0.0.0.0", int(port)


def _listener(text: str) -> str:
    value = text.strip()
    if value:
        parse_host_port(value)
    return value


_HOST_CHARACTERS = re.compile(r"[0-9a-zA-Z\-%._:]*")  # the characters Kafka accepts in a host


def _host_counts(text: str) -> dict[str, int]:
    """Kafka's "host:count,host:count" map (split at the last colon, so IPv6 addresses fit)."""
    counts = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        host, sep, count = item.rpartition(":")
        host = host.strip()
        if not sep or not host or not _HOST_CHARACTERS.fullmatch(host):
            raise ValueError(f"expected host:count, got {item!r}")
        counts[host] = _int(0)(count)
    return counts


@dataclass(frozen=True)
class Setting:
    parse: Callable[[str], Any]
    default: Any
    doc: str


SETTINGS: dict[str, Setting] = {
    "node.id": Setting(_int(0), 0, "id of this node in Metadata and FindCoordinator answers"),
    "broker.id": Setting(_int(0), 0, "alias of node.id"),
    "advertised.listeners": Setting(_str, "", "PLAINTEXT://host:port clients should use; default: the listen address"),
    "num.partitions": Setting(_int(1), 1, "partitions of an auto-created topic"),
    # KIP-578 proposed this name (never adopted by Kafka, which has no per-broker limit; its
    # default was "no limit"). Here unset means derived from the open-file budget: as many
    # partitions as can all keep their active segment open within weir.max.open.segment.files,
    # at least 1000. Internal topics count but are never refused. Refusals answer POLICY_VIOLATION.
    "max.broker.partitions": Setting(_int(1), None, "most partitions this broker hosts; unset = derived "
                                                    "from weir.max.open.segment.files (at least 1000)"),
    # Weir's own setting (Kafka keeps every segment's files open and leaves the bound to ulimit -n):
    # segment .log files open at once across the broker; least recently used ones are closed past it
    # and reopen on their next read or write. Unset: half the soft RLIMIT_NOFILE, at most 16384.
    "weir.max.open.segment.files": Setting(_int(1), None, "segment files open at once; unset = half "
                                                          "the open files limit, at most 16384"),
    "default.replication.factor": Setting(_int(1, 1), 1, "only 1 is possible on one node"),
    "auto.create.topics.enable": Setting(_bool, True, "create unknown topics on Metadata/Produce"),
    "delete.topic.enable": Setting(_bool, True, "allow DeleteTopics"),
    "log.segment.bytes": Setting(_int(14), 1073741824, "roll a segment past this size"),
    "log.index.interval.bytes": Setting(_int(0), 4096, "bytes between offset index entries"),
    "log.retention.ms": Setting(_int(-1), None, "delete segments older than this; -1 keeps forever"),
    "log.retention.minutes": Setting(_int(-1), None, "used when log.retention.ms is unset"),
    "log.retention.hours": Setting(_int(-1), 168, "used when neither ms nor minutes is set"),
    "log.retention.bytes": Setting(_int(-1), -1, "delete old segments past this partition size; -1 = no limit"),
    "log.retention.check.interval.ms": Setting(_int(1), 300000, "how often retention runs"),
    "log.roll.ms": Setting(_int(1), None, "roll the active segment once it spans this long (segment.ms)"),
    "log.roll.hours": Setting(_int(1), 168, "used when log.roll.ms is unset"),
    "log.cleanup.policy": Setting(_cleanup_policy, "delete", "default cleanup.policy: delete, compact or both"),
    "log.cleaner.enable": Setting(_bool, True, "run the log cleaner (compaction) in the background"),
    "log.cleaner.backoff.ms": Setting(_int(0), 15000, "how long the cleaner sleeps when nothing is cleanable"),
    "log.cleaner.dedupe.buffer.size": Setting(
        _int(1), 134217728, "bounds the cleaner's offset map: (size / 24) * 0.9 keys per pass, as Kafka counts"),
    "log.cleaner.min.cleanable.ratio": Setting(_float(0, 1), 0.5, "default min.cleanable.dirty.ratio"),
    "log.cleaner.min.compaction.lag.ms": Setting(_int(0), 0, "default min.compaction.lag.ms"),
    "log.cleaner.max.compaction.lag.ms": Setting(_int(1), LONG_MAX, "default max.compaction.lag.ms"),
    "log.cleaner.delete.retention.ms": Setting(_int(0), 86400000, "default delete.retention.ms"),
    "log.flush.interval.messages": Setting(_int(1), LONG_MAX, "fsync after this many messages"),
    "log.flush.interval.ms": Setting(_int(0), None, "fsync data older than this; unset = leave it to the OS"),
    "log.flush.scheduler.interval.ms": Setting(_int(1), 1000, "how often the time-based flush checks"),
    "max.request.partition.size.limit": Setting(
        _int(1), 2000, "most partitions one DescribeTopicPartitions answer holds (the request may ask fewer)"),
    "message.max.bytes": Setting(_int(0), 1048588, "largest record batch a topic accepts"),
    "max.decompressed.message.bytes": Setting(_int(1, 2147483639), 2147483639,
                                              "largest a compressed record batch may decompress to"),
    "socket.request.max.bytes": Setting(_int(1), 104857600, "largest request frame; refused before allocation"),
    # Weir's own: Kafka bounds a connection by muting it while one response is in flight and has no
    # per-connection byte setting (queued.max.request.bytes is one broker-wide pool of request bytes
    # only). Weir lets a connection work ahead on pipelined requests up to this many bytes held for it:
    # requests read but not yet handled plus responses not yet sent. Over it, the broker stops reading
    # from the socket and stops handling that connection's next request until the client drains its
    # responses. One response larger than the bound is still sent whole; 0 handles one request at a time.
    "weir.connection.max.held.bytes": Setting(
        _int(0), 16 * 1024 * 1024, "bytes held per connection (queued requests + unsent responses)"),
    "telemetry.max.bytes": Setting(_int(1), 1048576, "largest client telemetry push (KIP-714), compressed or not"),
    "connections.max.idle.ms": Setting(_int(), 600000, "close a connection with no activity this long; -1 never"),
    "max.connections": Setting(_int(0), 2147483647, "most connections the broker accepts at once"),
    "max.connections.per.ip": Setting(_int(0), 2147483647, "most connections from one ip address"),
    "max.connections.per.ip.overrides": Setting(
        _host_counts, {}, "per-ip or hostname limits instead of max.connections.per.ip, e.g. host:100,127.0.0.1:200"),
    "producer.id.expiration.ms": Setting(_int(1), 86400000, "drop idle producer state after this"),
    "offsets.topic.num.partitions": Setting(_int(1), 50, "partitions of __consumer_offsets"),
    "offsets.topic.segment.bytes": Setting(_int(14), 104857600, "segment.bytes of __consumer_offsets"),
    "offsets.retention.minutes": Setting(
        _int(1), 10080, "expire a group's committed offsets this long after it became empty"),
    "offsets.retention.check.interval.ms": Setting(_int(1), 600000, "how often offsets are checked for expiry"),
    "group.min.session.timeout.ms": Setting(_int(1), 6000, "shortest session.timeout.ms a consumer may ask for"),
    "group.max.session.timeout.ms": Setting(_int(1), 1800000, "longest session.timeout.ms a consumer may ask for"),
    "group.initial.rebalance.delay.ms": Setting(
        _int(0), 3000, "how long the first rebalance of an empty group waits for more members"),
    "group.max.size": Setting(_int(1), 2147483647, "most members a group may have"),
    # the consumer group protocol (KIP-848); Kafka's names, defaults and start-up checks (the
    # session and heartbeat settings within their min and max: broker/group/consumer/coordinator.py)
    "group.consumer.session.timeout.ms": Setting(
        _int(1), 45000, "a consumer-protocol member is removed after this long without a heartbeat"),
    "group.consumer.heartbeat.interval.ms": Setting(
        _int(1), 5000, "how often consumer-protocol members are told to heartbeat"),
    "group.consumer.min.session.timeout.ms": Setting(_int(1), 45000, "shortest group.consumer.session.timeout.ms"),
    "group.consumer.max.session.timeout.ms": Setting(_int(1), 60000, "longest group.consumer.session.timeout.ms"),
    "group.consumer.min.heartbeat.interval.ms": Setting(
        _int(1), 5000, "shortest group.consumer.heartbeat.interval.ms"),
    "group.consumer.max.heartbeat.interval.ms": Setting(
        _int(1), 15000, "longest group.consumer.heartbeat.interval.ms"),
    "group.consumer.max.size": Setting(_int(1), 2147483647, "most members a consumer-protocol group may have"),
    "group.consumer.assignors": Setting(
        _str, "uniform,range", "server-side assignors, by name; the first is the default"),
    "group.consumer.migration.policy": Setting(  # broker/group/consumer/conversion.py; Kafka's values, any case
        lambda text: _choice("disabled", "upgrade", "downgrade", "bidirectional")(text.lower()), "bidirectional",
        "which online conversions between classic and consumer groups are allowed"),
    "compression.type": Setting(_choice(*COMPRESSION_TYPES), "producer",
                                "codec batches are stored with; producer keeps the producer's"),
    "compression.gzip.level": Setting(_gzip_level, -1, "gzip level when recompressing; -1 is zlib's default"),
    "compression.lz4.level": Setting(_int(1, 17), 9, "lz4 level when recompressing"),
    "compression.zstd.level": Setting(_int(-131072, 22), 3, "zstd level when recompressing"),
    "log.message.timestamp.type": Setting(_choice("CreateTime", "LogAppendTime"), "CreateTime",
                                          "LogAppendTime stamps each batch with the broker's append time"),
    "log.message.timestamp.before.max.ms": Setting(
        _int(0), LONG_MAX, "refuse a CreateTime record older than this relative to the broker's clock"),
    "log.message.timestamp.after.max.ms": Setting(
        _int(0), 3600000, "refuse a CreateTime record newer than this relative to the broker's clock (Kafka 4.0)"),
    "transaction.state.log.num.partitions": Setting(_int(1), 50, "partitions of __transaction_state"),
    "transaction.state.log.segment.bytes": Setting(_int(14), 104857600, "segment.bytes of __transaction_state"),
    "transaction.max.timeout.ms": Setting(_int(1), 900000, "largest transaction.timeout.ms a producer may ask for"),
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": Setting(
        _int(1), 10000, "how often transactions past their timeout are aborted"),
    "transactional.id.expiration.ms": Setting(_int(1), 604800000, "forget a transactional id idle this long"),
    "transaction.remove.expired.transaction.cleanup.interval.ms": Setting(
        _int(1), 3600000, "how often idle transactional ids are removed"),
    # Weir's own (Kafka exposes metrics over JMX, not HTTP): host:port of an HTTP listener
    # serving Prometheus text at GET /metrics (broker/metrics); empty, the default, = off.
    "metrics.listener": Setting(_listener, "", "host:port serving Prometheus metrics at /metrics; empty = off"),
    # Weir's own, for test suites (broker/faults.py, broker/faults_listener.py): off by default.
    "weir.faults.enable": Setting(_bool, False, "fault injection for tests (answer errors, delay, disconnect, "
                                                "pause, fill the disk); never in production"),
    "weir.faults.listener": Setting(_listener, "", "host:port of the fault-injection control channel (HTTP); "
                                                   "needs weir.faults.enable; empty = off"),
    "weir.faults.token": Setting(_str, "", "bearer token the control channel requires; needed off loopback "
                                           "and with security on"),
}
# listeners, TLS and SASL (broker/security/settings.py); their listener.name.<l>.* forms are read below
SETTINGS.update({name: Setting(*entry) for name, entry in SECURITY_SETTINGS.items()})
# Kafka's settings Weir accepts and describes without acting on them (broker/inert_settings.py)
SETTINGS.update({name: Setting(*entry) for name, entry in inert_settings.BROKER_SETTINGS.items()})
SETTINGS.update({name: Setting(*entry) for name, entry in ACL_SETTINGS.items()})  # broker/acl/settings.py
SETTINGS.update({name: Setting(*entry) for name, entry in QUOTA_SETTINGS.items()})  # broker/quota/settings.py
SETTINGS.update({name: Setting(_int(low, high), default, doc)  # broker/share/settings.py, group/streams/settings.py
                 for name, (low, high, default, doc) in {**SHARE_SETTINGS, **STREAMS_SETTINGS}.items()})

#: Topic-level overrides accepted by CreateTopics, and the broker setting each defaults to.
TOPIC_SETTINGS: dict[str, tuple[str | None, Callable[[str], Any]]] = {
    "segment.bytes": ("log.segment.bytes", _int(14)),
    "segment.index.bytes": (None, _int(4)),
    "index.interval.bytes": ("log.index.interval.bytes", _int(0)),
    "retention.ms": ("log.retention.ms", _int(-1)),
    "retention.bytes": ("log.retention.bytes", _int(-1)),
    "max.message.bytes": ("message.max.bytes", _int(0)),
    "max.decompressed.message.bytes": ("max.decompressed.message.bytes", _int(1, 2147483639)),
    "flush.messages": ("log.flush.interval.messages", _int(1)),
    "flush.ms": ("log.flush.interval.ms", _int(0)),
    "segment.ms": ("log.roll.ms", _int(1)),
    "cleanup.policy": ("log.cleanup.policy", _cleanup_policy),
    "min.cleanable.dirty.ratio": ("log.cleaner.min.cleanable.ratio", _float(0, 1)),
    "min.compaction.lag.ms": ("log.cleaner.min.compaction.lag.ms", _int(0)),
    "max.compaction.lag.ms": ("log.cleaner.max.compaction.lag.ms", _int(1)),
    "delete.retention.ms": ("log.cleaner.delete.retention.ms", _int(0)),
    "compression.type": ("compression.type", _choice(*COMPRESSION_TYPES)),
    "compression.gzip.level": ("compression.gzip.level", _gzip_level),
    "compression.lz4.level": ("compression.lz4.level", _int(1, 17)),
    "compression.zstd.level": ("compression.zstd.level", _int(-131072, 22)),
    "min.insync.replicas": (None, _int(1, 1)),
    "message.timestamp.type": ("log.message.timestamp.type", _choice("CreateTime", "LogAppendTime")),
    # Kafka 4 removed message.timestamp.difference.max.ms (KIP-937); it is an unknown name here too.
    "message.timestamp.before.max.ms": ("log.message.timestamp.before.max.ms", _int(0)),
    "message.timestamp.after.max.ms": ("log.message.timestamp.after.max.ms", _int(0)),
    "unclean.leader.election.enable": (None, _bool),
    **inert_settings.TOPIC_SETTINGS,  # Kafka's topic settings that change nothing in Weir
}


#: Kafka's defaults of the topic settings that no Weir broker setting feeds (Kafka's broker
#: synonyms: log.index.size.max.bytes, log.cleanup.policy, compression.type, min.insync.replicas,
#: log.message.timestamp.type, unclean.leader.election.enable).
TOPIC_FIXED_DEFAULTS: dict[str, Any] = {
    "segment.index.bytes": 10485760,
    "min.insync.replicas": 1,
    "unclean.leader.election.enable": False,
    **inert_settings.TOPIC_DEFAULTS,
}

#: Broker settings Kafka lets AlterConfigs change at run time (its DynamicBrokerConfig
#: ALL_DYNAMIC_CONFIGS, in broker/inert_settings.py). Those Weir acts on take effect at once where
#: they are read at each use (log and cleaner settings, topic defaults); those it reads only at
#: start-up (listeners, TLS and SASL, connection limits) are stored and described and apply from
#: the next start; the inert ones change nothing.
DYNAMIC_SETTINGS = inert_settings.KAFKA_DYNAMIC


class BrokerConfig:
    """Parsed settings; ``config["log.segment.bytes"]`` gives the effective value.

    Dynamic values (AlterConfigs on a BROKER resource, persisted by
    ``broker.dynamic_config``) win over the static ones: this node's own
    (``dynamic_node``) first, then the cluster-wide default (``dynamic_default``),
    as Kafka ranks them.
    """

    def __init__(self, values: dict[str, str] | None = None):
        self._explicit: dict[str, Any] = {}
        self.dynamic_node: dict[str, Any] = {}
        self.dynamic_default: dict[str, Any] = {}
        self._per_listener: dict[tuple[str, str], Any] = {}  # (listener name lower-cased, setting) -> value
        for name, text in (values or {}).items():
            setting = SETTINGS.get(name)
            if setting is None and name.startswith("listener.name."):
                self._add_per_listener(name, text)
                continue
            if setting is None:
                raise ConfigError(f"unknown config {name!r}")
            try:
                self._explicit[name] = setting.parse(text)
            except ValueError as exc:
                raise ConfigError(f"invalid value {text!r} for {name}: {exc}") from None
        if self["max.connections.per.ip"] == 0 and not self["max.connections.per.ip.overrides"]:
            raise ConfigError("max.connections.per.ip can be set to zero only if "
                              "max.connections.per.ip.overrides is set")  # as Kafka's KafkaConfig requires
        broken = check_streams_settings(self)  # Kafka's GroupCoordinatorConfig requirements
        if broken is not None:
            raise ConfigError(broken)

    def __getitem__(self, name: str) -> Any:
        if name in self.dynamic_node:
            return self.dynamic_node[name]
        if name in self.dynamic_default:
            return self.dynamic_default[name]
        if name in self._explicit:
            return self._explicit[name]
        return SETTINGS[name].default

    def _add_per_listener(self, name: str, text: str) -> None:
        try:
            parsed = parse_prefixed(name, text)
        except ValueError as exc:  # the message names no secret: parsers never echo a value
            raise ConfigError(f"invalid value for {name}: {exc}") from None
        if parsed is None:
            raise ConfigError(f"unknown config {name!r}")
        listener, setting, value = parsed
        self._per_listener[(listener, setting)] = value

    def for_listener(self, listener: str, name: str) -> Any:
        """``listener.name.<listener>.<name>`` when given, else the broker-wide ``name`` (None if neither)."""
        key = (listener.lower(), name)
        if key in self._per_listener:
            return self._per_listener[key]
        return self[name] if name in SETTINGS else None

    def listener_override(self, listener: str, name: str) -> Any:
        """``listener.name.<listener>.<name>`` only (None when not given)."""
        return self._per_listener.get((listener.lower(), name))

    def is_set(self, name: str) -> bool:
        """Given at start-up (server.properties or --override)."""
        return name in self._explicit

    def static_value(self, name: str) -> Any:
        return self._explicit[name]

    @property
    def node_id(self) -> int:
        return self["node.id"] if self.is_set("node.id") else self["broker.id"]

    @property
    def retention_ms(self) -> int:
        if self["log.retention.ms"] is not None:
            return self["log.retention.ms"]
        if self["log.retention.minutes"] is not None:
            return self["log.retention.minutes"] * 60_000
        hours = self["log.retention.hours"]
        return -1 if hours < 0 else hours * 3_600_000

    @property
    def roll_ms(self) -> int:
        if self["log.roll.ms"] is not None:
            return self["log.roll.ms"]
        return self["log.roll.hours"] * 3_600_000

    @property
    def flush_interval_ms(self) -> int | None:
        return self["log.flush.interval.ms"]

    def topic_defaults(self) -> dict[str, Any]:
        """Effective topic-level values that come from broker settings."""
        values = {}
        for topic_name, (broker_name, _parse) in TOPIC_SETTINGS.items():
            if broker_name == "log.retention.ms":
                values[topic_name] = self.retention_ms
            elif broker_name == "log.roll.ms":
                values[topic_name] = self.roll_ms
            elif broker_name == "log.flush.interval.ms":
                # Kafka's value when nothing is set is Long.MAX_VALUE: no time-based flush.
                values[topic_name] = LONG_MAX if self.flush_interval_ms is None else self.flush_interval_ms
            elif broker_name is not None:
                values[topic_name] = self[broker_name]
        values.update(TOPIC_FIXED_DEFAULTS)
        return values


def parse_topic_config(name: str, text: str | None) -> Any:
    entry = TOPIC_SETTINGS.get(name)
    if entry is None:
        raise ConfigError(f"Unknown topic config name: {name}")
    if text is None:
        raise ConfigError(f"Null value not supported for topic config {name}")
    try:
        return entry[1](text)
    except ValueError as exc:
        raise ConfigError(f"Invalid value {text} for configuration {name}: {exc}") from None
