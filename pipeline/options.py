"""The options of Spark's Kafka source and sink, read the way Spark reads them.

Option names are case-insensitive in Spark (its data source options map is);
``SourceOptions`` keeps them lower-cased. ``kafka.*`` options go to the client
under the Java client's names turned into the Python client's snake_case
keywords; the ones Spark's Kafka source refuses are refused here too.
"""

from __future__ import annotations

import inspect
import json
import logging
import re
from dataclasses import dataclass

from weir.client import Consumer, Producer, TopicPartition
from weir.client.java_config import is_security_setting

log = logging.getLogger(__name__)

EARLIEST, LATEST = -2, -1  # Spark's (and ListOffsets') spellings inside offset JSON

# Spark's KafkaSourceProvider refuses these: the source owns positions, commits and decoding.
_REFUSED = {"auto.offset.reset": "use startingOffsets instead",
            "key.deserializer": "keys are returned as binary; cast them in the query",
            "value.deserializer": "values are returned as binary; cast them in the query",
            "enable.auto.commit": "offsets live in Spark's checkpoint",
            "interceptor.classes": "interceptors are not supported"}
_CONSUMER_KEYWORDS = set(inspect.signature(Consumer.__init__).parameters) - {"self", "topics"}

# Spark's Kafka sink refuses these: it serializes, and owns transactional ids (the exactly-once writer).
_SINK_REFUSED = {"key.serializer": "keys are written as binary or string columns",
                 "value.serializer": "values are written as binary or string columns",
                 "interceptor.classes": "interceptors are not supported",
                 "transactional.id": "the exactly-once sink names its tasks' transactional ids itself"}
# Java producer settings whose keyword in the client differs from the snake_case of the name.
_PRODUCER_RENAMED = {"max.in.flight.requests.per.connection": "max_in_flight"}
_PRODUCER_KEYWORDS = set(inspect.signature(Producer.__init__).parameters) - {"self", "bootstrap_servers",
                                                                             "partitioner", "transactional_id"}
_BOOLEANS = {"true": True, "false": False}


class OptionError(ValueError):
    """An option Spark's Kafka source would refuse (Spark raises IllegalArgumentException)."""


@dataclass(frozen=True)
class Subscription:
    kind: str  # "subscribe", "subscribePattern" or "assign"
    topics: tuple[str, ...] = ()
    pattern: str | None = None
    partitions: tuple[TopicPartition, ...] = ()


def lower(options) -> dict[str, str]:
    return {str(k).lower(): str(v) for k, v in dict(options).items()}


def bootstrap(options: dict[str, str]) -> str:
    servers = options.get("kafka.bootstrap.servers")
    if not servers:
        raise OptionError("Option 'kafka.bootstrap.servers' must be specified for configuring Kafka consumer")
    return servers


def client_settings(options: dict[str, str]) -> dict:
    """``kafka.*`` options as client keywords; isolation defaults to read_committed."""
    settings: dict = {"isolation_level": "read_committed"}
    for name, value in options.items():
        if not name.startswith("kafka.") or name == "kafka.bootstrap.servers":
            continue
        java_name = name[len("kafka."):]
        if is_security_setting(java_name):
            continue  # KafkaSecurity (pipeline/security.py) takes these
        if java_name in _REFUSED:
            raise OptionError(f"Kafka option '{java_name}' is not supported: {_REFUSED[java_name]}")
        keyword = java_name.replace(".", "_")
        if keyword == "group_id":
            continue  # the source never joins a group; Spark uses group.id only to name its consumers
        if keyword not in _CONSUMER_KEYWORDS:
            log.warning("kafka option %s is not a setting of the Weir client; ignored", java_name)
            continue
        settings[keyword] = int(value) if value.lstrip("-").isdigit() else value
    return settings


def producer_settings(options: dict[str, str]) -> dict:
    """``kafka.*`` options as Producer keywords, as Spark's Kafka sink hands them to the Java producer:
    every producer setting the client has is honoured (typed: numbers, booleans), the ones Spark refuses
    are refused, and any other Java producer setting is ignored with a warning naming it."""
    settings: dict = {}
    for name, value in options.items():
        if not name.startswith("kafka.") or name == "kafka.bootstrap.servers":
            continue
        java_name = name[len("kafka."):]
        if is_security_setting(java_name):
            continue  # KafkaSecurity (pipeline/security.py) takes these
        if java_name in _SINK_REFUSED:
            raise OptionError(f"Kafka option '{java_name}' is not supported: {_SINK_REFUSED[java_name]}")
        keyword = _PRODUCER_RENAMED.get(java_name, java_name.replace(".", "_"))
        if keyword not in _PRODUCER_KEYWORDS:
            log.warning("kafka option %s is not a setting of the Weir producer; ignored", java_name)
            continue
        text = value.strip()
        settings[keyword] = int(text) if text.lstrip("-").isdigit() else _BOOLEANS.get(text.lower(), text)
    return settings


