"""What the consumer (KIP-848), share (KIP-932) and streams (KIP-1071) group coordinators share:
their groups are records in ``__consumer_offsets``, replayed at once (before any await, so the next
operation sees them) and then written. A write that fails leaves the group as the log has it: the
group is rebuilt from the log, and its members' session deadlines are armed again, as at start-up
(a member whose removal could not be written, on a full disk, is back and must expire again, or it
holds its partitions for good).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..clock import Clock
    from ..coordinator.runtime import CoordinatorLog

log = logging.getLogger(__name__)


class RecordedGroups:
    """A mixin: the coordinator sets ``log``, ``clock``, ``groups`` and ``KIND``, and gives
    ``replay``, ``is_group_key``, ``decode_record`` and ``arm_sessions``."""

    KIND: str  # for log lines: "consumer group", "share group", "streams group"
    log: CoordinatorLog
    clock: Clock
    groups: dict[str, Any]

    def replay(self, record: Any) -> None:
        raise NotImplementedError

    @staticmethod
    def is_group_key(key: bytes) -> bool:
        raise NotImplementedError

    @staticmethod
    def decode_record(key: bytes, value: bytes | None) -> Any:
        raise NotImplementedError

    def arm_sessions(self, group_id: str) -> None:
        """Arm the session deadline of every member of ``group_id``, as start-up does."""
        raise NotImplementedError

    async def apply(self, group_id: str, records: list[Any]) -> bool:
        """Replay at once, then write; False when the write failed (the group is then reloaded)."""
        if not records:
            return True
        for record in records:
            self.replay(record)
        return await self._write(group_id, records)

    async def _write(self, group_id: str, records: list[Any]) -> bool:
        """Write records already replayed; a failure reloads the group from the log."""
        try:
            await self.log.append(self.log.partition_for(group_id), [record.encode() for record in records],
                                  self.clock.now_ms())
        except Exception:
            log.exception("%s %s: writing %d record(s) failed; reloading it", self.KIND, group_id, len(records))
            self._reload(group_id)
            return False
        return True

    def _reload(self, group_id: str) -> None:
        self.groups.pop(group_id, None)
        index = self.log.partition_for(group_id)
        for entry in self.log.replay():
            if entry.partition == index and entry.key is not None and self.is_group_key(entry.key):
                record = self.decode_record(entry.key, entry.value)
                if record is not None and record.group_id == group_id:
                    self.replay(record)
        if group_id in self.groups:
            self.arm_sessions(group_id)
