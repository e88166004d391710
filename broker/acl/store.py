"""The ACLs: their one owner, kept durably and loaded at start-up.

Kafka keeps them as AccessControlEntryRecord / RemoveAccessControlEntryRecord in its metadata
log (AclControlManager); one process keeps the resulting set in ``<data-dir>/acls.json``,
replaced durably (broker/log/disk.py) before a CreateAcls or DeleteAcls is answered, as
scram_store.py keeps SCRAM credentials. A write that fails changes nothing and is answered
with its error per creation or filter. Creating an ACL that exists succeeds and adds nothing
(Kafka's ``existingAcls`` set).

Lookups for the authorizer are by (resource type, literal name) and by resource type for
PREFIXED patterns (a dict per prefix, probed with each prefix of the name).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

from ..log.disk import replace_durably
from .model import LITERAL, AclBinding, AclFilter

log = logging.getLogger(__name__)

FILE_NAME = "acls.json"
_NONE: list[AclBinding] = []  # never changed


class AclStore:
    def __init__(self, data_dir: Path):
        self._path = Path(data_dir) / FILE_NAME
        self._acls: list[AclBinding] = []  # in creation order, as Kafka's describe lists them per resource
        self._literal: dict[tuple[int, str], list[AclBinding]] = {}
        self._prefixed: dict[int, dict[str, list[AclBinding]]] = {}
        self.by_type: dict[int, list[AclBinding]] = {}  # every ACL of a resource type

    def __len__(self) -> int:
        return len(self._acls)

    def load(self) -> None:
        if self._path.exists():
            self._install([AclBinding(*entry) for entry in json.loads(self._path.read_text())])
            log.info("loaded %d ACL(s)", len(self._acls))

    def _install(self, acls: list[AclBinding]) -> None:
        literal: dict[tuple[int, str], list[AclBinding]] = {}
        prefixed: dict[int, dict[str, list[AclBinding]]] = {}
        by_type: dict[int, list[AclBinding]] = {}
        for acl in acls:
            by_type.setdefault(acl.resource_type, []).append(acl)
            if acl.pattern_type == LITERAL:
                literal.setdefault((acl.resource_type, acl.resource_name), []).append(acl)
            else:
                prefixed.setdefault(acl.resource_type, {}).setdefault(acl.resource_name, []).append(acl)
        self._acls, self._literal, self._prefixed, self.by_type = acls, literal, prefixed, by_type

    def _save(self, acls: list[AclBinding]) -> None:
        replace_durably(self._path, json.dumps([list(acl) for acl in acls], indent=0).encode())

    def literal(self, resource_type: int, name: str) -> list[AclBinding]:
        return self._literal.get((resource_type, name), _NONE)

    def prefixed(self, resource_type: int, name: str):
        """The PREFIXED ACLs whose prefix starts ``name``."""
        patterns = self._prefixed.get(resource_type)
        if not patterns:
            return
        for end in range(1, len(name) + 1):
            found = patterns.get(name[:end])
            if found:
                yield from found

    def describe(self, acl_filter: AclFilter) -> list[AclBinding]:
        return [acl for acl in self._acls if acl_filter.matches(acl)]

    def create(self, acls: list[AclBinding]) -> None:
        """Add the bindings (those already present add nothing). Raises KafkaError if the write fails."""
        present = set(self._acls)
        added = [acl for acl in dict.fromkeys(acls) if acl not in present]
        if added:
            self._commit(self._acls + added)
            for acl in added:
                log.info("ACL created: %s", acl)

    def delete(self, filters: list[AclFilter]) -> list[list[AclBinding]]:
        """The bindings each filter matched, all removed. Raises KafkaError if the write fails."""
        matched = [self.describe(acl_filter) for acl_filter in filters]
        gone = {acl for acls in matched for acl in acls}
        if gone:
            self._commit([acl for acl in self._acls if acl not in gone])
            for acl in gone:
                log.info("ACL deleted: %s", acl)
        return matched

    def _commit(self, acls: list[AclBinding]) -> None:
        self._save(acls)  # KafkaError (KAFKA_STORAGE_ERROR) leaves the served set as it was
        self._install(acls)

