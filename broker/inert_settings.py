"""Kafka 4.4's settings that Weir accepts, stores and describes without acting on them.

Tools and clients set them (kafka-configs, librdkafka's test suite, the AdminClient), and Kafka
answers every one; Weir answers them too, under Kafka's names, types, defaults and ranges, so
that a script written for Kafka runs. None of them changes what Weir does: each table says why,
and DescribeConfigs' documentation of each begins "No effect in Weir". The tables are written
from Kafka 4.3.1's own definitions (LogConfig, ServerTopicConfigSynonyms, KafkaConfig,
DynamicBrokerConfig, GroupCoordinatorConfig, ShareGroupConfig), and what 4.4.0 added to them
(its ConfigDefs and DynamicBrokerConfig.ALL_DYNAMIC_CONFIGS compared with 4.3.1's).

``config.py`` adds the broker settings to ``SETTINGS`` and the topic settings to
``TOPIC_SETTINGS``; ``dynamic_config.py`` takes ``KAFKA_DYNAMIC`` as the set AlterConfigs may
change.
"""

from __future__ import annotations

from typing import Any
from collections.abc import Callable

LONG_MAX = 2**63 - 1
INT_MAX = 2**31 - 1
NO_EFFECT = "No effect in Weir: "

# Kafka's ConfigDef types, as DescribeConfigs (v3+) numbers them
BOOLEAN, STRING, INT, SHORT, LONG, DOUBLE, LIST, CLASS, PASSWORD = 1, 2, 3, 4, 5, 6, 7, 8, 9


def _number(kind: type, minimum: float | None = None, maximum: float | None = None) -> Callable[[str], Any]:
    def parse(text: str) -> Any:
        value = kind(text.strip())
        if minimum is not None and value < minimum:
            raise ValueError(f"Value must be at least {minimum}")
        if maximum is not None and value > maximum:
            raise ValueError(f"Value must be no more than {maximum}")
        return value
    return parse