def subscription(options: dict[str, str]) -> Subscription:
    given = [k for k in ("subscribe", "subscribepattern", "assign") if options.get(k, "").strip()]
    if len(given) != 1:
        raise OptionError("One of the following options must be specified for Kafka source: "
                          "subscribe, subscribePattern, assign")
    kind = given[0]
    value = options[kind].strip()
    if kind == "subscribe":
        topics = tuple(t.strip() for t in value.split(",") if t.strip())
        if not topics:
            raise OptionError(f"No topics to subscribe to as specified value for option 'subscribe' is '{value}'")
        return Subscription("subscribe", topics=topics)
    if kind == "subscribepattern":
        re.compile(value)
        return Subscription("subscribePattern", pattern=value)
    parsed = json.loads(value)
    partitions = tuple(TopicPartition(topic, int(p)) for topic, parts in parsed.items() for p in parts)
    return Subscription("assign", partitions=partitions)


def offset_spec(text: str | None, default: str, *, option: str) -> str | dict[TopicPartition, int]:
    """``earliest``, ``latest`` or {tp: offset} from per-partition JSON (-2 earliest, -1 latest)."""
    text = (text or default).strip()
    if text.lower() in ("earliest", "latest"):
        return text.lower()
    try:
        parsed = json.loads(text)
        return {TopicPartition(topic, int(p)): int(o) for topic, parts in parsed.items() for p, o in parts.items()}
    except (ValueError, AttributeError) as exc:
        raise OptionError(f"Option '{option}' is earliest, latest or per-partition JSON, not {text!r}") from exc


def timestamp_spec(options: dict[str, str], side: str = "starting") -> int | dict[TopicPartition, int] | None:
    """{side}Timestamp (every partition) wins over {side}OffsetsByTimestamp, as in Spark; side is
    ``starting`` or ``ending``."""
    if options.get(f"{side}timestamp"):
        return int(options[f"{side}timestamp"])
    if options.get(f"{side}offsetsbytimestamp"):
        parsed = json.loads(options[f"{side}offsetsbytimestamp"])
        return {TopicPartition(topic, int(p)): int(ts) for topic, parts in parsed.items() for p, ts in parts.items()}
    return None


def by_timestamp_strategy(options: dict[str, str]) -> str:
    """startingOffsetsByTimestampStrategy: ``error`` (Spark's default) or ``latest``."""
    value = options.get("startingoffsetsbytimestampstrategy", "error").lower()
    if value not in ("error", "latest"):
        raise OptionError(f"Option 'startingOffsetsByTimestampStrategy' is error or latest, not {value!r}")
    return value


_DURATION_UNITS = {"ms": 1, "s": 1000, "m": 60_000, "min": 60_000, "h": 3_600_000, "d": 86_400_000}


def duration_ms(options: dict[str, str], name: str, default: str) -> int:
    """A duration such as ``15m`` or ``500ms`` (Spark's maxTriggerDelay; a bare number is milliseconds)."""
    text = options.get(name.lower(), default).strip().lower()
    match = re.fullmatch(r"(\d+)\s*([a-z]*)", text)
    if not match or match.group(2) not in _DURATION_UNITS | {"": 1}:
        raise OptionError(f"Option '{name}' is a duration such as 15m or 500ms, not {text!r}")
    return int(match.group(1)) * _DURATION_UNITS.get(match.group(2), 1)


def flag(options: dict[str, str], name: str, default: bool) -> bool:
    value = options.get(name.lower())
    if value is None:
        return default
    if value.lower() not in ("true", "false"):
        raise OptionError(f"Option '{name}' is true or false, not {value!r}")
    return value.lower() == "true"


def positive_int(options: dict[str, str], name: str) -> int | None:
    value = options.get(name.lower())
    if value is None:
        return None
    if int(value) <= 0:
        raise OptionError(f"Option '{name}' must be a positive integer")
    return int(value)


def offsets_json(offsets: dict[TopicPartition, int]) -> dict[str, dict[str, int]]:
    """Spark's per-partition offset JSON (the streaming checkpoint's form)."""
    out: dict[str, dict[str, int]] = {}
    for tp in sorted(offsets):
        out.setdefault(tp.topic, {})[str(tp.partition)] = offsets[tp]
    return out


def offsets_from_json(data: dict) -> dict[TopicPartition, int]:
    return {TopicPartition(topic, int(p)): int(o) for topic, parts in data.items() for p, o in parts.items()}
