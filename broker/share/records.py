"""Share-partition state records of ``__share_group_state``, in Kafka 4.4's format.

A key is an int16 record type (0 ShareSnapshot, 1 ShareUpdate) and version-0 key fields (group id,
topic id, partition; not flexible); a value is int16 version 0 and the flexible value fields.
Kafka's share coordinator writes ShareUpdate deltas and a ShareSnapshot every
``share.coordinator.snapshot.update.records.per.snapshot`` updates, and prunes the topic itself.
Simplification: Weir writes a whole ShareSnapshot at each change (a share-partition's durable state
is its start offset and its in-flight window, at most ``share.partition.max.record.locks``
records, in ranges), so the compacted topic keeps exactly the live state; a ShareUpdate found in a
log (written by another broker) is applied onto the snapshot before it, as Kafka replays it.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass

from weir.protocol.schema import INT8, INT16, INT32, INT64, STRING, UUID, Array, Field, Message, Struct

SHARE_SNAPSHOT = 0
SHARE_UPDATE = 1

Key = Message("ShareSnapshotKey", SHARE_SNAPSHOT, "0", None,
              Field("group_id", STRING), Field("topic_id", UUID), Field("partition", INT32))

StateBatch = Struct("StateBatch", Field("first_offset", INT64), Field("last_offset", INT64),
                    Field("delivery_state", INT8), Field("delivery_count", INT16))

SnapshotValue = Message(
    "ShareSnapshotValue", SHARE_SNAPSHOT, "0", "0+",
    Field("snapshot_epoch", INT32),
    Field("state_epoch", INT32),
    Field("leader_epoch", INT32),
    Field("start_offset", INT64),
    Field("create_timestamp", INT64),
    Field("write_timestamp", INT64),
    Field("state_batches", Array(StateBatch)),
)

UpdateValue = Message(
    "ShareUpdateValue", SHARE_UPDATE, "0", "0+",
    Field("snapshot_epoch", INT32),
    Field("leader_epoch", INT32),
    Field("start_offset", INT64),
    Field("state_batches", Array(StateBatch)),
)

_INT16 = struct.Struct(">h")

#: (first offset, last offset, state, delivery count)
Batch = tuple[int, int, int, int]


@dataclass
class StoredState:
    """A share-partition's durable state as the records leave it."""
    start_offset: int
    batches: list[Batch]
    snapshot_epoch: int = 0
    create_timestamp: int = -1


def encode(group_id: str, topic_id: bytes, partition: int, state: StoredState | None,
           now_ms: int) -> tuple[bytes, bytes | None]:
    key = bytearray(_INT16.pack(SHARE_SNAPSHOT))
    Key.encode_into(key, 0, Key(group_id=group_id, topic_id=topic_id, partition=partition))
    if state is None:
        return bytes(key), None
    value = bytearray(_INT16.pack(0))
    SnapshotValue.encode_into(value, 0, SnapshotValue(
        snapshot_epoch=state.snapshot_epoch, state_epoch=0, leader_epoch=0, start_offset=state.start_offset,
        create_timestamp=state.create_timestamp, write_timestamp=now_ms,
        state_batches=[StateBatch(first_offset=f, last_offset=last, delivery_state=s, delivery_count=c)
                       for f, last, s, c in state.batches]))
    return bytes(key), bytes(value)


Where = tuple[str, bytes, int]  # group id, topic id, partition


def decode(key: bytes, value: bytes | None, stored: Callable[[Where], StoredState | None]) -> tuple[
        Where, StoredState | None]:
    """The share-partition a record is about and its state after the record (``stored``: before it)."""
    record_type = _INT16.unpack_from(key)[0]
    parsed = Key.decode(0, key, 2)
    where = (parsed.group_id, parsed.topic_id, parsed.partition)
    if value is None:
        return where, None
    version = _INT16.unpack_from(value)[0]
    if version != 0:
        raise ValueError(f"share state record type {record_type}: value version {version} is newer than Weir reads")
    if record_type == SHARE_SNAPSHOT:
        snapshot = SnapshotValue.decode(0, value, 2)
        return where, StoredState(snapshot.start_offset, _batches(snapshot), snapshot.snapshot_epoch,
                                  snapshot.create_timestamp)
    update = UpdateValue.decode(0, value, 2)
    base = stored(where) or StoredState(update.start_offset, [])
    return where, StoredState(update.start_offset, merge(base.batches, _batches(update), update.start_offset),
                              base.snapshot_epoch, base.create_timestamp)


def _batches(decoded) -> list[Batch]:
    return [(b.first_offset, b.last_offset, b.delivery_state, b.delivery_count) for b in decoded.state_batches]


def merge(old: list[Batch], new: list[Batch], start_offset: int) -> list[Batch]:
    """``old`` overlaid with ``new`` (newer wins offset by offset), from ``start_offset`` on."""
    by_offset: dict[int, tuple[int, int]] = {}
    for first, last, state, count in [*old, *new]:
        for offset in range(max(first, start_offset), last + 1):
            by_offset[offset] = (state, count)
    return ranges(sorted(by_offset.items()))


def ranges(per_offset: list[tuple[int, tuple[int, int]]]) -> list[Batch]:
    """(offset, (state, count)) in offset order as ranges of equal neighbours."""
    out: list[Batch] = []
    for offset, (state, count) in per_offset:
        if out and out[-1][1] == offset - 1 and out[-1][2:] == (state, count):
            out[-1] = (out[-1][0], offset, state, count)
        else:
            out.append((offset, offset, state, count))
    return out
