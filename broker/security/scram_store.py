"""SCRAM credentials, kept durably and loaded at start-up.

Kafka keeps them as UserScramCredentialRecord / RemoveUserScramCredentialRecord in its
metadata log; one process keeps the resulting state in ``<data-dir>/scram-credentials.json``
(replaced atomically at every change, as features.py keeps finalized features): per user
and mechanism the salt, StoredKey, ServerKey and iterations, never a password or a salted
password. ``alter`` follows Kafka's ``ScramControlManager.alterCredentials`` (validation,
DUPLICATE_RESOURCE for a user named twice, RESOURCE_NOT_FOUND for deleting what is not there);
``describe`` follows Kafka's ``ScramImage.describe``.
"""

from __future__ import annotations

import base64
import json
import logging
from pathlib import Path

from weir.protocol.errors import Errors, KafkaError

from ..log.disk import replace_durably
from .scram import (MAX_ITERATIONS, MECHANISM_NAMES, MIN_ITERATIONS, ScramCredential,
                    credential_from_salted_password)

log = logging.getLogger(__name__)

FILE_NAME = "scram-credentials.json"
_DUPLICATE = "A user credential cannot be altered twice in the same request"


class ScramStore:
    def __init__(self, data_dir: Path):
        self._path = Path(data_dir) / FILE_NAME
        self._credentials: dict[str, dict[str, ScramCredential]] = {}  # user -> mechanism -> credential

    def load(self) -> None:
        if not self._path.exists():
            return
        raw = json.loads(self._path.read_text())
        for user, mechanisms in raw.items():
            self._credentials[user] = {
                mechanism: ScramCredential(base64.b64decode(c["salt"]), base64.b64decode(c["stored_key"]),
                                           base64.b64decode(c["server_key"]), c["iterations"])
                for mechanism, c in mechanisms.items()}
        log.info("loaded SCRAM credentials of %d user(s)", len(self._credentials))

    def _save(self, credentials: dict[str, dict[str, ScramCredential]]) -> None:
        raw = {user: {mechanism: {"salt": base64.b64encode(c.salt).decode(),
                                  "stored_key": base64.b64encode(c.stored_key).decode(),
                                  "server_key": base64.b64encode(c.server_key).decode(),
                                  "iterations": c.iterations}
                      for mechanism, c in mechanisms.items()}
               for user, mechanisms in credentials.items()}
        replace_durably(self._path, json.dumps(raw, indent=1, sort_keys=True).encode())

    def get(self, user: str, mechanism: str) -> ScramCredential | None:
        return self._credentials.get(user, {}).get(mechanism)

    def describe(self, users: list[str] | None) -> list[tuple[str, int, str | None, list[tuple[int, int]]]]:
        """(user, error code, error message, [(mechanism type, iterations)]) per user."""
        if not users:
            wanted = {user: False for user in self._credentials}
        else:
            wanted = {}
            for user in users:
                wanted[user] = user in wanted  # True: named twice
        results: list[tuple[str, int, str | None, list[tuple[int, int]]]] = []
        for user, repeated in wanted.items():
            if repeated:
                results.append((user, Errors.DUPLICATE_RESOURCE,
                                "Cannot describe SCRAM credentials for the same user twice in a single request: "
                                + user, []))
                continue
            infos = [(code, self._credentials[user][name].iterations) for code, name in sorted(MECHANISM_NAMES.items())
                     if name in self._credentials.get(user, {})]
            if infos:
                results.append((user, Errors.NONE, "", infos))  # Kafka leaves the message at its default, ""
            else:
                results.append((user, Errors.RESOURCE_NOT_FOUND,
                                "Attempt to describe a user credential that does not exist: " + user, []))
        return results

    def alter(self, deletions, upsertions) -> list[tuple[str, int, str | None]]:
        """Apply (name, mechanism type) deletions and (name, mechanism type, iterations, salt,
        salted password) upsertions; (user, error code, message) per user named."""
        errors: dict[str, tuple[int, str]] = {}
        deletes: dict[str, int] = {}
        upserts: dict[str, tuple] = {}
        for name, mechanism in deletions:
            if name in errors:
                continue
            if deletes.pop(name, None) is not None:
                errors[name] = (Errors.DUPLICATE_RESOURCE, _DUPLICATE)
                continue
            error = _check_name(name, mechanism)
            if error is None and MECHANISM_NAMES[mechanism] not in self._credentials.get(name, {}):
                error = (Errors.RESOURCE_NOT_FOUND, "Attempt to delete a user credential that does not exist")
            if error is None:
                deletes[name] = mechanism
            else:
                errors[name] = error
        for upsertion in upsertions:
            name, mechanism, iterations = upsertion[0], upsertion[1], upsertion[2]
            if name in errors:
                continue
            if deletes.pop(name, None) is not None or upserts.pop(name, None) is not None:
                errors[name] = (Errors.DUPLICATE_RESOURCE, _DUPLICATE)
                continue
            error = _check_name(name, mechanism)
            if error is None and iterations < MIN_ITERATIONS:
                error = (Errors.UNACCEPTABLE_CREDENTIAL, "Too few iterations")
            elif error is None and iterations > MAX_ITERATIONS:
                error = (Errors.UNACCEPTABLE_CREDENTIAL, "Too many iterations")
            if error is None:
                upserts[name] = upsertion
            else:
                errors[name] = error
        # The new credentials are written durably first and only then served: a write that fails
        # (the disk layer's KAFKA_STORAGE_ERROR) changes nothing and is answered per user.
        updated = {user: dict(mechanisms) for user, mechanisms in self._credentials.items()}
        for name, mechanism in deletes.items():
            mechanisms = updated[name]
            del mechanisms[MECHANISM_NAMES[mechanism]]
            if not mechanisms:
                del updated[name]
        for name, mechanism, iterations, salt, salted in upserts.values():
            mechanism_name = MECHANISM_NAMES[mechanism]
            updated.setdefault(name, {})[mechanism_name] = credential_from_salted_password(
                mechanism_name, salt, salted, iterations)
        outcome: tuple[int, str | None] = (Errors.NONE, None)
        if deletes or upserts:
            try:
                self._save(updated)
            except KafkaError as exc:
                outcome = (exc.error, exc.message or exc.error.name)
            else:
                self._credentials = updated
        results = [(name, *outcome) for name in [*deletes, *(u[0] for u in upserts.values())]]
        results += [(name, code, message) for name, (code, message) in errors.items()]
        if (deletes or upserts) and outcome[0] == Errors.NONE:
            log.info("SCRAM credentials altered: %s", ", ".join(
                [f"{name} ({MECHANISM_NAMES[m]}) deleted" for name, m in deletes.items()]
                + [f"{u[0]} ({MECHANISM_NAMES[u[1]]}) set" for u in upserts.values()]))
        return results


def _check_name(name: str, mechanism: int) -> tuple[int, str] | None:
    if not name:
        return Errors.UNACCEPTABLE_CREDENTIAL, "Username must not be empty"
    if mechanism not in MECHANISM_NAMES:
        return Errors.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"
    return None
