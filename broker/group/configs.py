"""Group configs: the GROUP (32) config resource of DescribeConfigs and IncrementalAlterConfigs.

Kafka 4 lets an operator override some broker ``group.*`` settings for one group
(``kafka-configs --entity-type groups --entity-name g --alter --add-config
consumer.session.timeout.ms=50000``). The names, types, defaults (the broker synonym's value)
and checks are Kafka 4.4's GroupConfig: an unknown name or a value that does not parse is
INVALID_CONFIG, and so is a value outside the broker's ``group.*.min/max.*`` bounds, with
Kafka's messages. A group need not exist to have configs, as in Kafka.

Weir acts on ``consumer.session.timeout.ms`` and ``consumer.heartbeat.interval.ms`` (the
consumer group coordinator reads them per group at each heartbeat) and on the share group
settings (``broker/group/share``, ``broker/share``) but ``share.assignment.interval.ms``, and on
the streams group settings (``broker/group/streams``) but ``streams.rack.aware.assignment.tags``;
the others are stored and described only (consumer and share groups compute a target assignment at
once). Their documentation in DescribeConfigs says so.

Kafka keeps them as ConfigRecords in its metadata log; Weir keeps every group's overrides in
``<data-dir>/group-configs.json``, replaced atomically and durably on each change (as
``dynamic_config.py`` keeps dynamic broker settings), and loads it at start-up.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from collections.abc import Callable

from weir.protocol.errors import Errors, KafkaError

from .. import config_sources as sources
from ..config import BrokerConfig
from ..inert_settings import NO_EFFECT, boolean, integer, one_of
from ..log import disk

GROUP = 32  # the config resource type
GROUP_CONFIG_SOURCE = 8  # ConfigSource GROUP_CONFIG
FILE_NAME = "group-configs.json"


def _auto_offset_reset(text: str) -> str:
    value = text.strip()
    if value not in ("latest", "earliest") and not value.startswith("by_duration:"):
        raise ValueError("String must be one of: latest, earliest, by_duration:PnDTnHnMn.nS")
    return value


def _text_or_none(text: str) -> str | None:
    return text.strip() or None


def _rack_tags(text: str) -> tuple[str, ...]:
    tags = tuple(part.strip() for part in text.split(",") if part.strip())
    if len(set(tags)) != len(tags):
        raise ValueError("streams.rack.aware.assignment.tags must not contain duplicate tag keys.")
    return tags


def _dlq_topic(text: str) -> str:
    if text.strip().startswith("__"):
        raise ValueError("errors.deadletterqueue.topic.name: DLQ topic name must not start with '__'")
    return text.strip()


@dataclass(frozen=True)
class GroupSetting:
    parse: Callable[[str], Any]
    synonym: str | None      # the broker setting it defaults to
    default: Any             # Kafka's default where it has no broker synonym
    config_type: int
    doc: str
    low: str | None = None   # broker settings bounding it, checked in Kafka's order
    high: str | None = None


def _bounded(kind: str, name: str, minimum: int, doc: str, *, bounds: bool = True) -> GroupSetting:
    prefix = f"group.{kind}."
    return GroupSetting(integer(minimum), prefix + name, None, sources.INT, doc,
                        prefix + "min." + name if bounds else None, prefix + "max." + name if bounds else None)


_SHARE, _STREAMS = "A share group setting (KIP-932), as Kafka's.", "A streams group setting (KIP-1071), as Kafka's."
_INTERVAL = NO_EFFECT + "a target assignment is computed at once, in the heartbeat"
_DLQ = NO_EFFECT + "no share-group dead-letter queues (KIP-1191)"
#: Kafka 4.4's group configs (not its internal ones), in the order its GroupConfig checks their bounds
SETTINGS: dict[str, GroupSetting] = {
    "consumer.heartbeat.interval.ms": _bounded("consumer", "heartbeat.interval.ms", 1,
                                               "How often a member of this consumer group is told to heartbeat."),
    "consumer.session.timeout.ms": _bounded("consumer", "session.timeout.ms", 1,
                                            "A member of this consumer group is removed after this long "
                                            "without a heartbeat."),
    "consumer.assignment.interval.ms": _bounded("consumer", "assignment.interval.ms", 0, _INTERVAL),
    "share.heartbeat.interval.ms": _bounded("share", "heartbeat.interval.ms", 1,
                                            "How often a member of this share group is told to heartbeat."),
    "share.session.timeout.ms": _bounded("share", "session.timeout.ms", 1, "A member of this share group is "
                                         "removed after this long without a heartbeat."),
    "share.record.lock.duration.ms": _bounded("share", "record.lock.duration.ms", 1000, "How long a member of "
                                              "this share group holds the records it acquired."),
    "share.delivery.count.limit": _bounded("share", "delivery.count.limit", 2, "Deliveries of a record before "
                                           "this share group archives it."),
    "share.partition.max.record.locks": _bounded("share", "partition.max.record.locks", 100,
                                                 "Records in flight per share-partition of this group."),
    "share.assignment.interval.ms": _bounded("share", "assignment.interval.ms", 0, _INTERVAL),
    "streams.session.timeout.ms": _bounded("streams", "session.timeout.ms", 1, _STREAMS),
    "streams.heartbeat.interval.ms": _bounded("streams", "heartbeat.interval.ms", 1, _STREAMS),
    "streams.num.standby.replicas": GroupSetting(integer(0), "group.streams.num.standby.replicas", None, sources.INT,
                                                 _STREAMS, None, "group.streams.max.standby.replicas"),
    "streams.assignment.interval.ms": _bounded("streams", "assignment.interval.ms", 0, _STREAMS),
    "streams.task.offset.interval.ms": GroupSetting(integer(1), "group.streams.task.offset.interval.ms", None,
                                                    sources.INT, _STREAMS, "group.streams.min.task.offset.interval.ms"),
    "streams.num.warmup.replicas": GroupSetting(integer(0), "group.streams.num.warmup.replicas", None, sources.INT,
                                                NO_EFFECT + "Kafka 4.4.0 assigns no warm-up tasks either", None,
                                                "group.streams.max.warmup.replicas"),
    "streams.acceptable.recovery.lag": GroupSetting(integer(0), "group.streams.acceptable.recovery.lag", None,
                                                    sources.LONG, _STREAMS),
    "streams.initial.rebalance.delay.ms": _bounded("streams", "initial.rebalance.delay.ms", 0, _STREAMS,
                                                   bounds=False),
    "share.auto.offset.reset": GroupSetting(_auto_offset_reset, None, "latest", sources.STRING,
                                            "Where a share-partition of this group starts when first read."),
    "share.isolation.level": GroupSetting(one_of("read_committed", "read_uncommitted"), None, "read_uncommitted",
                                          sources.STRING, _SHARE),
    "share.renew.acknowledge.enable": GroupSetting(boolean, None, True, sources.BOOLEAN, _SHARE),
    "streams.assignor.name": GroupSetting(_text_or_none, None, None, sources.STRING, _STREAMS),
    "streams.rack.aware.assignment.tags": GroupSetting(_rack_tags, None, (), sources.LIST, _STREAMS),
    "errors.deadletterqueue.topic.name": GroupSetting(_dlq_topic, None, "", sources.STRING, _DLQ),
    "errors.deadletterqueue.copy.record.enable": GroupSetting(boolean, None, False, sources.BOOLEAN, _DLQ),
}
#: Kafka's internal group configs: accepted, and described only where a group overrides them
INTERNAL = frozenset({"streams.task.offset.interval.ms", "streams.num.warmup.replicas",
                      "streams.acceptable.recovery.lag"})
# "session must exceed heartbeat", checked last, as Kafka does
_SESSION_OVER_HEARTBEAT = [("consumer.session.timeout.ms", "consumer.heartbeat.interval.ms"),
                           ("share.session.timeout.ms", "share.heartbeat.interval.ms"),
                           ("streams.session.timeout.ms", "streams.heartbeat.interval.ms")]


def invalid(message: str) -> KafkaError:
    return KafkaError(Errors.INVALID_CONFIG, message)


class GroupConfigs:
    """Every group's config overrides (texts, as set), persisted; the one owner of them."""

    def __init__(self, data_dir: Path, config: BrokerConfig):
        self.path = Path(data_dir) / FILE_NAME
        self.config = config
        self.texts: dict[str, dict[str, str]] = {}

    def load(self) -> None:
        if self.path.exists():
            self.texts = {group: dict(texts) for group, texts in json.loads(self.path.read_text()).items()}

    def current(self, group_id: str) -> dict[str, str]:
        return dict(self.texts.get(group_id, {}))

    def default(self, name: str) -> Any:
        setting = SETTINGS[name]
        if name == "streams.assignor.name":  # Kafka describes the broker's first assignor as its value
            return self.config["group.streams.assignors"][0]
        return self.config[setting.synonym] if setting.synonym is not None else setting.default

    def value(self, group_id: str, name: str) -> Any:
        """The effective value for one group: its override, else the broker's setting."""
        text = self.texts.get(group_id, {}).get(name)
        return SETTINGS[name].parse(text) if text is not None else self.default(name)

    def validate(self, texts: dict[str, str]) -> None:
        """Kafka's GroupConfig.validate: names, then values, then bounds, then session > heartbeat."""
        for name in texts:
            if name not in SETTINGS:
                raise invalid(f"Unknown group config name: {name}")
        values = {name: self.default(name) for name in SETTINGS}
        for name, text in texts.items():
            try:
                values[name] = SETTINGS[name].parse(text)
            except ValueError as exc:
                raise invalid(f"Invalid value {text} for configuration {name}: {exc}") from None
        for name, setting in SETTINGS.items():
            low = self.config[setting.low] if setting.low is not None else None
            high = self.config[setting.high] if setting.high is not None else None
            if low is not None and high is not None and not low <= values[name] <= high:
                raise invalid(f"{name} must be in the range {low} to {high} inclusive.")
            if high is not None and low is None and values[name] > high:
                raise invalid(f"{name} must be less than or equal to {high}")
            if low is not None and high is None and values[name] < low:
                raise invalid(f"{name} must be greater than or equal to {low}")
        assignor = values["streams.assignor.name"]
        if assignor is not None and assignor not in self.config["group.streams.assignors"]:
            raise invalid(f"streams.assignor.name '{assignor}' is not a registered task assignor. "
                          f"Registered assignors are: [{', '.join(self.config['group.streams.assignors'])}].")
        for session, heartbeat in _SESSION_OVER_HEARTBEAT:
            if values[session] <= values[heartbeat]:
                raise invalid(f"{session} must be greater than {heartbeat}")

    def replace(self, group_id: str, texts: dict[str, str]) -> None:
        """Make ``texts`` the group's whole set of overrides: checked, persisted, then installed."""
        self.validate(texts)
        updated = {group: dict(current) for group, current in self.texts.items()}
        if texts:
            updated[group_id] = dict(texts)
        else:
            updated.pop(group_id, None)
        disk.replace_durably(self.path, json.dumps(updated, sort_keys=True).encode())
        self.texts = updated

    def entries(self, group_id: str) -> list[sources.Entry]:
        """DescribeConfigs: every group config with its value and sources, as Kafka lists them."""
        overrides = self.texts.get(group_id, {})
        entries = []
        for name in sorted(SETTINGS):
            if name in INTERNAL and name not in overrides:
                continue
            setting = SETTINGS[name]
            found = sources.synonyms(self.config, setting.synonym) if setting.synonym is not None else []
            if name in overrides:
                found.insert(0, (name, sources.text(SETTINGS[name].parse(overrides[name])), GROUP_CONFIG_SOURCE))
            value = sources.text(self.value(group_id, name))
            entries.append(sources.Entry(name, value, found[0][2] if found else sources.DEFAULT_CONFIG, False, found,
                                         setting.config_type, setting.doc))
        return entries

