"""Broker settings under Apache Kafka's config names.

Read from a ``server.properties`` file and ``--override name=value`` flags. An
unknown name or a bad value is a ``ConfigError`` at start-up, never a silent
default. Only the settings Weir acts on are known; the rest of Kafka's long
list (replication, quotas, SASL, ...) has nothing to act on in one process.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

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
    """``delete``, ``compact`` or both, in any order (normalised to ``compact,delete``)."""
    parts = {part.strip() for part in text.split(",") if part.strip()}
    if not parts or not parts <= {"delete", "compact"}:
        raise ValueError("expected delete, compact or compact,delete")
    return ",".join(sorted(parts))


def _str(text: str) -> str:
    return text.strip()


def _one_of(*allowed: str, why: str) -> Callable[[str], str]:
    def parse(text: str) -> str:
        value = text.strip()
        if value not in allowed:
            raise ValueError(f"Weir supports only {', '.join(allowed)} ({why})")
        return value
    return parse


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
    "message.max.bytes": Setting(_int(0), 1048588, "largest record batch a topic accepts"),
    "socket.request.max.bytes": Setting(_int(1), 104857600, "largest request frame; refused before allocation"),
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
    "transaction.state.log.num.partitions": Setting(_int(1), 50, "partitions of __transaction_state"),
    "transaction.state.log.segment.bytes": Setting(_int(14), 104857600, "segment.bytes of __transaction_state"),
    "transaction.max.timeout.ms": Setting(_int(1), 900000, "largest transaction.timeout.ms a producer may ask for"),
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": Setting(
        _int(1), 10000, "how often transactions past their timeout are aborted"),
    "transactional.id.expiration.ms": Setting(_int(1), 604800000, "forget a transactional id idle this long"),
    "transaction.remove.expired.transaction.cleanup.interval.ms": Setting(
        _int(1), 3600000, "how often idle transactional ids are removed"),
}

#: Topic-level overrides accepted by CreateTopics, and the broker setting each defaults to.
TOPIC_SETTINGS: dict[str, tuple[str | None, Callable[[str], Any]]] = {
    "segment.bytes": ("log.segment.bytes", _int(14)),
    "segment.index.bytes": (None, _int(4)),
    "index.interval.bytes": ("log.index.interval.bytes", _int(0)),
    "retention.ms": ("log.retention.ms", _int(-1)),
    "retention.bytes": ("log.retention.bytes", _int(-1)),
    "max.message.bytes": ("message.max.bytes", _int(0)),
    "flush.messages": ("log.flush.interval.messages", _int(1)),
    "flush.ms": ("log.flush.interval.ms", _int(0)),
    "segment.ms": ("log.roll.ms", _int(1)),
    "cleanup.policy": ("log.cleanup.policy", _cleanup_policy),
    "min.cleanable.dirty.ratio": ("log.cleaner.min.cleanable.ratio", _float(0, 1)),
    "min.compaction.lag.ms": ("log.cleaner.min.compaction.lag.ms", _int(0)),
    "max.compaction.lag.ms": ("log.cleaner.max.compaction.lag.ms", _int(1)),
    "delete.retention.ms": ("log.cleaner.delete.retention.ms", _int(0)),
    # Batches are stored as produced; recompressing or restamping them is not implemented.
    "compression.type": (None, _one_of("producer", why="batches are stored as the producer compressed them")),
    "min.insync.replicas": (None, _int(1, 1)),
    "message.timestamp.type": (None, _one_of("CreateTime", why="LogAppendTime restamping is not implemented")),
    "unclean.leader.election.enable": (None, _bool),
}


class BrokerConfig:
    """Parsed settings; ``config["log.segment.bytes"]`` gives the effective value."""

    def __init__(self, values: dict[str, str] | None = None):
        self._explicit: dict[str, Any] = {}
        for name, text in (values or {}).items():
            setting = SETTINGS.get(name)
            if setting is None:
                raise ConfigError(f"unknown config {name!r}")
            try:
                self._explicit[name] = setting.parse(text)
            except ValueError as exc:
                raise ConfigError(f"invalid value {text!r} for {name}: {exc}") from None

    def __getitem__(self, name: str) -> Any:
        if name in self._explicit:
            return self._explicit[name]
        return SETTINGS[name].default

    def is_set(self, name: str) -> bool:
        return name in self._explicit

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
                values[topic_name] = self.flush_interval_ms
            elif broker_name is not None:
                values[topic_name] = self[broker_name]
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


def read_properties(path: str | Path) -> dict[str, str]:
    """Java-style properties: name=value (or name: value), '#' and '!' comments."""
    values = {}
    for number, line in enumerate(Path(path).read_text().splitlines(), 1):
        line = line.strip()
        if not line or line[0] in "#!":
            continue
        for separator in ("=", ":"):
            if separator in line:
                name, value = line.split(separator, 1)
                values[name.strip()] = value.strip()
                break
        else:
            raise ConfigError(f"{path}:{number}: expected name=value")
    return values
