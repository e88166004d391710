"""Moving a member from its current assignment towards its target, one safe step at a time.

Kafka's ``CurrentAssignmentBuilder``. A member gives up partitions first: while it still owns
partitions that are no longer its own, it stays at its epoch in UNREVOKED_PARTITIONS and is told to
revoke them. Once its heartbeat shows they are gone, it moves to the target epoch. A partition in
its target that another member still owns (revoking it) is held back: the member waits in
UNRELEASED_PARTITIONS and receives it in a later heartbeat, after the owner released it. So no
partition is ever owned by two members at once.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Set as AbstractSet
from typing import Any, Protocol, TypeVar

from .member import MemberState, clean


class Reconcilable(Protocol):
    """A consumer group's member: partitions by topic id (a streams group's member has its own
    reconciliation, ``streams/reconcile.py``, for its three kinds of tasks)."""

    @property
    def member_id(self) -> str: ...
    @property
    def state(self) -> MemberState: ...
    @property
    def member_epoch(self) -> int: ...
    @property
    def assigned(self) -> Mapping[Any, AbstractSet[int]]: ...
    @property
    def pending_revocation(self) -> Mapping[Any, AbstractSet[int]]: ...
    def assigned_at(self, topic_id: Any, partition: int, /) -> int | None: ...
    def replace(self, **changes: Any) -> Any: ...


M = TypeVar("M", bound=Reconcilable)
Assignment = Mapping[Any, AbstractSet[int]]


def reconcile(member: M, target_epoch: int, target: Assignment,
              partition_epoch: Callable[[Any, int], int], owned: Assignment | None) -> M:
    """The member's next state; ``owned`` is what its heartbeat reported (None: not reported).
    ``partition_epoch`` gives the epoch of a partition's current owner, -1 when free."""
    if member.state == MemberState.STABLE:
        if member.member_epoch == target_epoch:
            return member
        return _next_assignment(member, member.member_epoch, member.assigned, target_epoch, target,
                                partition_epoch, owned)
    if member.state == MemberState.UNREVOKED_PARTITIONS:
        if _still_owns(owned, member.pending_revocation):
            return member
        # all revoked: the member may move on, towards the latest target
        return _next_assignment(member, member.member_epoch, member.assigned, target_epoch, target,
                                partition_epoch, owned)
    if member.state == MemberState.UNRELEASED_PARTITIONS:
        return _next_assignment(member, member.member_epoch, member.assigned, target_epoch, target,
                                partition_epoch, owned)
    raise ValueError(f"member {member.member_id} in state {member.state!r}")


def _next_assignment(member: M, member_epoch, current: Assignment, target_epoch, target: Assignment,
                     partition_epoch, owned) -> M:
    assigned: dict[Any, set[int]] = {}
    revoking: dict[Any, set[int]] = {}
    unreleased = False
    for topic_id in set(current) | set(target):
        now = current.get(topic_id, frozenset())
        wanted = target.get(topic_id, frozenset())
        keep = set(now & wanted)
        revoking[topic_id] = set(now - wanted)
        for partition in wanted - now:
            if partition_epoch(topic_id, partition) == -1:
                keep.add(partition)
            else:
                unreleased = True
        assigned[topic_id] = keep
    revoked = clean(revoking)
    if revoked and _still_owns(owned, revoked):
        # revoke first, at the current epoch; new partitions come after the revocation is acknowledged
        kept = clean({t: current.get(t, frozenset()) & p for t, p in assigned.items()})
        return member.replace(state=MemberState.UNREVOKED_PARTITIONS, member_epoch=member_epoch,
                              previous_member_epoch=member.member_epoch, assigned=kept, pending_revocation=revoked,
                              assignment_epochs=held_epochs(member, kept, revoked, target_epoch))
    state = MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE
    settled = clean(assigned)
    return member.replace(state=state, previous_member_epoch=member.member_epoch, member_epoch=target_epoch,
                          assigned=settled, pending_revocation={},
                          assignment_epochs=held_epochs(member, settled, {}, target_epoch))


def held_epochs(member, assigned: Assignment, revoking: Assignment, new_epoch: int) -> dict[tuple[Any, int], int]:
    """Partitions (a streams member's tasks: subtopology, partition) the member held keep the epoch they
    were given at (its ``assigned_at``); new ones get ``new_epoch``."""
    epochs = {}
    for assignment in (assigned, revoking):
        for topic_id, partitions in assignment.items():
            for partition in partitions:
                held_since = member.assigned_at(topic_id, partition)
                epochs[(topic_id, partition)] = new_epoch if held_since is None else held_since
    return epochs


def _still_owns(owned: Assignment | None, partitions: Assignment) -> bool:
    """Does the member (by its report; not reported: assume so) still own any of ``partitions``?"""
    if owned is None:
        return True
    return any(partitions_of & owned.get(topic_id, frozenset()) for topic_id, partitions_of in partitions.items())
