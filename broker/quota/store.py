"""Client quota settings per entity, kept durably and loaded at start-up.

Kafka keeps them as ClientQuotaRecords in its metadata log; one process keeps the resulting
state in ``<data-dir>/client-quotas.json``, replaced atomically at every change (as SCRAM
credentials are kept: broker/security/scram_store.py). An entity is a set of (type, name)
with type ``user``, ``client-id`` or ``ip`` and name None for the type's default. ``alter``
follows Kafka's ``ClientQuotaControlManager.alterClientQuotas`` (its checks, messages and
order), ``describe`` its ``ClientQuotasImage.describe`` (filters, strict matching).
"""

from __future__ import annotations

import ipaddress
import json
import logging
import socket
from pathlib import Path

from weir.protocol.errors import Errors, KafkaError

from ..log.disk import replace_durably

log = logging.getLogger(__name__)

FILE_NAME = "client-quotas.json"
USER, CLIENT_ID, IP = "user", "client-id", "ip"
#: Kafka's QuotaConfig: key -> is it integral (LONG/INT) rather than DOUBLE
USER_AND_CLIENT_KEYS = {"producer_byte_rate": True, "consumer_byte_rate": True, "request_percentage": False,
                        "controller_mutation_rate": False}
IP_KEYS = {"connection_creation_rate": True}
_INT_MAX = 2**31 - 1
MATCH_EXACT, MATCH_DEFAULT, MATCH_SPECIFIED = 0, 1, 2

Entity = tuple[tuple[str, str | None], ...]  # sorted (type, name) pairs


class InvalidQuotaRequest(Exception):
    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code, self.message = code, message


def _entity_text(entity: Entity) -> str:
    return "ClientQuotaEntity(entries={" + ", ".join(f"{t}={n}" for t, n in entity) + "})"


def _valid_ip(name: str | None) -> bool:
    if name is None:
        return True
    try:
        ipaddress.ip_address(name)
        return True
    except ValueError:
        try:
            socket.gethostbyname(name)
            return True
        except OSError:
            return False


def _keys_for(entity: dict[str, str | None]) -> tuple[dict[str, bool], tuple[int, str] | None]:
    """Kafka's configKeysForEntityType: the keys an entity's combination of types may set."""
    if IP in entity:
        if USER in entity or CLIENT_ID in entity:
            return {}, (Errors.INVALID_REQUEST, "Invalid quota entity combination, IP entity shouldnot be "
                                                "combined with User or ClientId")
        if not _valid_ip(entity[IP]):
            return {}, (Errors.INVALID_REQUEST, f"{entity[IP]} is not a valid IP or resolvable host.")
        return IP_KEYS, None
    if USER in entity or CLIENT_ID in entity:
        return USER_AND_CLIENT_KEYS, None
    return {}, (Errors.INVALID_REQUEST, "Invalid empty client quota entity")


def _check_value(keys: dict[str, bool], key: str, value: float) -> tuple[int, str] | None:
    """Kafka's validateQuotaKeyValue."""
    integral = keys.get(key)
    if integral is None:
        return Errors.INVALID_REQUEST, f"Invalid configuration key {key}"
    if value <= 0.0:
        return Errors.INVALID_REQUEST, f"Quota {key} must be greater than 0"
    if integral:
        if key in IP_KEYS and value > _INT_MAX:
            return Errors.INVALID_REQUEST, f"Proposed value for {key} is too large for an INT."
        if abs(value % 1.0) > 1e-6:
            return Errors.INVALID_REQUEST, f"{key} cannot be a fractional value."
    return None


