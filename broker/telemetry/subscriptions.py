"""CLIENT_METRICS (16) config resources: KIP-714 subscriptions, as Kafka 4.4's ClientMetricsConfigs.

A subscription is a named set of three configs: ``metrics`` (metric name prefixes, ``*`` for
all), ``interval.ms`` (push interval, 100 ms to 1 hour, default 5 minutes) and ``match`` (client
selectors ``name=regex`` over client_instance_id, client_id, client_software_name,
client_software_version, client_source_address, client_source_port; none matches every
client). Errors and messages are Kafka's: an unknown name or an interval out of range is
INVALID_REQUEST, a value that does not parse or a bad selector INVALID_CONFIG; deleting the last
config removes the subscription. DescribeConfigs lists the three for any name (defaults for an
unknown one), as Kafka does.

Kafka keeps them as ConfigRecords in its metadata log; Weir keeps them in
``<data-dir>/client-metrics.json``, replaced durably on each change (as ``group/configs.py``).
Selectors are Python regular expressions matched whole (Kafka's are java.util.regex, also matched
whole): the common syntax is the same.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from weir.protocol.errors import Errors, KafkaError

from .. import config_sources as sources
from ..log import disk

CLIENT_METRICS = 16  # the config resource type
CLIENT_METRICS_CONFIG_SOURCE = 7  # ConfigSource CLIENT_METRICS_CONFIG
FILE_NAME = "client-metrics.json"
METRICS, INTERVAL_MS, MATCH = "metrics", "interval.ms", "match"
ALL_METRICS = "*"
DEFAULT_INTERVAL_MS = 5 * 60 * 1000
MIN_INTERVAL_MS, MAX_INTERVAL_MS = 100, 3_600_000
SELECTORS = frozenset({"client_instance_id", "client_id", "client_software_name", "client_software_version",
                       "client_source_address", "client_source_port"})
_DOCS = {METRICS: "Telemetry metric name prefix list", INTERVAL_MS: "Metrics push interval in milliseconds",
         MATCH: "Client match criteria"}
_TYPES = {METRICS: sources.LIST, INTERVAL_MS: sources.INT, MATCH: sources.LIST}
_INT_MAX = 2**31 - 1


def parse_list(text: str) -> list[str]:
    """Kafka's LIST type: comma-separated, spaces around commas dropped; "" is the empty list."""
    text = text.strip()
    return [] if not text else re.split(r"\s*,\s*", text)


def _parse_int(name: str, text: str) -> int:
    try:
        value = int(text.strip())
    except ValueError:
        value = None
    if value is None or not -2**31 <= value <= _INT_MAX:
        raise KafkaError(Errors.INVALID_CONFIG, f"Invalid value {text} for configuration {name}: "
                                                f"Not a number of type INT")
    return value


def parse_selectors(patterns: list[str]) -> dict[str, re.Pattern]:
    """``name=regex`` pairs, split at the only '=' (Kafka refuses more than one, or none)."""
    selectors = {}
    for pattern in patterns:
        parts = pattern.split("=")
        while parts and parts[-1] == "":  # Java's String.split drops trailing empty strings
            parts.pop()
        name = parts[0].strip() if parts else ""
        if len(parts) != 2 or name not in SELECTORS:
            raise KafkaError(Errors.INVALID_CONFIG, f"Illegal client matching pattern: {pattern}")
        try:
            selectors[name] = re.compile(parts[1].strip())
        except re.error:
            raise KafkaError(Errors.INVALID_CONFIG, f"Illegal client matching pattern: {pattern}") from None
    return selectors


@dataclass(frozen=True)
class Subscription:
    name: str
    metrics: frozenset[str]
    interval_ms: int
    selectors: dict[str, re.Pattern]

    def matches(self, client: dict[str, str]) -> bool:
        return all(pattern.fullmatch(client.get(name, "")) for name, pattern in self.selectors.items())


def _subscription(name: str, texts: dict[str, str]) -> Subscription:
    interval = texts.get(INTERVAL_MS)
    return Subscription(name, frozenset(parse_list(texts.get(METRICS, ""))),
                        DEFAULT_INTERVAL_MS if interval is None else int(interval),
                        parse_selectors(parse_list(texts.get(MATCH, ""))))


class ClientMetricsConfigs:
    """Every subscription's configs (texts, as set), persisted; the one owner of them."""

    def __init__(self, data_dir: Path):
        self.path = Path(data_dir) / FILE_NAME
        self.texts: dict[str, dict[str, str]] = {}
        self.subscriptions: dict[str, Subscription] = {}
        #: bumped at each change, so client instances re-evaluate their subscription (Kafka's subscriptionUpdateVersion)
        self.version = 0

    def load(self) -> None:
        if self.path.exists():
            self.texts = {name: dict(texts) for name, texts in json.loads(self.path.read_text()).items()}
            self.subscriptions = {name: _subscription(name, texts) for name, texts in self.texts.items()}

    def current(self, name: str) -> dict[str, str]:
        return dict(self.texts.get(name, {}))

    @staticmethod
    def validate(name: str, texts: dict[str, str]) -> None:
        """Kafka's ClientMetricsConfigs.validate, its checks in its order."""
        if not name:
            raise KafkaError(Errors.INVALID_REQUEST, "Subscription name can't be empty")
        for key in texts:
            if key not in _DOCS:
                raise KafkaError(Errors.INVALID_REQUEST, f"Unknown client metrics configuration: {key}")
        if INTERVAL_MS in texts:
            interval = _parse_int(INTERVAL_MS, texts[INTERVAL_MS])
            if not MIN_INTERVAL_MS <= interval <= MAX_INTERVAL_MS:
                raise KafkaError(Errors.INVALID_REQUEST, f"Invalid value {interval} for {INTERVAL_MS}, interval "
                                                         f"must be between 100 and 3600000 (1 hour)")
        if MATCH in texts:
            parse_selectors(parse_list(texts[MATCH]))

    def replace(self, name: str, texts: dict[str, str]) -> None:
        """Make ``texts`` the subscription's whole set of configs (none left removes it): checked,
        persisted, then installed."""
        self.validate(name, texts)
        texts = {key: value if key == INTERVAL_MS else ",".join(parse_list(value)) for key, value in texts.items()}
        updated = {key: dict(value) for key, value in self.texts.items()}
        if texts:
            updated[name] = texts
        else:
            updated.pop(name, None)
        disk.replace_durably(self.path, json.dumps(updated, sort_keys=True).encode())
        self.texts = updated
        self.subscriptions = {key: _subscription(key, value) for key, value in updated.items()}
        self.version += 1

    def entries(self, name: str) -> list[sources.Entry]:
        """DescribeConfigs: the three configs, set ones as CLIENT_METRICS_CONFIG, others DEFAULT_CONFIG."""
        if not name:
            raise KafkaError(Errors.INVALID_REQUEST, "Client metrics subscription name must not be empty")
        texts = self.texts.get(name, {})
        defaults = {METRICS: "", INTERVAL_MS: str(DEFAULT_INTERVAL_MS), MATCH: ""}
        entries = []
        for key in sorted(_DOCS):
            if key in texts:
                found: list[tuple[str, str | None, int]] = [(key, texts[key], CLIENT_METRICS_CONFIG_SOURCE)]
                entries.append(sources.Entry(key, texts[key], CLIENT_METRICS_CONFIG_SOURCE, False, found,
                                             _TYPES[key], _DOCS[key]))
            else:
                entries.append(sources.Entry(key, defaults[key], sources.DEFAULT_CONFIG, False, [], _TYPES[key],
                                             _DOCS[key]))
        return entries
