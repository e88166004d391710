"""Committed offsets, kept in ``__consumer_offsets`` (partition = hash of the group id).

Plain OffsetCommit records become the group's offsets when replayed.
Transactional ones (TxnOffsetCommit, written in a transactional batch under
the producer's id and epoch) are pending per producer id until a marker lands
on that partition: COMMIT makes them committed (a newer record offset wins
over an older one, as in Kafka), ABORT discards them. While any are pending
for a group's partition, OffsetFetch with require_stable answers
UNSTABLE_OFFSET_COMMIT for it (KIP-447).

Group membership (JoinGroup and friends) is not part of this module; offsets
are stored for any group id, the way Kafka stores them for a "simple" group.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from protocol.errors import Errors, KafkaError

from ..coordinator import records
from ..coordinator.runtime import CoordinatorLog

log = logging.getLogger(__name__)

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

    # ------------------------------------------------------------------ replay

    def load(self) -> None:
        count = 0
        for entry in self.log.replay():
            if entry.marker_commit is not None:
                self.complete_txn(entry.partition, entry.header.producer_id, entry.marker_commit, entry.offset)
                continue
            producer_id = entry.header.producer_id if entry.header.is_transactional else None
            self.replay(entry.offset, entry.key, entry.value, producer_id)
            count += 1
        if count:
            log.info("offsets: replayed %d record(s) for %d group(s)", count, len(self.committed))

    def replay(self, record_offset: int, key: bytes, value: bytes | None, producer_id: int | None) -> None:
        version = records.RecordKeyVersion.parse(key[:2])
        if version not in (0, records.OFFSET_KEY_VERSION):
            return  # group metadata records belong to group membership
        parsed = records.OffsetCommitKey.parse(key)
        tp = (parsed.topic, parsed.partition)
        if producer_id is not None:
            target = self.pending.setdefault(producer_id, {}).setdefault(parsed.group, {})
        else:
            target = self.committed.setdefault(parsed.group, {})
        if value is None:
            target.pop(tp, None)
            return
        data = records.OffsetCommitValue.parse(value)
        leader_epoch = data.leader_epoch if data.leader_epoch is not None else -1
        target[tp] = OffsetEntry(data.offset, leader_epoch, data.metadata, data.commit_timestamp, record_offset)

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
        encoded = [(_encode_key(group, tp), _encode_value(entry)) for tp, entry in items]
        transactional = producer_id >= 0
        base = await self.log.append(self.log.partition_for(group), encoded, self.clock.now_ms(),
                                     producer_id=producer_id, producer_epoch=producer_epoch,
                                     transactional=transactional, verify_txn=verify_txn)
        for i, (key, value) in enumerate(encoded):
            self.replay(base + i, key, value, producer_id if transactional else None)

    # ------------------------------------------------------------------ reads

    def fetch(self, group: str, partitions: list[TopicPartition] | None,
              require_stable: bool) -> list[tuple[TopicPartition, OffsetEntry | None, int]]:
        """(partition, committed entry or None, error code) for each asked partition, or all known."""
        committed = self.committed.get(group, {})
        wanted = sorted(committed) if partitions is None else partitions
        unstable = self._pending_partitions(group) if require_stable else set()
        answers = []
        for tp in wanted:
            if tp in unstable:
                answers.append((tp, None, Errors.UNSTABLE_OFFSET_COMMIT))
            else:
                answers.append((tp, committed.get(tp), Errors.NONE))
        return answers

    def _pending_partitions(self, group: str) -> set[TopicPartition]:
        found = set()
        for groups in self.pending.values():
            found.update(groups.get(group, ()))
        return found


def validate_group_id(group: str | None) -> None:
    if not group:
        raise KafkaError(Errors.INVALID_GROUP_ID, "group id must not be empty")


def _encode_key(group: str, tp: TopicPartition) -> bytes:
    return records.OffsetCommitKey.build({"version": records.OFFSET_KEY_VERSION, "group": group,
                                          "topic": tp[0], "partition": tp[1]})


def _encode_value(entry: OffsetEntry) -> bytes:
    return records.OffsetCommitValue.build({
        "version": records.OFFSET_VALUE_VERSION, "offset": entry.offset, "leader_epoch": entry.leader_epoch,
        "metadata": entry.metadata, "commit_timestamp": entry.commit_timestamp, "expire_timestamp": None})
