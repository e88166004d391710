"""A share group's records in ``__consumer_offsets``, with Kafka 4.4's record types and versions;
the only way its state changes (``ShareGroup.replay``).

A key is an int16 record type and the version-0 key fields (not flexible); a value is int16
version 0 and the flexible value fields. A null value is a tombstone.

  10 ShareGroupMemberMetadata            a member's rack, client, host, subscribed topics
  11 ShareGroupMetadata                  the group epoch (and the subscribed topics' metadata hash)
  12 ShareGroupTargetAssignmentMetadata  the target assignment epoch
  13 ShareGroupTargetAssignmentMember    a member's target partitions
  14 ShareGroupCurrentMemberAssignment   a member's epochs, state and partitions

Type 15 (ShareGroupStatePartitionMetadata: which share-partitions the share coordinator has
initialized) is not written: Weir's share-partitions start when first assigned or fetched, in
the same process (``broker/share``); one found in a log is skipped.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

from weir.protocol.schema import INT8, INT32, INT64, STRING, UUID, Array, Field, Message, Struct

from ..consumer.records import _read_string, _write_string

MEMBER_METADATA = 10
GROUP_METADATA = 11
TARGET_ASSIGNMENT_METADATA = 12
TARGET_ASSIGNMENT_MEMBER = 13
CURRENT_MEMBER_ASSIGNMENT = 14
STATE_PARTITION_METADATA = 15
TYPES = {MEMBER_METADATA, GROUP_METADATA, TARGET_ASSIGNMENT_METADATA, TARGET_ASSIGNMENT_MEMBER,
         CURRENT_MEMBER_ASSIGNMENT, STATE_PARTITION_METADATA}
_MEMBER_KEYED = {MEMBER_METADATA, TARGET_ASSIGNMENT_MEMBER, CURRENT_MEMBER_ASSIGNMENT}
STABLE_MEMBER_STATE = 0  # Kafka's MemberState.STABLE: share members have no other

#: topic id -> partitions
Partitions = dict[bytes, tuple[int, ...]]

TopicPartitions = Struct("TopicPartitions", Field("topic_id", UUID), Field("partitions", Array(INT32)))

_MemberMetadataValue = Message(
    "ShareGroupMemberMetadataValue", MEMBER_METADATA, "0", "0+",
    Field("rack_id", STRING, nullable="0+"),
    Field("client_id", STRING),
    Field("client_host", STRING),
    Field("subscribed_topic_names", Array(STRING)),
)
_GroupMetadataValue = Message("ShareGroupMetadataValue", GROUP_METADATA, "0", "0+",
                              Field("epoch", INT32), Field("metadata_hash", INT64))
_TargetAssignmentMetadataValue = Message("ShareGroupTargetAssignmentMetadataValue", TARGET_ASSIGNMENT_METADATA,
                                         "0", "0+", Field("assignment_epoch", INT32))
_TargetAssignmentMemberValue = Message("ShareGroupTargetAssignmentMemberValue", TARGET_ASSIGNMENT_MEMBER, "0", "0+",
                                       Field("topic_partitions", Array(TopicPartitions)))
_CurrentMemberAssignmentValue = Message(
    "ShareGroupCurrentMemberAssignmentValue", CURRENT_MEMBER_ASSIGNMENT, "0", "0+",
    Field("member_epoch", INT32),
    Field("previous_member_epoch", INT32),
    Field("state", INT8),
    Field("assigned_partitions", Array(TopicPartitions)),
)


@dataclass(frozen=True)
class GroupEpoch:
    epoch: int


@dataclass(frozen=True)
class MemberMetadata:
    client_id: str
    client_host: str
    rack_id: str | None
    subscribed_topic_names: tuple[str, ...]


@dataclass(frozen=True)
class AssignmentEpoch:
    assignment_epoch: int


@dataclass(frozen=True)
class MemberAssignment:
    member_epoch: int
    partitions: Partitions
    previous_member_epoch: int = 0


@dataclass(frozen=True)
class ShareGroupRecord:
    type: int
    group_id: str
    member_id: str | None = None
    value: Any = None

    def encode(self) -> tuple[bytes, bytes | None]:
        key = bytearray(_INT16.pack(self.type))
        _write_string(key, self.group_id)
        if self.type in _MEMBER_KEYED:
            _write_string(key, self.member_id or "")
        if self.value is None:
            return bytes(key), None
        out = bytearray(_INT16.pack(0))
        message, fields = _to_wire(self.type, self.value)
        message.encode_into(out, 0, message(**fields))
        return bytes(key), bytes(out)


_INT16 = struct.Struct(">h")


def _topic_partitions(partitions: Partitions) -> list[Any]:
    return [TopicPartitions(topic_id=topic_id, partitions=list(indexes)) for topic_id, indexes in partitions.items()]


def _to_wire(record_type: int, value: Any) -> tuple[Message, dict[str, Any]]:
    if record_type == MEMBER_METADATA:
        return _MemberMetadataValue, {"rack_id": value.rack_id, "client_id": value.client_id,
                                      "client_host": value.client_host,
                                      "subscribed_topic_names": list(value.subscribed_topic_names)}
    if record_type == GROUP_METADATA:
        return _GroupMetadataValue, {"epoch": value.epoch, "metadata_hash": 0}
    if record_type == TARGET_ASSIGNMENT_METADATA:
        return _TargetAssignmentMetadataValue, {"assignment_epoch": value.assignment_epoch}
    if record_type == TARGET_ASSIGNMENT_MEMBER:
        return _TargetAssignmentMemberValue, {"topic_partitions": _topic_partitions(value.partitions)}
    return _CurrentMemberAssignmentValue, {"member_epoch": value.member_epoch,
                                           "previous_member_epoch": value.previous_member_epoch,
                                           "state": STABLE_MEMBER_STATE,
                                           "assigned_partitions": _topic_partitions(value.partitions)}


def is_share_group_key(key: bytes) -> bool:
    return len(key) >= 2 and _INT16.unpack_from(key)[0] in TYPES


def decode(key: bytes, value: bytes | None) -> ShareGroupRecord | None:
    """The record of a key of one of ``TYPES`` (None for type 15, which Weir does not use)."""
    record_type = _INT16.unpack_from(key)[0]
    group_id, position = _read_string(key, 2)
    member_id = _read_string(key, position)[0] if record_type in _MEMBER_KEYED else None
    if record_type == STATE_PARTITION_METADATA:
        return None
    if value is None:
        return ShareGroupRecord(record_type, group_id, member_id)
    version = _INT16.unpack_from(value)[0]
    if version != 0:
        raise ValueError(f"share group record type {record_type}: value version {version} is newer than Weir reads")
    wire = {MEMBER_METADATA: _MemberMetadataValue, GROUP_METADATA: _GroupMetadataValue,
            TARGET_ASSIGNMENT_METADATA: _TargetAssignmentMetadataValue,
            TARGET_ASSIGNMENT_MEMBER: _TargetAssignmentMemberValue,
            CURRENT_MEMBER_ASSIGNMENT: _CurrentMemberAssignmentValue}[record_type].decode(0, value, 2)
    partitions = lambda topics: {t.topic_id: tuple(t.partitions) for t in topics}  # noqa: E731
    decoded: Any
    if record_type == MEMBER_METADATA:
        decoded = MemberMetadata(wire.client_id, wire.client_host, wire.rack_id, tuple(wire.subscribed_topic_names))
    elif record_type == GROUP_METADATA:
        decoded = GroupEpoch(wire.epoch)
    elif record_type == TARGET_ASSIGNMENT_METADATA:
        decoded = AssignmentEpoch(wire.assignment_epoch)
    elif record_type == TARGET_ASSIGNMENT_MEMBER:
        decoded = MemberAssignment(0, partitions(wire.topic_partitions))
    else:
        decoded = MemberAssignment(wire.member_epoch, partitions(wire.assigned_partitions),
                                   wire.previous_member_epoch)
    return ShareGroupRecord(record_type, group_id, member_id, decoded)
