"""A consumer-protocol group's state, changed only by replaying its records (``replay``).

Kafka's ``ConsumerGroup``: the group epoch (bumped when membership, subscriptions or the
subscribed topics change), the target assignment and its epoch, the members, and which member
epoch owns each partition now (so that a partition is handed over only once released).
The group's state (Empty, Assigning, Reconciling, Stable) follows from those, as in Kafka.
"""

from __future__ import annotations

import enum

from . import records as r
from .member import Assignment, ConsumerGroupMember, MemberState, clean


class ConsumerGroupState(enum.Enum):
    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"


class ConsumerGroup:
    def __init__(self, group_id: str):
        self.group_id = group_id
        # Kafka 4.3's ModernGroup starts at 1, so that a member's first epoch is never 0 (the join
        # epoch) even when nothing bumps it; a first member with a subscription makes it 2
        self.group_epoch = 1
        self.metadata_hash = 0
        self.target_epoch = 0
        self.members: dict[str, ConsumerGroupMember] = {}
        self.static_members: dict[str, str] = {}           # instance id -> member id
        self.target: dict[str, Assignment] = {}            # member id -> target partitions
        self.partition_epochs: dict[tuple[bytes, int], int] = {}  # owned partition -> owner's epoch

    # ------------------------------------------------------------------ derived

    @property
    def state(self) -> ConsumerGroupState:
        if not self.members:
            return ConsumerGroupState.EMPTY
        if self.group_epoch > self.target_epoch:
            return ConsumerGroupState.ASSIGNING
        if any(not m.is_reconciled_to(self.target_epoch) for m in self.members.values()):
            return ConsumerGroupState.RECONCILING
        return ConsumerGroupState.STABLE

    def partition_epoch(self, topic_id: bytes, partition: int) -> int:
        return self.partition_epochs.get((topic_id, partition), -1)

    def static_member(self, instance_id: str | None) -> ConsumerGroupMember | None:
        member_id = self.static_members.get(instance_id) if instance_id is not None else None
        return self.members.get(member_id) if member_id is not None else None

    # ------------------------------------------------------------------ replay

    def replay(self, record: r.GroupRecord) -> None:
        value = record.value
        if record.type == r.GROUP_METADATA:
            if value is not None:
                self.group_epoch, self.metadata_hash = value.epoch, value.metadata_hash
        elif record.type == r.TARGET_ASSIGNMENT_METADATA:
            if value is not None:
                self.target_epoch = value.assignment_epoch
        elif record.type == r.TARGET_ASSIGNMENT_MEMBER:
            if value is None:
                self.target.pop(record.keyed_member(), None)
            else:
                self.target[record.keyed_member()] = _assignment(value.topic_partitions)
        elif record.type == r.MEMBER_METADATA:
            self._replay_member_metadata(record.keyed_member(), value)
        elif record.type == r.CURRENT_MEMBER_ASSIGNMENT:
            self._replay_current_assignment(record.keyed_member(), value)

    def _replay_member_metadata(self, member_id: str, value) -> None:
        old = self.members.get(member_id)
        if value is None:
            if old is not None:
                self._set_member(member_id, None)
            return
        base = old or ConsumerGroupMember(member_id)
        self._set_member(member_id, base.replace(
            instance_id=value.instance_id, rack_id=value.rack_id, client_id=value.client_id,
            client_host=value.client_host, subscribed_topic_names=tuple(value.subscribed_topic_names),
            subscribed_topic_regex=value.subscribed_topic_regex, rebalance_timeout_ms=value.rebalance_timeout_ms,
            server_assignor=value.server_assignor, **_classic(value.classic_member_metadata)))

    def _replay_current_assignment(self, member_id: str, value) -> None:
        old = self.members.get(member_id)
        if value is None:
            if old is not None:  # the member's partitions are free; MemberMetadata's tombstone removes it
                self._set_member(member_id, old.replace(member_epoch=0, previous_member_epoch=0,
                                                        state=MemberState.STABLE, assigned={},
                                                        pending_revocation={}))
            return
        base = old or ConsumerGroupMember(member_id)
        try:
            state = MemberState(value.state)
        except ValueError:
            state = MemberState.UNKNOWN
        epochs = {}  # a record without them (before Kafka 4.3): every partition at the member epoch
        for tp in (*value.assigned_partitions, *value.partitions_pending_revocation):
            if tp.assignment_epochs is not None and len(tp.assignment_epochs) == len(tp.partitions):
                epochs.update({(tp.topic_id, p): e for p, e in zip(tp.partitions, tp.assignment_epochs, strict=True)})
        self._set_member(member_id, base.replace(
            member_epoch=value.member_epoch, previous_member_epoch=value.previous_member_epoch, state=state,
            assigned=_assignment(value.assigned_partitions),
            pending_revocation=_assignment(value.partitions_pending_revocation), assignment_epochs=epochs))

    def _set_member(self, member_id: str, member: ConsumerGroupMember | None) -> None:
        """The one place members change: keeps partition owners and static ids in step."""
        old = self.members.pop(member_id, None)
        if old is not None:
            for owned in old.owned_partitions():
                if self.partition_epochs.get(owned) == old.member_epoch:
                    del self.partition_epochs[owned]
            if old.instance_id is not None and self.static_members.get(old.instance_id) == member_id:
                del self.static_members[old.instance_id]
        if member is None:
            return
        self.members[member_id] = member
        for owned in member.owned_partitions():
            self.partition_epochs[owned] = member.member_epoch
        if member.instance_id is not None:
            self.static_members[member.instance_id] = member_id


def _classic(metadata) -> dict:
    if metadata is None:
        return {"classic_session_timeout_ms": None, "classic_protocols": None}
    return {"classic_session_timeout_ms": metadata.session_timeout_ms,
            "classic_protocols": tuple((p.name, bytes(p.metadata)) for p in metadata.supported_protocols)}


def _assignment(topic_partitions) -> Assignment:
    return clean({tp.topic_id: set(tp.partitions) for tp in topic_partitions})


def topic_partitions(assignment: Assignment, struct) -> list:
    """An assignment as a list of ``struct(topic_id=..., partitions=[...])``, sorted for stable bytes."""
    return [struct(topic_id=topic_id, partitions=sorted(partitions))
            for topic_id, partitions in sorted(assignment.items()) if partitions]
