"""Committed offsets, kept in ``__consumer_offsets`` (partition = hash of the group id).

Plain OffsetCommit records become the group's offsets when replayed.
Transactional ones (TxnOffsetCommit, written in a transactional batch under
the producer's id and epoch) are pending per producer id until a marker lands
on that partition: COMMIT makes them committed (a newer record offset wins
over an older one, as in Kafka), ABORT discards them. While any are pending
for a group's partition, OffsetFetch with require_stable answers
UNSTABLE_OFFSET_COMMIT for it (KIP-447).

Who may commit is the group coordinator's question (``coordinator.py``); this
module only stores.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from weir.protocol.errors import Errors, KafkaError

from ..coordinator import records
from ..coordinator.runtime import CoordinatorLog

OFFSETS_TOPIC = "__consumer_offsets"
TopicPartition = tuple[str, int]


@dataclass(frozen=True, slots=True)
class OffsetEntry:
    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp: int
    record_offset: int = -1  # where the record sits in __consumer_offsets; the newer one wins


class OffsetStore:
    def __init__(self, context):
        self.context = context
        self.clock = context.clock
        self.log = CoordinatorLog(context.logs, OFFSETS_TOPIC, context.config["offsets.topic.num.partitions"])
        self.committed: dict[str, dict[TopicPartition, OffsetEntry]] = {}
        self.pending: dict[int, dict[str, dict[TopicPartition, OffsetEntry]]] = {}  # producer id -> group -> ...

    # ------------------------------------------------------------------ replay (the group coordinator
    # reads the topic and hands offset records and markers here)

    def replay(self, record_offset: int, key: bytes, value: bytes | None, producer_id: int | None) -> str | None:
        """Install one offset record; its group id (None for a record that is not an offset)."""
        version = records.RecordKeyVersion.parse(key[:2])
        if version not in (0, records.OFFSET_KEY_VERSION):
            return None  # group metadata and KIP-848 records belong to the group coordinator
        parsed = records.OffsetCommitKey.parse(key)
        tp = (parsed.topic, parsed.partition)
        groups = self.pending.setdefault(producer_id, {}) if producer_id is not None else self.committed
        if value is None:
            target = groups.get(parsed.group, {})
            target.pop(tp, None)
            if not target:
                groups.pop(parsed.group, None)
            return parsed.group
        target = groups.setdefault(parsed.group, {})
        data = records.OffsetCommitValue.parse(value)
        leader_epoch = data.leader_epoch if data.leader_epoch is not None else -1
        target[tp] = OffsetEntry(data.offset, leader_epoch, data.metadata, data.commit_timestamp, record_offset)
        return parsed.group

    def complete_txn(self, log_partition: int, producer_id: int, commit: bool, marker_offset: int) -> None:
        """A marker on ``__consumer_offsets-log_partition`` settles that producer's offsets there."""
        groups = self.pending.get(producer_id)
        if not groups:
            return
        for group in [g for g in groups if self.log.partition_for(g) == log_partition]:
            offsets = groups.pop(group)
            if commit:
                committed = self.committed.setdefault(group, {})
                for tp, entry in offsets.items():
                    current = committed.get(tp)
                    if current is None or current.record_offset < entry.record_offset:
                        committed[tp] = entry
        if not groups:
            del self.pending[producer_id]

    # ------------------------------------------------------------------ writes

    async def commit(self, group: str, offsets: dict[TopicPartition, OffsetEntry], *,
                     producer_id: int = -1, producer_epoch: int = -1, verify_txn=None) -> None:
        """Write offsets as one batch (transactional when a producer id is given), then replay it."""
        if not offsets:
            return
        items = list(offsets.items())
        encoded = [(offset_key(group, tp), _encode_value(entry)) for tp, entry in items]
        transactional = producer_id >= 0
        base = await self.log.append(self.log.partition_for(group), encoded, self.clock.now_ms(),
                                     producer_id=producer_id, producer_epoch=producer_epoch,
                                     transactional=transactional, verify_txn=verify_txn)
        for i, (key, value) in enumerate(encoded):
            self.replay(base + i, key, value, producer_id if transactional else None)

    async def delete(self, group: str, partitions: list[TopicPartition],
                     also: Sequence[tuple[bytes, None]] = ()) -> None:
        """Tombstones for the group's offsets of these partitions (plus ``also``), in one batch."""
        encoded: list[tuple[bytes, bytes | None]] = [(offset_key(group, tp), None) for tp in partitions]
        encoded.extend(also)
        if not encoded:
            return
        base = await self.log.append(self.log.partition_for(group), encoded, self.clock.now_ms())
        for i, (key, _value) in enumerate(encoded[:len(partitions)]):
            self.replay(base + i, key, None, None)

    # ------------------------------------------------------------------ reads

    def fetch(self, group: str, partitions: list[TopicPartition] | None,
              require_stable: bool) -> list[tuple[TopicPartition, OffsetEntry | None, int]]:
        """(partition, committed entry or None, error code) for each asked partition, or all known."""
        committed = self.committed.get(group, {})
        wanted = sorted(committed) if partitions is None else partitions
        unstable = self.pending_partitions(group) if require_stable else set()
        answers: list[tuple[TopicPartition, OffsetEntry | None, int]] = []
        for tp in wanted:
            if tp in unstable:
                answers.append((tp, None, Errors.UNSTABLE_OFFSET_COMMIT))
            else:
                answers.append((tp, committed.get(tp), Errors.NONE))
        return answers

    def pending_partitions(self, group: str) -> set[TopicPartition]:
        found: set[TopicPartition] = set()
        for groups in self.pending.values():
            found.update(groups.get(group, ()))
        return found


def validate_group_id(group: str | None) -> None:
    if not group:
        raise KafkaError(Errors.INVALID_GROUP_ID, "group id must not be empty")


def offset_key(group: str, tp: TopicPartition) -> bytes:
    return records.OffsetCommitKey.build({"version": records.OFFSET_KEY_VERSION, "group": group,
                                          "topic": tp[0], "partition": tp[1]})


def _encode_value(entry: OffsetEntry) -> bytes:
    return records.OffsetCommitValue.build({
        "version": records.OFFSET_VALUE_VERSION, "offset": entry.offset, "leader_epoch": entry.leader_epoch,
        "metadata": entry.metadata, "commit_timestamp": entry.commit_timestamp, "expire_timestamp": None})