class QuotaStore:
    def __init__(self, data_dir: Path):
        self._path = Path(data_dir) / FILE_NAME
        self._quotas: dict[Entity, dict[str, float]] = {}
        self.version = 0  # bumped at every change: the manager re-resolves cached quotas
        self._keys: set[str] = set()
        self._keys_version = 0

    def load(self) -> None:
        if not self._path.exists():
            return
        for item in json.loads(self._path.read_text()):
            entity = tuple(sorted((kind, name) for kind, name in item["entity"]))
            self._quotas[entity] = {key: float(value) for key, value in item["quotas"].items()}
        self.version += 1
        log.info("loaded client quotas of %d entit(ies)", len(self._quotas))

    def _save(self, quotas: dict[Entity, dict[str, float]]) -> None:
        raw = [{"entity": [list(pair) for pair in entity], "quotas": values}
               for entity, values in sorted(quotas.items(), key=lambda item: repr(item[0]))]
        replace_durably(self._path, json.dumps(raw, indent=1).encode())

    def has_key(self, key: str) -> bool:
        """Whether any entity sets ``key``."""
        if self._keys_version != self.version:
            self._keys = {key for values in self._quotas.values() for key in values}
            self._keys_version = self.version
        return key in self._keys

    def get(self, entity: Entity) -> dict[str, float]:
        return self._quotas.get(entity, {})

    def alter(self, entries, validate_only: bool) -> list[tuple[int, str | None]]:
        """(error code, message) per entry of (entity [(type, name)], ops [(key, value, remove)])."""
        results: list[tuple[int, str | None] | None] = []
        updated = {entity: dict(values) for entity, values in self._quotas.items()}
        seen: set[Entity] = set()
        for pairs, ops in entries:
            entity = tuple(sorted(pairs))
            changes: dict[str, float | None] = {}
            error: tuple[int, str] | None = None
            duplicate_key = False
            for key, value, remove in ops:
                duplicate_key = duplicate_key or key in changes
                changes.setdefault(key, None if remove else value)
            # Kafka records a duplicate key as the entity's error, then finds the entity has an error
            # and answers it as a duplicate entity
            if duplicate_key or entity in seen:
                error = (Errors.INVALID_REQUEST, f"Ignoring duplicate entity {_entity_text(entity)}")
            seen.add(entity)
            error = error or self._apply(pairs, changes, updated)
            results.append(error or (Errors.NONE, None))
        if not validate_only and updated != self._quotas:
            try:
                self._save(updated)
            except KafkaError as exc:  # nothing changes; each entry says why
                return [(exc.error, exc.message or exc.error.name)] * len(results)
            self._quotas = updated
            self.version += 1
            log.info("client quotas altered: %d entit(ies) with quotas", len(updated))
        return [result for result in results if result is not None]

    @staticmethod
    def _apply(pairs, changes: dict[str, float | None], updated: dict[Entity, dict[str, float]]):
        """Kafka's alterClientQuotaEntity on ``updated``: the error, or None once applied."""
        if not pairs:
            return Errors.INVALID_REQUEST, "Invalid empty client quota entity"
        entity_map: dict[str, str | None] = {}
        for kind, name in pairs:
            if kind in entity_map:
                return Errors.INVALID_REQUEST, f"Invalid client quota entity, duplicate entity entry {kind}"
            if kind not in (USER, CLIENT_ID, IP):
                return Errors.INVALID_REQUEST, f"Unhandled client quota entity type: {kind}"
            entity_map[kind] = name
            if name is not None and not name:
                return Errors.INVALID_REQUEST, f"Empty {kind} not supported"
        keys, error = _keys_for(entity_map)
        if error is not None:
            return error
        for key, value in changes.items():
            if value is not None:
                error = _check_value(keys, key, value)
                if error is not None:
                    return error
        entity = tuple(sorted(pairs))
        values = updated.setdefault(entity, {})
        for key, value in changes.items():
            if value is None:
                values.pop(key, None)
            else:
                values[key] = value
        if not values:
            del updated[entity]
        return None

    def describe(self, components, strict: bool) -> list[tuple[Entity, dict[str, float]]]:
        """Entities a filter of (type, match type, match) components matches; InvalidQuotaRequest."""
        exact: dict[str, str | None] = {}
        typed: set[str] = set()
        for kind, match_type, match in components:
            if not kind:
                raise InvalidQuotaRequest(Errors.INVALID_REQUEST, "Invalid empty entity type.")
            if kind in exact or kind in typed:
                raise InvalidQuotaRequest(Errors.INVALID_REQUEST,
                                          f"Entity type {kind} cannot appear more than once in the filter.")
            if kind not in (USER, CLIENT_ID, IP):
                raise InvalidQuotaRequest(Errors.UNSUPPORTED_VERSION, f"Unsupported entity type {kind}")
            if match_type == MATCH_EXACT:
                if match is None:
                    raise InvalidQuotaRequest(Errors.INVALID_REQUEST, "Request specified MATCH_TYPE_EXACT, but "
                                                                      "set match string to null.")
                exact[kind] = match
            elif match_type == MATCH_DEFAULT:
                if match is not None:
                    raise InvalidQuotaRequest(Errors.INVALID_REQUEST, "Request specified MATCH_TYPE_DEFAULT, but "
                                                                      "also specified a match string.")
                exact[kind] = None
            else:
                if match is not None:
                    raise InvalidQuotaRequest(Errors.INVALID_REQUEST, "Request specified MATCH_TYPE_SPECIFIED, "
                                                                      "but also specified a match string.")
                typed.add(kind)
        if (IP in exact or IP in typed) and ({USER, CLIENT_ID} & (set(exact) | typed)):
            raise InvalidQuotaRequest(Errors.INVALID_REQUEST, "Invalid entity filter component combination. IP "
                                                              "filter component should not be used with user or "
                                                              "clientId filter component.")
        matched = []
        for entity, values in self._quotas.items():
            names = dict(entity)
            if strict and len(names) != len(exact) + len(typed):
                continue
            if all(kind in names and names[kind] == name for kind, name in exact.items()) \
                    and all(kind in names for kind in typed):
                matched.append((entity, dict(values)))
        return matched
