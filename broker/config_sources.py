"""Where each config value comes from, as DescribeConfigs reports it.

Kafka ranks a broker setting's sources: this node's dynamic value
(DYNAMIC_BROKER_CONFIG), the cluster-wide dynamic default
(DYNAMIC_DEFAULT_BROKER_CONFIG), the static file (STATIC_BROKER_CONFIG), the
built-in default (DEFAULT_CONFIG). A topic setting adds its override
(TOPIC_CONFIG) in front of the sources of its broker synonym
(``retention.ms`` <- ``log.retention.ms``, ``log.retention.minutes``,
``log.retention.hours``). The entry's source is the first synonym's, and the
synonym list is cut before the first entry for the config's own broker name, as
Kafka's ``ConfigHelper.configSynonyms`` does: so an unset ``retention.ms``
reports DEFAULT_CONFIG with no synonyms although ``log.retention.hours`` feeds it.

Deviation: ``log.flush.scheduler.interval.ms`` is not a synonym of
``log.flush.interval.ms`` here. In Kafka it is the fallback flush interval
(default Long.MAX_VALUE); in Weir it only paces the flush checks.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from . import inert_settings
from .config import DYNAMIC_SETTINGS, LONG_MAX, SETTINGS, TOPIC_FIXED_DEFAULTS, TOPIC_SETTINGS, BrokerConfig

# ConfigSource ids
TOPIC_CONFIG, DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG, STATIC_BROKER_CONFIG, DEFAULT_CONFIG = 1, 2, 3, 4, 5
# ConfigType ids (DescribeConfigs v3+)
BOOLEAN, STRING, INT, LONG, DOUBLE, LIST = 1, 2, 3, 5, 6, 7

#: Kafka's broker synonym of each topic setting (ServerTopicConfigSynonyms.TOPIC_CONFIG_SYNONYMS):
#: the broker setting a topic setting defaults to, and Kafka's names for those Weir has no setting for.
TOPIC_SYNONYM = {
    **{topic: broker for topic, (broker, _parse) in TOPIC_SETTINGS.items() if broker is not None},
    "segment.index.bytes": "log.index.size.max.bytes", "cleanup.policy": "log.cleanup.policy",
    "min.insync.replicas": "min.insync.replicas", "unclean.leader.election.enable": "unclean.leader.election.enable",
}
# remote.storage.enable, remote.log.*, *.replication.throttled.replicas: Kafka gives them no broker synonym
#: Kafka's defaults of those broker synonyms Weir has no setting for (never set, so always DEFAULT_CONFIG)
_KAFKA_ONLY_DEFAULTS = {broker: TOPIC_FIXED_DEFAULTS[topic] for topic, broker in TOPIC_SYNONYM.items()
                        if topic in TOPIC_FIXED_DEFAULTS}
_RETENTION = ["log.retention.ms", "log.retention.minutes", "log.retention.hours"]
_BROKER_SYNONYMS = {name: _RETENTION for name in _RETENTION}
_LONG = {"log.retention.ms", "log.retention.bytes", "log.retention.check.interval.ms", "log.flush.interval.messages",
         "log.flush.interval.ms", "log.flush.scheduler.interval.ms", "retention.ms", "retention.bytes",
         "flush.messages", "flush.ms"}
_TOPIC_DOCS = {
    "segment.bytes": "Roll a new segment past this size.",
    "segment.index.bytes": "Size of a segment's offset index.",
    "index.interval.bytes": "Bytes between two offset index entries.",
    "retention.ms": "Delete segments older than this; -1 keeps them forever.",
    "retention.bytes": "Delete the oldest segments past this partition size; -1 = no limit.",
    "max.message.bytes": "Largest record batch the topic accepts.",
    "max.decompressed.message.bytes": "Largest a compressed record batch may decompress to (INVALID_RECORD past it).",
    "flush.messages": "fsync after this many messages.",
    "flush.ms": "fsync data older than this.",
    "cleanup.policy": "delete (by retention), compact (the latest value per key), or both.",
    "segment.ms": "Roll the active segment once it spans this long.",
    "min.cleanable.dirty.ratio": "Compact once this share of the log is uncleaned.",
    "min.compaction.lag.ms": "Records stay uncompacted at least this long.",
    "max.compaction.lag.ms": "Records are compacted at most this long after they are written.",
    "delete.retention.ms": "Tombstones are kept this long after compaction reaches them.",
    "compression.type": "Codec batches are stored in: producer keeps the producer's, others recompress.",
    "compression.gzip.level": "gzip level when the topic recompresses with gzip.",
    "compression.lz4.level": "lz4 level when the topic recompresses with lz4.",
    "compression.zstd.level": "zstd level when the topic recompresses with zstd.",
    "min.insync.replicas": "Only 1 on one node.",
    "message.timestamp.type": "CreateTime keeps the producer's timestamps; LogAppendTime stamps the append time.",
    "message.timestamp.before.max.ms": "Refuse records whose CreateTime is further in the past than this.",
    "message.timestamp.after.max.ms": "Refuse records whose CreateTime is further in the future than this.",
    "unclean.leader.election.enable": "No effect on one node.",
    **inert_settings.TOPIC_DOCS,
}


@dataclass
class Entry:
    name: str
    value: str | None
    source: int
    read_only: bool
    synonyms: list[tuple[str, str | None, int]] = field(default_factory=list)
    config_type: int = STRING
    documentation: str | None = None
    sensitive: bool = False


def text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple):
        return ",".join(value)
    if isinstance(value, dict):
        return ",".join(f"{name}:{item}" for name, item in value.items())
    return str(value)


#: Kafka's PASSWORD-typed broker settings: DescribeConfigs answers them with a null value and
#: is_sensitive, as Kafka does, so a secret never leaves the broker.
SENSITIVE = frozenset({"ssl.key.password", "ssl.keystore.password", "ssl.keystore.key",
                       "ssl.truststore.password", "weir.faults.token",
                       "delegation.token.secret.key"}) | inert_settings.PASSWORDS


def _default(name: str) -> Any:
    return SETTINGS[name].default if name in SETTINGS else _KAFKA_ONLY_DEFAULTS.get(name)


def synonyms(config: BrokerConfig, name: str) -> list[tuple[str, str | None, int]]:
    """(name, value, source) of every source of broker setting ``name``, best first."""
    names = _BROKER_SYNONYMS.get(name, [name])
    found = [(n, text(config.dynamic_node[n]), DYNAMIC_BROKER_CONFIG) for n in names if n in config.dynamic_node]
    found += [(n, text(config.dynamic_default[n]), DYNAMIC_DEFAULT_BROKER_CONFIG)
              for n in names if n in config.dynamic_default]
    found += [(n, text(config.static_value(n)), STATIC_BROKER_CONFIG)
              for n in names if n in SETTINGS and config.is_set(n)]
    found += [(n, text(_default(n)), DEFAULT_CONFIG) for n in names if _default(n) is not None]
    while found and found[0][0] != name:
        found.pop(0)
    return found


def _type_of(name: str, value: Any) -> int:
    kafka_type = inert_settings.TYPES.get(name) or inert_settings.TOPIC_TYPES.get(name)
    if kafka_type is not None:
        return kafka_type
    if name == "cleanup.policy":
        return LIST
    if isinstance(value, bool):
        return BOOLEAN
    if isinstance(value, (tuple, dict)):
        return LIST
    if isinstance(value, float):
        return DOUBLE
    if isinstance(value, str):
        return STRING
    return LONG if name in _LONG else INT


def broker_entries(config: BrokerConfig, per_node: bool) -> list[Entry]:
    """This node's settings (``per_node``), or only the cluster-wide dynamic defaults (resource "")."""
    names = sorted(SETTINGS) if per_node else sorted(config.dynamic_default)
    entries = []
    for name in names:
        found = synonyms(config, name)
        if not per_node:
            found = [s for s in found if s[2] == DYNAMIC_DEFAULT_BROKER_CONFIG]
        value = config[name] if per_node else config.dynamic_default[name]
        sensitive = name in SENSITIVE
        if sensitive:
            found = [(n, None, source) for n, _value, source in found]
        entries.append(Entry(name, None if sensitive else text(value), found[0][2] if found else DEFAULT_CONFIG,
                             name not in DYNAMIC_SETTINGS, found,
                             _type_of(name, SETTINGS[name].default if value is None else value), SETTINGS[name].doc,
                             sensitive))
    return entries


def topic_entries(config: BrokerConfig, effective: dict[str, Any], overrides: dict[str, Any]) -> list[Entry]:
    entries = []
    for name in sorted(TOPIC_SETTINGS):
        value = effective.get(name)
        if name == "flush.ms" and value is None:
            value = LONG_MAX
        found = synonyms(config, TOPIC_SYNONYM[name]) if name in TOPIC_SYNONYM else []
        if name in overrides:
            found.insert(0, (name, text(value), TOPIC_CONFIG))
        entries.append(Entry(name, text(value), found[0][2] if found else DEFAULT_CONFIG, False, found,
                             _type_of(name, value), _TOPIC_DOCS.get(name)))
    return entries
