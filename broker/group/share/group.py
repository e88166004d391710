"""A share group's state, changed only by replaying its records.

Kafka's ``ShareGroup``: the group epoch (bumped when members or subscriptions change), the target
assignment and its epoch, and the members with their epoch and current assignment. Share groups
have no revocation step: a member moves to its target at once. The state (Empty, Stable, Dead)
follows from those; its legal moves are ``TRANSITIONS``.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from . import records as r


class ShareGroupState(enum.Enum):
    EMPTY = "Empty"
    STABLE = "Stable"
    DEAD = "Dead"


S = ShareGroupState
TRANSITIONS: dict[ShareGroupState, frozenset[ShareGroupState]] = {
    S.EMPTY: frozenset({S.STABLE, S.DEAD}),
    S.STABLE: frozenset({S.EMPTY}),  # the last member left or was fenced
    S.DEAD: frozenset(),
}


@dataclass
class ShareGroupMember:
    member_id: str
    metadata: r.MemberMetadata
    member_epoch: int = 0
    previous_member_epoch: int = 0
    assignment: r.Partitions = field(default_factory=dict)


class ShareGroup:
    def __init__(self, group_id: str):
        self.group_id = group_id
        # as Kafka's ModernGroup: 1, so that a first member's epoch (2) is never the join epoch 0
        self.group_epoch = 1
        self.assignment_epoch = 0
        self.members: dict[str, ShareGroupMember] = {}
        self.target: dict[str, r.Partitions] = {}
        self.deleted = False

    @property
    def state(self) -> ShareGroupState:
        if self.deleted:
            return S.DEAD
        return S.STABLE if self.members else S.EMPTY

    def subscribed_topics(self) -> set[str]:
        return {name for m in self.members.values() for name in m.metadata.subscribed_topic_names}

    def replay(self, record: r.ShareGroupRecord) -> None:
        before = self.state
        value = record.value
        if record.type == r.GROUP_METADATA:
            if value is None:
                self.deleted = True
            else:
                self.group_epoch = value.epoch
        elif record.type == r.TARGET_ASSIGNMENT_METADATA:
            if value is not None:
                self.assignment_epoch = value.assignment_epoch
        elif record.type == r.TARGET_ASSIGNMENT_MEMBER:
            assert record.member_id is not None
            if value is None:
                self.target.pop(record.member_id, None)
            else:
                self.target[record.member_id] = value.partitions
        elif record.type == r.MEMBER_METADATA:
            assert record.member_id is not None
            if value is None:
                self.members.pop(record.member_id, None)
            else:
                member = self.members.get(record.member_id)
                if member is None:
                    self.members[record.member_id] = ShareGroupMember(record.member_id, value)
                else:
                    member.metadata = value
        elif record.type == r.CURRENT_MEMBER_ASSIGNMENT:
            member = self.members.get(record.member_id or "")
            if member is not None and value is not None:
                member.member_epoch, member.assignment = value.member_epoch, value.partitions
                member.previous_member_epoch = value.previous_member_epoch
        after = self.state
        if after != before and after not in TRANSITIONS[before]:
            raise AssertionError(f"share group {self.group_id}: {before.value} -> {after.value} is not legal")
