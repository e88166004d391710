"""Moving a streams group member towards its target: active, standby and warm-up tasks, by the rules
of Kafka 4.4's streams ``CurrentAssignmentBuilder``.

Each kind is compared with the target: tasks kept, tasks to revoke, tasks to add. A task to add
is held back while it is unreleased: an active task while any member still holds it active, or
another member of this member's process holds it as a standby or warm-up; a standby while another
member of the process runs it active, or the process already holds it as a standby, or another
member of the process warms it up; a warm-up while the process runs it active or already warms it
up, or another member of the process holds it as a standby. Roles change in place: an active
task the target makes a standby is one at once, and a standby the target makes a warm-up (or the
reverse) too. A standby or warm-up the target makes active stays one until the active task is
granted. While the member still owns any task it must give up (its heartbeat's owned tasks; none
reported counts as owning), it stays at its epoch, told to revoke (UNREVOKED); then it moves to the
target's epoch with what it may have, waiting (UNRELEASED) for what is held back.
"""

from __future__ import annotations

from collections.abc import Mapping, Set as AbstractSet

from ..consumer.member import MemberState
from ..consumer.reconcile import held_epochs
from .assignor import Tasks
from .group import StreamsGroup, StreamsMember

Owned = tuple[Tasks, Tasks, Tasks]  # active, standby, warm-up as the member's heartbeat reported them
_Work = dict[str, set[int]]


def _has(tasks: Mapping[str, AbstractSet[int]], subtopology_id: str, partition: int) -> bool:
    return partition in tasks.get(subtopology_id, ())


def _frozen(tasks: Mapping[str, AbstractSet[int]]) -> Tasks:
    return {s: frozenset(p) for s, p in sorted(tasks.items()) if p}


class _Holders:
    """Which processes hold each task now, by every member's assigned and pending-revocation tasks."""

    def __init__(self, group: StreamsGroup):
        self.active: dict[tuple[str, int], str] = {}
        self.standby: dict[tuple[str, int], set[str]] = {}
        self.warmup: dict[tuple[str, int], set[str]] = {}
        for m in group.members.values():
            for tasks in (m.assigned, m.pending_revocation):
                for s, parts in tasks.items():
                    for p in parts:
                        self.active[(s, p)] = m.process_id
            for kind, sets in ((self.standby, (m.standby, m.standby_pending_revocation)),
                               (self.warmup, (m.warmup, m.warmup_pending_revocation))):
                for tasks in sets:
                    for s, parts in tasks.items():
                        for p in parts:
                            kind.setdefault((s, p), set()).add(m.process_id)


def reconcile(group: StreamsGroup, member: StreamsMember, target_epoch: int,
              target: tuple[Tasks, Tasks, Tasks], owned: Owned | None) -> StreamsMember:
    """The member's next state; ``owned`` None when its heartbeat did not report its tasks."""
    if member.state == MemberState.STABLE:
        if member.member_epoch == target_epoch:
            return member
        return _next(group, member, member.member_epoch, target_epoch, target, owned)
    if member.state == MemberState.UNREVOKED_PARTITIONS:
        pending = (member.pending_revocation, member.standby_pending_revocation, member.warmup_pending_revocation)
        if _still_owns(owned, pending):
            return member
        return _next(group, member, member.member_epoch + 1, target_epoch, target, owned)
    return _next(group, member, member.member_epoch, target_epoch, target, owned)


def _still_owns(owned: Owned | None, tasks: tuple[Mapping[str, AbstractSet[int]], ...]) -> bool:
    if owned is None:
        return True
    return any(parts & mine.get(s, frozenset()) for kind, mine in zip(tasks, owned, strict=True)
               for s, parts in kind.items())


def _difference(current: Mapping[str, AbstractSet[int]], wanted: Mapping[str, AbstractSet[int]],
                unreleased) -> tuple[_Work, _Work, _Work, bool]:
    kept: _Work = {}
    revoking: _Work = {}
    adding: _Work = {}
    held_back = False
    for s in set(current) | set(wanted):
        now, want = set(current.get(s, ())), set(wanted.get(s, ()))
        kept[s], revoking[s] = now & want, now - want
        adding[s] = set()
        for p in want - now:
            if unreleased(s, p):
                held_back = True
            else:
                adding[s].add(p)
    return kept, revoking, adding, held_back


