"""The share-partitions of every share group on this broker, and the share sessions reaching them.

Kafka's ``SharePartitionManager``: one ``SharePartition`` per (group, topic id, partition), made
when the group first assigns the partition (or a member first fetches it) at the offset
``share.auto.offset.reset`` names; the share sessions; the waiters of long-polling share fetches,
woken by appends to the log and by records coming back to AVAILABLE.

Durable state: each change of a share-partition is written to ``__share_group_state`` as a
ShareSnapshot (``records.py``), in the partition Kafka's share coordinator uses (the hash of
``group:topicId:partition``); an acknowledgement is answered after its write. Start-up replays the
topic and a share-partition first touched after it starts from what was stored.

A failed write undoes the acknowledgement or release it was for (``store``), as Kafka's
SharePartition rolls back when its persister write fails, and answers Kafka's error for it
(``state_write_error``); a lock expiry stands even when its write fails, as in Kafka.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import re
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any

from weir.protocol.errors import Errors, KafkaError

from ..coordinator.runtime import CoordinatorLog
from ..log.fetch_waiters import FetchWaiters
from ..log.time_lookup import offset_for_timestamp
from . import records
from .in_flight import Change, Limits
from .partition import SharePartition
from .record_state import TERMINAL
from .sessions import ShareSessions
from .turns import RequestTurns

if TYPE_CHECKING:
    from ..context import BrokerContext
    from ..log.partition import Partition

log = logging.getLogger(__name__)

PartitionKey = tuple[str, bytes, int]  # group id, topic id, partition
STATE_TOPIC = "__share_group_state"

# What Kafka 4.4's share coordinator answers for a failed append of its state (a full disk's
# KAFKA_STORAGE_ERROR reaches it as NOT_COORDINATOR) and what its persister, having retried those,
# makes of it: SharePartition answers COORDINATOR_NOT_AVAILABLE. Other failures: UNKNOWN_SERVER_ERROR.
_COORDINATOR_ERRORS = frozenset({
    Errors.NOT_COORDINATOR, Errors.COORDINATOR_NOT_AVAILABLE, Errors.COORDINATOR_LOAD_IN_PROGRESS,
    Errors.KAFKA_STORAGE_ERROR, Errors.NOT_LEADER_OR_FOLLOWER, Errors.UNKNOWN_TOPIC_OR_PARTITION,
    Errors.NOT_ENOUGH_REPLICAS, Errors.REQUEST_TIMED_OUT, Errors.NETWORK_EXCEPTION})
WRITE_FAILED = "Error in write state RPC. Exhausted max retries to complete write state RPC without success."  # Kafka's

_DURATION = re.compile(r"P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?")


def duration_ms(text: str) -> int:
    """``PnDTnHnMn.nS`` (java.time.Duration's form, which by_duration takes) in milliseconds."""
    match = _DURATION.fullmatch(text.strip())
    if match is None or text.strip() in ("P", "PT"):
        raise ValueError(f"not a duration: {text!r}")
    days, hours, minutes, seconds = (float(g) if g else 0.0 for g in match.groups())
    return int((((days * 24 + hours) * 60 + minutes) * 60 + seconds) * 1000)


class SharePartitionManager:
    def __init__(self, context: BrokerContext) -> None:
        self.context = context
        self.clock = context.clock
        self.group_configs = context.group_configs
        self.partitions: dict[PartitionKey, SharePartition] = {}
        self.sessions = ShareSessions(context.config["group.share.max.share.sessions"])
        self.waiters = FetchWaiters()  # share fetches waiting for records to come back
        self.turns = RequestTurns()  # one share request at a time per connection, as Kafka
        self.log = CoordinatorLog(context.logs, STATE_TOPIC,
                                  context.config["share.coordinator.state.topic.num.partitions"])
        self.stored: dict[PartitionKey, records.StoredState] = {}  # replayed, not yet in use
        self._tasks: set[asyncio.Task[Any]] = set()

    # ------------------------------------------------------------------ durable state

    def load(self) -> None:
        """Replay ``__share_group_state``: the latest state of every share-partition."""
        for entry in self.log.replay():
            if entry.key is None:
                continue
            where, state = records.decode(entry.key, entry.value, self.stored.get)
            if state is None:
                self.stored.pop(where, None)
            else:
                self.stored[where] = state
        if self.stored:
            log.info("share-partition state: %d share-partition(s) replayed", len(self.stored))

    async def persist(self, share_partition: SharePartition) -> None:
        """Write the share-partition's state now (its acknowledgements are answered after this)."""
        key = share_partition.key
        record = records.encode(*key, share_partition.stored_state(), self.clock.now_ms())
        await self.log.append(self.log.partition_for(coordinator_key(*key)), [record], self.clock.now_ms())
        share_partition.stored = True
        share_partition.writes += 1

    async def store(self, share_partition: SharePartition, change: Change) -> None:
        """Write a pending change: it stands once written; a failed write undoes it and raises Kafka's
        error for it. Simplified: Kafka's persister retries a coordinator error with backoff before
        giving up; Weir answers at once (the client's retry is the retry)."""
        try:
            await self.persist(share_partition)
        except Exception as exc:
            share_partition.rollback(change)
            raise state_write_error(exc) from None
        share_partition.commit(change)

    async def _store_logged(self, share_partition: SharePartition, change: Change) -> None:
        try:
            await self.store(share_partition, change)
        except KafkaError:
            log.warning("share-partition %s: storing a release failed; the records stay with their member "
                        "until their lock expires", share_partition.key, exc_info=True)

    def _persist_later(self, share_partition: SharePartition) -> None:
        """A change nobody waits for (a lock expired, a member left); a crash before it lands makes
        those records AVAILABLE again, which they are already."""
        self._spawn(self._persist_logged(share_partition))

    async def _persist_logged(self, share_partition: SharePartition) -> None:
        try:
            await self.persist(share_partition)
        except Exception:
            log.exception("share-partition %s: storing its state failed", share_partition.key)

    def _spawn(self, coroutine: Coroutine[Any, Any, Any]) -> None:
        task = asyncio.get_running_loop().create_task(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def close(self) -> None:
        await asyncio.gather(*self._tasks, return_exceptions=True)

    # ------------------------------------------------------------------ settings

    def limits(self, group_id: str) -> Limits:
        value = self.group_configs.value
        return Limits(lock_ms=value(group_id, "share.record.lock.duration.ms"),
                      delivery_limit=value(group_id, "share.delivery.count.limit"),
                      max_in_flight=value(group_id, "share.partition.max.record.locks"),
                      read_committed=value(group_id, "share.isolation.level") == "read_committed")

    # ------------------------------------------------------------------ share-partitions

    def log_partition(self, topic_id: bytes, index: int) -> Partition:
        for name, topic in self.context.logs.topics.items():
            if topic.topic_id == topic_id:
                return self.context.logs.partition(name, index)  # UNKNOWN_TOPIC_OR_PARTITION past the end
        raise KafkaError(Errors.UNKNOWN_TOPIC_ID)

    def get(self, group_id: str, topic_id: bytes, index: int) -> SharePartition:
        """The share-partition, made at ``share.auto.offset.reset`` if the group has none yet."""
        key = (group_id, topic_id, index)
        found = self.partitions.get(key)
        try:
            log_partition = self.log_partition(topic_id, index)
        except KafkaError:
            self.partitions.pop(key, None)  # the topic was deleted: its share-partitions go with it
            raise
        if found is None:
            stored = self.stored.pop(key, None)
            resolved = stored is None or stored.start_offset < 0  # never initialized, or initialized unread
            if resolved:
                stored = records.StoredState(self._initial_offset(group_id, log_partition), [],
                                             create_timestamp=self.clock.now_ms())
            assert stored is not None
            found = SharePartition(key, log_partition, stored.start_offset, self.clock, self.waiters.wake)
            found.restore(stored)
            found.stored = not resolved  # its start is stored only with its first change, as in Kafka
            found.on_change = lambda: self._persist_later(found)
            self.partitions[key] = found
        return found

    async def initialize(self, group_id: str, topic_id: bytes, index: int) -> None:
        """A partition first assigned to the group: its state is stored with start offset -1, which the
        first read resolves by ``share.auto.offset.reset`` (Kafka's InitializeShareGroupState)."""
        key = (group_id, topic_id, index)
        if key in self.partitions or key in self.stored:
            return
        state = self.stored[key] = records.StoredState(-1, [], create_timestamp=self.clock.now_ms())
        await self.log.append(self.log.partition_for(coordinator_key(*key)),
                              [records.encode(*key, state, self.clock.now_ms())], self.clock.now_ms())

    def group_offsets(self, group_id: str) -> dict[tuple[bytes, int], tuple[int, int]]:
        """(start offset, lag) of each share-partition of the group with state; (-1, -1) until its
        state was first written (read, but nothing acknowledged or released yet: as Kafka 4.4 reports).
        The lag counts the records from the start offset to the high watermark not yet done, as
        Kafka 4.4's DescribeShareGroupOffsets v1 does."""
        found: dict[tuple[bytes, int], tuple[int, int]] = {}
        for (group, topic_id, index), state in self.stored.items():
            if group == group_id:
                found[(topic_id, index)] = (-1, -1) if state.start_offset < 0 else (
                    state.start_offset, self._lag(topic_id, index, state.start_offset,
                                                  sum(last - first + 1 for first, last, kind, _ in state.batches
                                                      if kind in (2, 4) and last >= state.start_offset)))
        for (group, topic_id, index), sp in self.partitions.items():
            if group == group_id:
                done = sum(1 for r in sp.in_flight.values() if r.state in TERMINAL)
                found[(topic_id, index)] = ((sp.reported_start, self._lag(topic_id, index, sp.start_offset, done))
                                            if sp.stored else (-1, -1))
        return found

    def _lag(self, topic_id: bytes, index: int, start: int, done: int) -> int:
        try:
            high_watermark = self.log_partition(topic_id, index).high_watermark
        except KafkaError:
            return -1
        return max(high_watermark - start - done, 0)

    async def alter_offset(self, group_id: str, topic_id: bytes, index: int, start_offset: int) -> None:
        """AlterShareGroupOffsets: the share-partition starts again at ``start_offset``, nothing in flight."""
        key = (group_id, topic_id, index)
        self.partitions.pop(key, None)
        state = self.stored[key] = records.StoredState(start_offset, [], create_timestamp=self.clock.now_ms())
        await self.log.append(self.log.partition_for(coordinator_key(*key)),
                              [records.encode(*key, state, self.clock.now_ms())], self.clock.now_ms())

    def _initial_offset(self, group_id: str, log_partition: Partition) -> int:
        reset = self.group_configs.value(group_id, "share.auto.offset.reset")
        if reset == "earliest":
            return log_partition.log_start_offset
        if reset.startswith("by_duration:"):
            found = offset_for_timestamp(log_partition, self.clock.now_ms() - duration_ms(reset.split(":", 1)[1]))
            return found[0] if found is not None else log_partition.log_end_offset
        return log_partition.log_end_offset  # latest (Kafka's default)

    async def delete_group(self, group_id: str, topic_ids: set[bytes] | None = None) -> None:
        """Forget a group's share-partitions (of ``topic_ids``, else all): tombstones in
        ``__share_group_state``, then the next read starts at ``share.auto.offset.reset`` again."""
        keys = [key for key in [*self.partitions, *self.stored]
                if key[0] == group_id and (topic_ids is None or key[1] in topic_ids)]
        for key in dict.fromkeys(keys):
            self.partitions.pop(key, None)
            self.stored.pop(key, None)
            await self.log.append(self.log.partition_for(coordinator_key(*key)),
                                  [records.encode(*key, None, self.clock.now_ms())], self.clock.now_ms())

    def release_member(self, group_id: str, member_id: str) -> None:
        """A member left its group or closed its session: its records go back to the group once
        that is written (a failed write leaves them with the member until their lock expires)."""
        limits = self.limits(group_id)
        for (group, _, _), share_partition in self.partitions.items():
            if group == group_id and (change := share_partition.release_member(member_id, limits)) is not None:
                self._spawn(self._store_logged(share_partition, change))

    def connection_closed(self, group_id: str, member_id: str, connection: object) -> None:
        """The connection that opened the member's share session closed: the session ends and the
        member's records go back, as Kafka 4.4 releases them."""
        if self.sessions.close(group_id, member_id, connection) is not None:
            self.release_member(group_id, member_id)

    def member_left(self, group_id: str, member_id: str) -> None:
        self.sessions.close(group_id, member_id)
        self.release_member(group_id, member_id)


def state_write_error(exc: BaseException) -> KafkaError:
    """The error an acknowledgement answers when its state write failed, as Kafka 4.4 answers it."""
    if isinstance(exc, KafkaError) and exc.error in _COORDINATOR_ERRORS:
        return KafkaError(Errors.COORDINATOR_NOT_AVAILABLE, WRITE_FAILED)
    return KafkaError(Errors.UNKNOWN_SERVER_ERROR, str(exc) or None)


def coordinator_key(group_id: str, topic_id: bytes, partition: int) -> str:
    """Kafka's SharePartitionKey as its share coordinator hashes it: group:topicId:partition, the
    topic id as Kafka prints a Uuid (URL-safe base64, no padding)."""
    return f"{group_id}:{base64.urlsafe_b64encode(topic_id).decode().rstrip('=')}:{partition}"
