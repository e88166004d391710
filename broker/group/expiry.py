"""Committed offsets expire (``offsets.retention.minutes``), checked every
``offsets.retention.check.interval.ms``, with Kafka's rules
(``ClassicGroup.offsetExpirationCondition`` and ``OffsetMetadataManager.cleanupExpiredOffsets``):

- a group with a protocol type (consumers, Connect, ...) that is Empty: all its
  offsets expire once the retention has passed since the group became Empty;
- a Stable consumer group whose subscriptions are known: offsets of topics no
  member subscribes to expire once the retention has passed since their commit;
- a simple group (offsets only, no protocol type): each offset expires once the
  retention has passed since its commit;
- any other group keeps its offsets; a partition with a pending transactional
  offset is never expired.

Expiry writes offset tombstones. A group left with no offsets that is Empty is
deleted too (a GroupMetadata tombstone), unless transactional offsets are
pending for it. Commits never carry an explicit expire timestamp here (we
write OffsetCommit value v3, which has none), so Kafka's v1 per-commit
retention does not arise.
"""

from __future__ import annotations

import asyncio
import logging

from .classic import CONSUMER_PROTOCOL_TYPE, ClassicGroup, GroupState
from .storage import group_key

log = logging.getLogger(__name__)


class OffsetExpiry:
    def __init__(self, groups):
        """``groups``: the GroupCoordinator (its groups, offsets, clock and config)."""
        self.groups = groups
        self.offsets = groups.offsets
        self.clock = groups.clock
        self.retention_ms = groups.config["offsets.retention.minutes"] * 60_000
        self.interval_s = groups.config["offsets.retention.check.interval.ms"] / 1000
        self._task: asyncio.Task | None = None

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._loop())

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

    async def _loop(self) -> None:
        while True:
            await self.clock.sleep(self.interval_s)
            try:
                await self.expire()
            except Exception:
                log.exception("offset expiry failed; retrying at the next check")

    def _base_timestamp(self, group: ClassicGroup):
        """How an offset's age is measured for this group, or None when its offsets do not expire;
        with the topics whose offsets are exempt (subscribed to)."""
        if not group.protocol_type:
            return (lambda entry: entry.commit_timestamp), set()
        if group.is_in(GroupState.EMPTY):
            return (lambda entry: group.state_timestamp), set()
        if group.protocol_type == CONSUMER_PROTOCOL_TYPE and group.is_in(GroupState.STABLE):
            subscribed = group.subscribed_topics()
            if subscribed is not None:
                return (lambda entry: entry.commit_timestamp), subscribed
        return None, set()

    async def expire(self) -> tuple[int, int]:
        """One check: (offsets expired, groups deleted)."""
        now = self.clock.now_ms()
        expired_offsets = deleted_groups = 0
        for group_id, group in list(self.groups.groups.items()):
            base, exempt = self._base_timestamp(group)
            if base is None:
                continue
            committed = self.offsets.committed.get(group_id, {})
            pending = self.offsets.pending_partitions(group_id)
            expired = [tp for tp, entry in committed.items()
                       if tp[0] not in exempt and tp not in pending and now - base(entry) >= self.retention_ms]
            all_gone = len(expired) == len(committed) and not pending
            delete_group = all_gone and group.is_in(GroupState.EMPTY)
            if not expired and not delete_group:
                continue
            also = [(group_key(group_id), None)] if delete_group else []
            await self.offsets.delete(group_id, expired, also=also)
            expired_offsets += len(expired)
            if delete_group and self.groups.groups.get(group_id) is group and group.is_in(GroupState.EMPTY):
                group.transition_to(GroupState.DEAD, now)
                del self.groups.groups[group_id]
                deleted_groups += 1
        if expired_offsets or deleted_groups:
            log.info("offset expiry: removed %d offset(s) and %d empty group(s)", expired_offsets, deleted_groups)
        return expired_offsets, deleted_groups