def boolean(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered not in ("true", "false"):
        raise ValueError("Expected value to be either true or false")
    return lowered == "true"


def _text(text: str) -> str:
    return text.strip()


def _names(text: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in text.split(",") if part.strip())


def _replicas(text: str) -> tuple[str, ...]:
    """Kafka's throttled-replica lists: "*" or "partition:broker,..." (ThrottledReplicaListValidator)."""
    parts = _names(text)
    if parts != ("*",) and not all(p.count(":") == 1 and all(x.strip().isdigit() for x in p.split(":"))
                                    for p in parts):
        raise ValueError("must be the literal '*' or a list of replicas in the following format: "
                         "[partitionId]:[brokerId],[partitionId]:[brokerId],...")
    return parts


def one_of(*allowed: str) -> Callable[[str], str]:
    def parse(text: str) -> str:
        if text.strip() not in allowed:
            raise ValueError(f"String must be one of: {', '.join(allowed)}")
        return text.strip()
    return parse


def integer(minimum: int | None = None, maximum: int | None = None) -> Callable[[str], int]:
    return _number(int, minimum, maximum)


def _DOUBLE(minimum: float | None = None, maximum: float | None = None) -> Callable[[str], float]:
    return _number(float, minimum, maximum)


_LONG = integer  # Python's int holds Java's long

#: name -> (parse, Kafka's default, Kafka's type, why Weir gives it no effect)
_BROKER: dict[str, tuple[Callable[[str], Any], Any, int, str]] = {
    # the broker synonyms of topic settings Weir does not act on (see _TOPIC below)
    "log.segment.delete.delay.ms": (_LONG(0), 60000, LONG, "segments are deleted at once"),
    "log.local.retention.bytes": (_LONG(-2), -2, LONG, "no tiered storage"),
    "log.local.retention.ms": (_LONG(-2), -2, LONG, "no tiered storage"),
    "log.preallocate": (boolean, False, BOOLEAN, "segment files grow as they are written"),
    "log.roll.jitter.ms": (_LONG(0), None, LONG, "segments roll at segment.ms exactly"),
    "log.index.size.max.bytes": (integer(4), 10485760, INT, "offset indexes grow as needed"),
    "min.insync.replicas": (integer(1), 1, INT, "one node: every write has one in-sync replica"),
    "unclean.leader.election.enable": (boolean, False, BOOLEAN, "one node, no leader election"),
    # Kafka's other dynamic broker settings (DynamicBrokerConfig.ALL_DYNAMIC_CONFIGS)
    "background.threads": (integer(1), 10, INT, "one event loop"),
    "num.io.threads": (integer(1), 8, INT, "one event loop"),
    "num.network.threads": (integer(1), 3, INT, "one event loop"),
    "num.recovery.threads.per.data.dir": (integer(1), 2, INT, "recovery runs on the event loop"),
    "num.replica.fetchers": (integer(1), 1, INT, "one node, no replication"),
    "log.cleaner.threads": (integer(0), 1, INT, "the cleaner is one task on the event loop"),
    "log.cleaner.io.buffer.size": (integer(0), 524288, INT, "the cleaner reads whole segments"),
    "log.cleaner.io.buffer.load.factor": (_DOUBLE(), 0.9, DOUBLE, "the offset map's load factor is fixed"),
    "log.cleaner.io.max.bytes.per.second": (_DOUBLE(), 1.7976931348623157e308, DOUBLE, "the cleaner is unthrottled"),
    "config.providers": (_names, (), LIST, "no config providers"),
    "cordoned.log.dirs": (_names, (), LIST, "one log directory"),
    "follower.fetch.last.tiered.offset.enable": (boolean, False, BOOLEAN, "no tiered storage"),
    "follower.replication.throttled.rate": (_LONG(0), LONG_MAX, LONG, "no replication"),
    "leader.replication.throttled.rate": (_LONG(0), LONG_MAX, LONG, "no replication"),
    "replica.alter.log.dirs.io.max.bytes.per.second": (_LONG(1), LONG_MAX, LONG, "one log directory"),
    "group.coordinator.cached.buffer.max.bytes": (integer(524288), 1048588, INT, "no coordinator write buffers"),
    "share.coordinator.cached.buffer.max.bytes": (integer(524288), 1048588, INT, "no coordinator write buffers"),
    "max.connection.creation.rate": (integer(0), INT_MAX, INT, "connections are not rate-limited"),
    "metric.reporters": (_names, ("org.apache.kafka.common.metrics.JmxReporter",), LIST,
                         "metrics are served over HTTP (metrics.listener)"),
    "principal.builder.class": (_text, "org.apache.kafka.common.security.authenticator.DefaultKafkaPrincipalBuilder",
                                CLASS, "principals are built by Weir's own rules"),
    "remote.fetch.max.wait.ms": (integer(1), 500, INT, "no tiered storage"),
    "remote.list.offsets.request.timeout.ms": (_LONG(1), 30000, LONG, "no tiered storage"),
    "remote.log.index.file.cache.total.size.bytes": (_LONG(1), 1073741824, LONG, "no tiered storage"),
    "remote.log.manager.copier.thread.pool.size": (integer(1), 10, INT, "no tiered storage"),
    "remote.log.manager.copy.max.bytes.per.second": (_LONG(1), LONG_MAX, LONG, "no tiered storage"),
    "remote.log.manager.expiration.thread.pool.size": (integer(1), 10, INT, "no tiered storage"),
    "remote.log.manager.fetch.max.bytes.per.second": (_LONG(1), LONG_MAX, LONG, "no tiered storage"),
    "remote.log.manager.follower.thread.pool.size": (integer(1), 2, INT, "no tiered storage"),
    "remote.log.reader.threads": (integer(1), 10, INT, "no tiered storage"),
    "transaction.partition.verification.enable": (boolean, True, BOOLEAN,
                                                  "transactions are always verified (KIP-890)"),
    "ssl.engine.factory.class": (_text, None, CLASS, "TLS is Python's ssl module"),
    "ssl.keymanager.algorithm": (_text, "SunX509", STRING, "a Java key manager setting"),
    "ssl.trustmanager.algorithm": (_text, "PKIX", STRING, "a Java trust manager setting"),
    "ssl.provider": (_text, None, STRING, "a Java security provider setting"),
    "ssl.secure.random.implementation": (_text, None, STRING, "a Java SecureRandom setting"),
    "sasl.jaas.config": (_text, None, PASSWORD, "SASL users come from Weir's own settings and SCRAM store"),
    "sasl.kerberos.kinit.cmd": (_text, "/usr/bin/kinit", STRING, "no GSSAPI (Kerberos)"),
    "sasl.kerberos.min.time.before.relogin": (_LONG(), 60000, LONG, "no GSSAPI (Kerberos)"),
    "sasl.kerberos.principal.to.local.rules": (_names, ("DEFAULT",), LIST, "no GSSAPI (Kerberos)"),
    "sasl.kerberos.service.name": (_text, None, STRING, "no GSSAPI (Kerberos)"),
    "sasl.kerberos.ticket.renew.jitter": (_DOUBLE(), 0.05, DOUBLE, "no GSSAPI (Kerberos)"),
    "sasl.kerberos.ticket.renew.window.factor": (_DOUBLE(), 0.8, DOUBLE, "no GSSAPI (Kerberos)"),
    "sasl.login.refresh.buffer.seconds": (integer(0, 3600), 300, SHORT, "a client's token refresh setting"),
    "sasl.login.refresh.min.period.seconds": (integer(0, 900), 60, SHORT, "a client's token refresh setting"),
    "sasl.login.refresh.window.factor": (_DOUBLE(0.5, 1.0), 0.8, DOUBLE, "a client's token refresh setting"),
    "sasl.login.refresh.window.jitter": (_DOUBLE(0.0, 0.25), 0.05, DOUBLE, "a client's token refresh setting"),
    # Kafka 4.4's additions
    "errors.deadletterqueue.auto.create.topics.enable": (boolean, False, BOOLEAN,
                                                         "no share-group dead-letter queues (KIP-1191)"),
    "errors.deadletterqueue.topic.name.prefix": (_text, "dlq.", STRING, "no share-group dead-letter queues (KIP-1191)"),
    "log.remote.copy.lag.bytes": (_LONG(-1), -1, LONG, "no tiered storage"),
    "log.remote.copy.lag.ms": (_LONG(-1), 0, LONG, "no tiered storage"),
    "group.streams.assignors": (_names, ("sticky",), LIST, "Weir's one streams task assignor is sticky (KIP-1071)"),
    "group.streams.rack.aware.assignment.tags": (_names, (), LIST, "no rack-aware task placement (Kafka 4.4's "
                                                  "sticky assignor has none): members lacking the tags are told so"),
    # bounds of group configs (broker/group/configs.py) for group types and intervals Weir lacks
    "group.consumer.assignment.interval.ms": (integer(0), 1000, INT,
                                              "a target assignment is computed at once, in the heartbeat"),
    "group.consumer.min.assignment.interval.ms": (integer(0), 0, INT, "bounds an inert group config"),
    "group.consumer.max.assignment.interval.ms": (integer(0), 15000, INT, "bounds an inert group config"),
    # (the share group settings Weir acts on are in config.py)
    **{f"group.share.{name}": (integer(0), default, INT, "a share group's target assignment is computed at once")
       for name, default in (("assignment.interval.ms", 1000), ("min.assignment.interval.ms", 0),
                             ("max.assignment.interval.ms", 15000))},
    # (the streams group settings Weir acts on are in broker/group/streams/settings.py)
    "group.streams.acceptable.recovery.lag": (_LONG(0), 10000, LONG, "no warm-up tasks (Kafka 4.4 assigns none "
                                              "either, KIP-1071): only passed on to the members"),
}

#: Settings for ``config.SETTINGS``: name -> (parse, default, doc)
BROKER_SETTINGS = {name: (parse, default, NO_EFFECT + why) for name, (parse, default, _t, why) in _BROKER.items()}
#: Kafka's type of each, for DescribeConfigs (Weir's own settings are typed from their values)
TYPES = {name: kind for name, (_p, _d, kind, _w) in _BROKER.items()}
PASSWORDS = frozenset(name for name, kind in TYPES.items() if kind == PASSWORD)

#: topic setting -> (its broker synonym, parse, Kafka's default when it has no synonym, why)
_TOPIC: dict[str, tuple[str | None, Callable[[str], Any], Any, str]] = {
    "file.delete.delay.ms": ("log.segment.delete.delay.ms", _LONG(0), None, "segments are deleted at once"),
    "local.retention.bytes": ("log.local.retention.bytes", _LONG(-2), None, "no tiered storage"),
    "local.retention.ms": ("log.local.retention.ms", _LONG(-2), None, "no tiered storage"),
    "preallocate": ("log.preallocate", boolean, None, "segment files grow as they are written"),
    "segment.jitter.ms": ("log.roll.jitter.ms", _LONG(0), None, "segments roll at segment.ms exactly"),
    "remote.storage.enable": (None, boolean, False, "no tiered storage"),
    "remote.log.copy.disable": (None, boolean, False, "no tiered storage"),
    "remote.log.delete.on.disable": (None, boolean, False, "no tiered storage"),
    "leader.replication.throttled.replicas": (None, _replicas, (), "one node, no replication"),
    "follower.replication.throttled.replicas": (None, _replicas, (), "one node, no replication"),
    "remote.copy.lag.bytes": ("log.remote.copy.lag.bytes", _LONG(-1), None, "no tiered storage"),
    "remote.copy.lag.ms": ("log.remote.copy.lag.ms", _LONG(-1), None, "no tiered storage"),
    "errors.deadletterqueue.group.enable": (None, boolean, False, "no share-group dead-letter queues (KIP-1191)"),
}
#: for ``config.TOPIC_SETTINGS``: name -> (broker synonym, parse)
TOPIC_SETTINGS = {name: (broker, parse) for name, (broker, parse, _d, _w) in _TOPIC.items()}
#: for ``config.TOPIC_FIXED_DEFAULTS``: those with no broker synonym
TOPIC_DEFAULTS = {name: default for name, (broker, _p, default, _w) in _TOPIC.items() if broker is None}
TOPIC_DOCS = {name: NO_EFFECT + why for name, (_b, _p, _d, why) in _TOPIC.items()}
TOPIC_TYPES = {"file.delete.delay.ms": LONG, "local.retention.bytes": LONG, "local.retention.ms": LONG,
               "segment.jitter.ms": LONG, "leader.replication.throttled.replicas": LIST,
               "follower.replication.throttled.replicas": LIST, "remote.copy.lag.bytes": LONG,
               "remote.copy.lag.ms": LONG}
# min.insync.replicas and unclean.leader.election.enable now have their broker synonyms here
TOPIC_SYNONYMS = {"min.insync.replicas": "min.insync.replicas",
                  "unclean.leader.election.enable": "unclean.leader.election.enable",
                  "segment.index.bytes": "log.index.size.max.bytes"}

#: Kafka 4.3's dynamic broker settings (DynamicBrokerConfig.ALL_DYNAMIC_CONFIGS, without the
#: listener-prefixed forms) and which of them only a node, not the cluster default, may set.
PER_BROKER = frozenset({
    "cordoned.log.dirs", "listener.security.protocol.map", "listeners", "principal.builder.class",
    "sasl.enabled.mechanisms", "sasl.jaas.config", "sasl.kerberos.kinit.cmd", "sasl.kerberos.min.time.before.relogin",
    "sasl.kerberos.principal.to.local.rules", "sasl.kerberos.service.name", "sasl.kerberos.ticket.renew.jitter",
    "sasl.kerberos.ticket.renew.window.factor", "sasl.login.refresh.buffer.seconds",
    "sasl.login.refresh.min.period.seconds", "sasl.login.refresh.window.factor", "sasl.login.refresh.window.jitter",
    "sasl.mechanism.inter.broker.protocol", "ssl.cipher.suites", "ssl.client.auth", "ssl.enabled.protocols",
    "ssl.endpoint.identification.algorithm", "ssl.engine.factory.class", "ssl.key.password",
    "ssl.keymanager.algorithm", "ssl.keystore.certificate.chain", "ssl.keystore.key", "ssl.keystore.location",
    "ssl.keystore.password", "ssl.keystore.type", "ssl.protocol", "ssl.provider", "ssl.secure.random.implementation",
    "ssl.trustmanager.algorithm", "ssl.truststore.certificates", "ssl.truststore.location",
    "ssl.truststore.password", "ssl.truststore.type"})
#: Kafka lets these change only per listener (listener.name.<l>.<name>): "These security configs can
#: be dynamically updated only per-listener using the listener prefix"
PER_LISTENER_ONLY = frozenset({
    "ssl.key.password", "ssl.keystore.certificate.chain", "ssl.keystore.key", "ssl.keystore.location",
    "ssl.keystore.password", "ssl.keystore.type", "ssl.truststore.certificates", "ssl.truststore.location",
    "ssl.truststore.password", "ssl.truststore.type"})
KAFKA_DYNAMIC = PER_BROKER | frozenset({
    "errors.deadletterqueue.auto.create.topics.enable", "errors.deadletterqueue.topic.name.prefix",
    "log.remote.copy.lag.bytes", "log.remote.copy.lag.ms", "max.decompressed.message.bytes",
    "background.threads", "compression.gzip.level", "compression.lz4.level", "compression.type",
    "compression.zstd.level", "config.providers", "follower.fetch.last.tiered.offset.enable",
    "follower.replication.throttled.rate", "group.consumer.assignment.interval.ms",
    "group.coordinator.cached.buffer.max.bytes", "group.share.assignment.interval.ms",
    "group.streams.assignment.interval.ms", "leader.replication.throttled.rate", "log.cleaner.backoff.ms",
    "log.cleaner.dedupe.buffer.size", "log.cleaner.delete.retention.ms", "log.cleaner.io.buffer.load.factor",
    "log.cleaner.io.buffer.size", "log.cleaner.io.max.bytes.per.second", "log.cleaner.max.compaction.lag.ms",
    "log.cleaner.min.cleanable.ratio", "log.cleaner.min.compaction.lag.ms", "log.cleaner.threads",
    "log.cleanup.policy", "log.flush.interval.messages", "log.flush.interval.ms", "log.index.interval.bytes",
    "log.index.size.max.bytes", "log.local.retention.bytes", "log.local.retention.ms",
    "log.message.timestamp.after.max.ms", "log.message.timestamp.before.max.ms", "log.message.timestamp.type",
    "log.preallocate", "log.retention.bytes", "log.retention.ms", "log.roll.jitter.ms", "log.roll.ms",
    "log.segment.bytes", "log.segment.delete.delay.ms", "max.connection.creation.rate", "max.connections",
    "max.connections.per.ip", "max.connections.per.ip.overrides", "message.max.bytes", "metric.reporters",
    "min.insync.replicas", "num.io.threads", "num.network.threads", "num.recovery.threads.per.data.dir",
    "num.replica.fetchers", "producer.id.expiration.ms", "remote.fetch.max.wait.ms",
    "remote.list.offsets.request.timeout.ms", "remote.log.index.file.cache.total.size.bytes",
    "remote.log.manager.copier.thread.pool.size", "remote.log.manager.copy.max.bytes.per.second",
    "remote.log.manager.expiration.thread.pool.size", "remote.log.manager.fetch.max.bytes.per.second",
    "remote.log.manager.follower.thread.pool.size", "remote.log.reader.threads",
    "replica.alter.log.dirs.io.max.bytes.per.second", "share.coordinator.cached.buffer.max.bytes",
    "transaction.partition.verification.enable", "unclean.leader.election.enable"})