def _move(s: str, p: int, source: _Work, destination: _Work) -> None:
    source.get(s, set()).discard(p)
    destination.setdefault(s, set()).add(p)


def _next(group: StreamsGroup, member: StreamsMember, member_epoch: int, target_epoch: int,
          target: tuple[Tasks, Tasks, Tasks], owned: Owned | None) -> StreamsMember:
    holders = _Holders(group)
    process = member.process_id

    def on_process_by_other(kind: dict[tuple[str, int], set[str]], own: Tasks, s: str, p: int) -> bool:
        return process in kind.get((s, p), ()) and not _has(own, s, p)

    def active_unreleased(s: str, p: int) -> bool:
        return ((s, p) in holders.active or on_process_by_other(holders.standby, member.standby, s, p)
                or on_process_by_other(holders.warmup, member.warmup, s, p))

    def standby_unreleased(s: str, p: int) -> bool:
        run_by_other = holders.active.get((s, p)) == process and not _has(member.assigned, s, p)
        return (run_by_other or process in holders.standby.get((s, p), ())
                or on_process_by_other(holders.warmup, member.warmup, s, p))

    def warmup_unreleased(s: str, p: int) -> bool:
        return (holders.active.get((s, p)) == process or on_process_by_other(holders.standby, member.standby, s, p)
                or process in holders.warmup.get((s, p), ()))

    active, revoke_active, add_active, held_a = _difference(member.assigned, target[0], active_unreleased)
    standby, revoke_standby, add_standby, held_s = _difference(member.standby, target[1], standby_unreleased)
    warmup, revoke_warmup, add_warmup, held_w = _difference(member.warmup, target[2], warmup_unreleased)
    for s, parts in member.assigned.items():  # an active task become a standby: one at once
        for p in parts:
            if _has(add_standby, s, p):
                _move(s, p, add_standby, standby)
    for own, revoking, adding, granted in ((member.standby, revoke_standby, add_warmup, warmup),
                                           (member.warmup, revoke_warmup, add_standby, standby)):
        for s, parts in own.items():  # a standby become a warm-up, or the reverse: at once
            for p in parts:
                if _has(adding, s, p):
                    _move(s, p, adding, granted)
                    revoking.get(s, set()).discard(p)
    for own, revoking in ((member.standby, revoke_standby), (member.warmup, revoke_warmup)):
        for s, parts in own.items():  # promoted to active: not revoked
            for p in parts:
                if _has(target[0], s, p):
                    revoking.get(s, set()).discard(p)
    revoking_all = (_frozen(revoke_active), _frozen(revoke_standby), _frozen(revoke_warmup))
    must_revoke = any(revoking_all) and _still_owns(owned, revoking_all)
    for own, kept in ((member.standby, standby), (member.warmup, warmup)):
        for s, parts in own.items():  # a promoted standby or warm-up stays one until the active is granted
            for p in parts:
                if _has(target[0], s, p) and (must_revoke or not _has(add_active, s, p)):
                    kept.setdefault(s, set()).add(p)
    held_back = held_a or held_s or held_w
    if must_revoke:
        kept_active = _frozen(active)
        return member.replace(
            state=MemberState.UNREVOKED_PARTITIONS, member_epoch=member_epoch,
            previous_member_epoch=member.member_epoch, assigned=kept_active, standby=_frozen(standby),
            warmup=_frozen(warmup), pending_revocation=revoking_all[0], standby_pending_revocation=revoking_all[1],
            warmup_pending_revocation=revoking_all[2],
            assignment_epochs=held_epochs(member, kept_active, revoking_all[0], target_epoch))
    state = MemberState.UNRELEASED_PARTITIONS if held_back else MemberState.STABLE
    for kept, adding in ((active, add_active), (standby, add_standby), (warmup, add_warmup)):
        for subtopology_id, granted_now in adding.items():
            kept.setdefault(subtopology_id, set()).update(granted_now)
    assigned = _frozen(active)
    return member.replace(
        state=state, member_epoch=target_epoch, previous_member_epoch=member.member_epoch, assigned=assigned,
        standby=_frozen(standby), warmup=_frozen(warmup), pending_revocation={}, standby_pending_revocation={},
        warmup_pending_revocation={}, assignment_epochs=held_epochs(member, assigned, {}, target_epoch))

