"""Spark's ``kafka.security.protocol``, ``kafka.sasl.*`` and ``kafka.ssl.*`` options for our client.

Spark's Kafka connector hands these to the Java client unchanged; weir.client.java_config reads
them as the Java client does. ``KafkaSecurity`` is what the driver parses and pickles to the
tasks (strings only); each process builds its SSL context from it once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from weir.client.java_config import SecurityOptionError, is_security_setting, security_keywords
from weir.client.security import ClientSecurity

__all__ = ["KafkaSecurity", "SecurityOptionError"]


@dataclass(frozen=True)
class KafkaSecurity:
    """The Java client's security settings of a query, by their names (picklable)."""

    settings: tuple[tuple[str, str], ...] = ()

    @classmethod
    def from_options(cls, options: dict[str, str]) -> KafkaSecurity:
        """The ``kafka.*`` security options of Spark's (lower-cased) option map, checked on the driver."""
        java = {name[len("kafka."):]: value for name, value in options.items()
                if name.startswith("kafka.") and is_security_setting(name[len("kafka."):])}
        security = cls(tuple(sorted(java.items())))
        security.keywords()  # a setting that cannot work fails the query here, not in every task
        return security

    def keywords(self) -> dict[str, Any]:
        """weir.client's security keywords (Producer, Consumer, Admin)."""
        return security_keywords(dict(self.settings))

    def client(self) -> ClientSecurity:
        return ClientSecurity.from_options(**self.keywords())
