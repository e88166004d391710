"""Dynamic broker settings: what AlterConfigs sets on a BROKER resource, kept across restarts.

Kafka keeps them in its metadata log as ConfigRecords for the resource
``BROKER ""`` (the cluster-wide default) or ``BROKER "<id>"`` (one node). One
process keeps both layers in ``<data-dir>/dynamic-broker-configs.json``
(written atomically), loads it before the log store opens, and installs the
parsed values into ``BrokerConfig`` where every reader picks them up. Only
``config.DYNAMIC_SETTINGS`` (Kafka 4.3's dynamic broker settings) may change; anything
else is refused with INVALID_REQUEST, as Kafka refuses "Cannot update these configs
dynamically", and so are, in Kafka's order, key store and trust store settings without a
listener prefix and per-broker settings (TLS, SASL, listeners) at the cluster-wide layer.
Deviations: Kafka's ``listener.name.<l>.<setting>`` forms cannot be changed at run time here;
and Kafka 4.3 stores a name it does not know at all (``foo.bar``: accepted, unused), where Weir
refuses it as a setting that cannot change dynamically, so that a misspelt name is noticed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from weir.protocol.errors import Errors, KafkaError

from .log import disk
from .config import DYNAMIC_SETTINGS, SETTINGS, BrokerConfig, ConfigError
from .inert_settings import PER_BROKER, PER_LISTENER_ONLY

FILE_NAME = "dynamic-broker-configs.json"
CLUSTER_DEFAULT = ""  # the resource name of the cluster-wide layer


class DynamicBrokerConfigs:
    def __init__(self, data_dir: Path, config: BrokerConfig):
        self.path = Path(data_dir) / FILE_NAME
        self.config = config
        self.node = str(config.node_id)
        self.texts: dict[str, dict[str, str]] = {CLUSTER_DEFAULT: {}, self.node: {}}

    def load(self) -> None:
        """Install the persisted layers. A setting that no longer parses is a ConfigError at start-up."""
        if self.path.exists():
            stored = json.loads(self.path.read_text())
            self.texts[CLUSTER_DEFAULT] = dict(stored.get("cluster", {}))
            self.texts[self.node] = dict(stored.get("node", {}))
        self._install()

    def layer_name(self, resource_name: str) -> str:
        """The layer a BROKER resource names: "" (cluster default) or this node's id."""
        if resource_name == CLUSTER_DEFAULT:
            return CLUSTER_DEFAULT
        try:
            node = int(resource_name)
        except ValueError:
            raise KafkaError(Errors.INVALID_REQUEST,
                             f"Node id must be an integer, but it is: {resource_name}") from None
        if str(node) != self.node:
            raise KafkaError(Errors.INVALID_REQUEST,
                             f"Unexpected broker id, expected {self.node}, but received {resource_name}")
        return self.node

    def current(self, layer: str) -> dict[str, str]:
        return dict(self.texts[layer])

    @staticmethod
    def validate(texts: dict[str, str], layer: str = "node") -> None:
        """Refuse settings that cannot change at run time (or not at ``layer``) and values that do not parse."""
        def refuse(names, message):
            if names:
                # Kafka 4 prints the names as a Java set: "[a, b]" (its order is a HashSet's; ours sorted)
                raise KafkaError(Errors.INVALID_REQUEST, f"{message}: [{', '.join(sorted(names))}]")
        refuse([name for name in texts if name not in DYNAMIC_SETTINGS], "Cannot update these configs dynamically")
        refuse([name for name in texts if name in PER_LISTENER_ONLY],
               "These security configs can be dynamically updated only per-listener using the listener prefix")
        for name, text in texts.items():
            try:
                SETTINGS[name].parse(text)
            except ValueError as exc:
                raise KafkaError(Errors.INVALID_REQUEST, f"Invalid value {text} for configuration {name}: {exc}") \
                    from None
        if layer == CLUSTER_DEFAULT:
            refuse([name for name in texts if name in PER_BROKER],
                   "Cannot update these configs at default cluster level, broker id must be specified")

    def replace(self, layer: str, texts: dict[str, str]) -> None:
        """Make ``texts`` the whole layer: persisted first, then installed."""
        self.validate(texts, layer)
        updated = dict(self.texts)
        updated[layer] = dict(texts)
        disk.replace_durably(self.path, json.dumps({"cluster": updated[CLUSTER_DEFAULT], "node": updated[self.node]},
                                                   sort_keys=True).encode(), sync_directory=False)
        self.texts = updated
        self._install()

    def _install(self) -> None:
        self.config.dynamic_default = self._parsed(self.texts[CLUSTER_DEFAULT])
        self.config.dynamic_node = self._parsed(self.texts[self.node])

    def _parsed(self, texts: dict[str, str]) -> dict[str, Any]:
        values = {}
        for name, text in texts.items():
            if name not in DYNAMIC_SETTINGS:
                raise ConfigError(f"{self.path}: {name} cannot be set dynamically")
            try:
                values[name] = SETTINGS[name].parse(text)
            except ValueError as exc:
                raise ConfigError(f"{self.path}: invalid value {text!r} for {name}: {exc}") from None
        return values
