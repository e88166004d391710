"""A consumer-protocol member as the coordinator sees it: immutable, replaced whole on every change.

Kafka's ``ConsumerGroupMember``: the member's ids and subscription (MemberMetadata record), and its
epochs, reconciliation state and partitions (CurrentMemberAssignment record). Partitions are kept
per topic id as frozensets: ``{topic_id: frozenset(partition indexes)}``.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Mapping, Set as AbstractSet
from dataclasses import dataclass, field

Assignment = dict[bytes, frozenset[int]]

LEAVE_GROUP_EPOCH = -1          # the member leaves for good
LEAVE_GROUP_STATIC_EPOCH = -2   # a static member leaves and will come back with the same instance id
JOIN_GROUP_EPOCH = 0


class MemberState(enum.IntEnum):
    """Kafka's MemberState, with its record values."""
    STABLE = 0                 # reconciled to the target epoch it was given
    UNREVOKED_PARTITIONS = 1   # must revoke partitions before it may move on
    UNRELEASED_PARTITIONS = 2  # waits for partitions that another member still owns
    UNKNOWN = 127


@dataclass(frozen=True)
class ConsumerGroupMember:
    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: tuple[str, ...] = ()
    subscribed_topic_regex: str | None = None
    rebalance_timeout_ms: int = -1
    server_assignor: str | None = None
    member_epoch: int = 0
    previous_member_epoch: int = 0
    state: MemberState = MemberState.STABLE
    assigned: Assignment = field(default_factory=dict)
    pending_revocation: Assignment = field(default_factory=dict)
    # the member epoch at which each partition it holds was given to it (KIP-1251, Kafka 4.3): a
    # commit from an older epoch is accepted for partitions the member already held then
    assignment_epochs: dict[tuple[bytes, int], int] = field(default_factory=dict)
    # a member speaking the classic protocol (JoinGroup/SyncGroup/Heartbeat) in a consumer group:
    # its session timeout and its protocols (name, metadata) as it joined; None for consumer-protocol members
    classic_session_timeout_ms: int | None = None
    classic_protocols: tuple[tuple[str, bytes], ...] | None = None

    @property
    def uses_classic_protocol(self) -> bool:
        return self.classic_protocols is not None

    def replace(self, **changes) -> ConsumerGroupMember:
        return dataclasses.replace(self, **changes)

    def owned_partitions(self):
        """Every (topic id, partition) the member holds: assigned, and still revoking."""
        for assignment in (self.assigned, self.pending_revocation):
            for topic_id, partitions in assignment.items():
                for partition in partitions:
                    yield topic_id, partition

    def assigned_at(self, topic_id: bytes, partition: int) -> int | None:
        """The epoch the member holds this partition since; None when it does not hold it."""
        if (partition not in self.assigned.get(topic_id, ())
                and partition not in self.pending_revocation.get(topic_id, ())):
            return None
        return self.assignment_epochs.get((topic_id, partition), self.member_epoch)

    def is_reconciled_to(self, target_epoch: int) -> bool:
        return self.state == MemberState.STABLE and self.member_epoch == target_epoch


def clean(assignment: Mapping[bytes, AbstractSet[int]]) -> Assignment:
    """Frozen, without empty topics, so that equal assignments compare equal."""
    return {topic_id: frozenset(partitions) for topic_id, partitions in assignment.items() if partitions}


def is_subset(owned: Assignment | None, of: Assignment) -> bool:
    if owned is None:
        return True
    return all(partitions <= of.get(topic_id, frozenset()) for topic_id, partitions in owned.items())
