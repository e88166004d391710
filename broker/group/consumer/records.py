"""KIP-848 group records in ``__consumer_offsets``, with Kafka's record types and versions.

A key is an int16 record type (Kafka's ``apiKey`` of the coordinator record) followed by the key
fields (non-flexible, version 0); a value is int16 version 0 followed by the flexible value
fields, tagged fields included. A null value is a tombstone.

  3 ConsumerGroupMetadata              group epoch (+ MetadataHash, tag 0, Kafka 4.1+)
  5 ConsumerGroupMemberMetadata        a member's ids, subscription, assignor
  6 ConsumerGroupTargetAssignmentMetadata   the target assignment epoch
  7 ConsumerGroupTargetAssignmentMember     a member's target partitions
  8 ConsumerGroupCurrentMemberAssignment    a member's epochs, state, owned / revoking partitions

Type 4 (ConsumerGroupPartitionMetadata) is not written, as Kafka 4.1+ no longer writes it
(KIP-1101: the MetadataHash of record 3 replaced it); one found in a log is skipped.
Type 9/10 (resolved regular expressions) are not written either: Weir resolves a subscription's
regex against the topics at hand whenever it computes an assignment (see ``subscription.py``).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

from weir.protocol import primitives as p
from weir.protocol.schema import BYTES, INT8, INT32, INT64, STRING, UUID, Array, Field, Message, Struct

GROUP_METADATA = 3
PARTITION_METADATA = 4
MEMBER_METADATA = 5
TARGET_ASSIGNMENT_METADATA = 6
TARGET_ASSIGNMENT_MEMBER = 7
CURRENT_MEMBER_ASSIGNMENT = 8
TYPES = {GROUP_METADATA, PARTITION_METADATA, MEMBER_METADATA, TARGET_ASSIGNMENT_METADATA,
         TARGET_ASSIGNMENT_MEMBER, CURRENT_MEMBER_ASSIGNMENT}
_MEMBER_KEYED = {MEMBER_METADATA, TARGET_ASSIGNMENT_MEMBER, CURRENT_MEMBER_ASSIGNMENT}

GroupMetadataValue = Message(
    "ConsumerGroupMetadataValue", GROUP_METADATA, "0", "0+",
    Field("epoch", INT32),
    Field("metadata_hash", INT64, tag=0, tagged="0+", default=0),
)

ClassicProtocol = Struct("ClassicProtocol", Field("name", STRING), Field("metadata", BYTES))
ClassicMemberMetadata = Struct("ClassicMemberMetadata", Field("session_timeout_ms", INT32),
                               Field("supported_protocols", Array(ClassicProtocol)))

MemberMetadataValue = Message(
    "ConsumerGroupMemberMetadataValue", MEMBER_METADATA, "0", "0+",
    Field("instance_id", STRING, nullable="0+"),
    Field("rack_id", STRING, nullable="0+"),
    Field("client_id", STRING),
    Field("client_host", STRING),
    Field("subscribed_topic_names", Array(STRING)),
    Field("subscribed_topic_regex", STRING, nullable="0+"),
    Field("rebalance_timeout_ms", INT32, default=-1),
    Field("server_assignor", STRING, nullable="0+"),
    Field("classic_member_metadata", ClassicMemberMetadata, nullable="0+", tag=0, tagged="0+", default=None),
)

TargetAssignmentMetadataValue = Message(
    "ConsumerGroupTargetAssignmentMetadataValue", TARGET_ASSIGNMENT_METADATA, "0", "0+",
    Field("assignment_epoch", INT32),
)

TopicPartition = Struct("TopicPartition", Field("topic_id", UUID), Field("partitions", Array(INT32)))

TargetAssignmentMemberValue = Message(
    "ConsumerGroupTargetAssignmentMemberValue", TARGET_ASSIGNMENT_MEMBER, "0", "0+",
    Field("topic_partitions", Array(TopicPartition)),
)

TopicPartitions = Struct(
    "TopicPartitions",
    Field("topic_id", UUID),
    Field("partitions", Array(INT32)),
    # KIP-1251 (Kafka 4.3): the epoch each partition was assigned at, aligned with partitions
    Field("assignment_epochs", Array(INT32), nullable="0+", tag=0, tagged="0+", default=None),
)

CurrentMemberAssignmentValue = Message(
    "ConsumerGroupCurrentMemberAssignmentValue", CURRENT_MEMBER_ASSIGNMENT, "0", "0+",
    Field("member_epoch", INT32),
    Field("previous_member_epoch", INT32),
    Field("state", INT8),
    Field("assigned_partitions", Array(TopicPartitions)),
    Field("partitions_pending_revocation", Array(TopicPartitions)),
)

VALUES = {message.api_key: message for message in (
    GroupMetadataValue, MemberMetadataValue, TargetAssignmentMetadataValue, TargetAssignmentMemberValue,
    CurrentMemberAssignmentValue)}

_INT16 = struct.Struct(">h")


@dataclass(frozen=True, slots=True)
class GroupRecord:
    """One record: its type, whose it is, and its decoded value (None: a tombstone)."""
    type: int
    group_id: str
    member_id: str | None = None
    value: Any = None

    def keyed_member(self) -> str:
        """The member id of a member-keyed record (its key holds one; group-level records have none)."""
        if self.member_id is None:
            raise ValueError(f"record type {self.type} of group {self.group_id} has no member id")
        return self.member_id

    def encode(self) -> tuple[bytes, bytes | None]:
        key = bytearray(_INT16.pack(self.type))
        _write_string(key, self.group_id)
        if self.type in _MEMBER_KEYED:
            _write_string(key, self.keyed_member())
        if self.value is None:
            return bytes(key), None
        value = bytearray(_INT16.pack(0))
        VALUES[self.type].encode_into(value, 0, self.value)
        return bytes(key), bytes(value)


def is_consumer_group_key(key: bytes) -> bool:
    return len(key) >= 2 and _INT16.unpack_from(key)[0] in TYPES


def decode(key: bytes, value: bytes | None) -> GroupRecord | None:
    """The record of a key of one of ``TYPES`` (None for type 4, which Weir does not use)."""
    record_type = _INT16.unpack_from(key)[0]
    group_id, position = _read_string(key, 2)
    member_id = None
    if record_type in _MEMBER_KEYED:
        member_id, position = _read_string(key, position)
    if record_type == PARTITION_METADATA:
        return None
    if value is None:
        return GroupRecord(record_type, group_id, member_id)
    version = _INT16.unpack_from(value)[0]
    if version != 0:
        raise ValueError(f"record type {record_type}: value version {version} is newer than Weir reads")
    return GroupRecord(record_type, group_id, member_id, VALUES[record_type].decode(0, value, 2))


def _write_string(out: bytearray, text: str) -> None:
    data = text.encode("utf8")
    out += _INT16.pack(len(data))
    out += data


def _read_string(buf: bytes, position: int) -> tuple[str, int]:
    (length,), position = _INT16.unpack_from(buf, position), position + 2
    if length < 0 or position + length > len(buf):
        raise p.DecodeError("bad string in a group record key")
    return buf[position:position + length].decode("utf8"), position + length
