"""A share group's records: the only way its state changes (``ShareGroup.replay``).

They mirror Kafka's share group records of ``__consumer_offsets`` (ShareGroupMetadata,
ShareGroupMemberMetadata, ShareGroupTargetAssignmentMetadata/Member,
ShareGroupCurrentMemberAssignment). A value of None is a tombstone.

Simplification (stage 1): the records are replayed in memory only; they are not yet written to
``__consumer_offsets``, so share group membership does not survive a restart (members rejoin).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

GROUP_METADATA = "ShareGroupMetadata"
MEMBER_METADATA = "ShareGroupMemberMetadata"
TARGET_ASSIGNMENT_METADATA = "ShareGroupTargetAssignmentMetadata"
TARGET_ASSIGNMENT_MEMBER = "ShareGroupTargetAssignmentMember"
CURRENT_MEMBER_ASSIGNMENT = "ShareGroupCurrentMemberAssignment"

#: topic id -> partitions
Partitions = dict[bytes, tuple[int, ...]]


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


@dataclass(frozen=True)
class ShareGroupRecord:
    type: str
    group_id: str
    member_id: str | None = None
    value: Any = None
