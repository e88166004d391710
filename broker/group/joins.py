"""How a JoinGroup enters a classic group (the group coordinator's ``join_group`` decides which group).

A member without an id gets one (``unknown``): told MEMBER_ID_REQUIRED to come back with it (JoinGroup
v4+, KIP-394; the id expires after its session timeout if it does not), or added at once; a static
member that comes back under a new id replaces its old self (KIP-345), without a rebalance when
nothing about the assignment changes. A member with an id (``known``) rejoins: in a rebalance its
new protocols are taken; in a completed one the current generation is answered, unless the leader
rejoins or the protocols changed, which starts a new rebalance. The answer is a future that the
rebalance (``rebalance.py``) completes.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import uuid
from typing import TYPE_CHECKING

from weir.protocol.errors import Errors, KafkaError

from .classic import ClassicGroup, GroupState, JoinResult, Member, SyncResult
from .rebalance import answer, resolve_join, resolve_sync

if TYPE_CHECKING:
    from .coordinator import GroupCoordinator

log = logging.getLogger(__name__)

S = GroupState
JoinAnswer = asyncio.Future[JoinResult]
_Settings = tuple[list[tuple[str, bytes]], int, int]  # a member's protocols, rebalance and session timeouts


class Joins:
    def __init__(self, groups: GroupCoordinator) -> None:
        self.groups = groups

    def unknown(self, group: ClassicGroup, joining: Member, require_known_member_id: bool) -> JoinAnswer:
        if len(group.members) + len(group.pending_members) >= self.groups.config["group.max.size"]:
            raise KafkaError(Errors.GROUP_MAX_SIZE_REACHED)
        joining.member_id = f"{joining.client_id}-{uuid.uuid4()}"
        old_id = group.static_member_id(joining.group_instance_id)
        if old_id is not None:
            return self._replace_static(group, old_id, joining)
        if joining.group_instance_id is None and require_known_member_id:
            # JoinGroup v4+: hand out the id and make the member come back with it (KIP-394)
            group.pending_members.add(joining.member_id)
            self.groups.clock.call_later(joining.session_timeout_ms / 1000,
                                         functools.partial(self._expire_pending, group, joining.member_id))
            return _done(JoinResult(Errors.MEMBER_ID_REQUIRED, member_id=joining.member_id))
        return self._add(group, joining)

    def known(self, group: ClassicGroup, joining: Member) -> JoinAnswer:
        if joining.member_id in group.pending_members:
            return self._add(group, joining)
        member = group.validate_member(joining.member_id, joining.group_instance_id)
        if group.is_in(S.PREPARING_REBALANCE):
            return self._update(group, member, joining, "member rejoined")
        if group.is_in(S.COMPLETING_REBALANCE):
            if member.matches(joining.protocols):
                return _done(group.current_generation(member))
            return self._update(group, member, joining, f"member {member.member_id} changed its protocols")
        if group.is_in(S.STABLE):
            if member.member_id != group.leader_id and member.matches(joining.protocols):
                return _done(group.current_generation(member))
            # the leader rejoining is how a consumer asks for a new assignment (e.g. new topics)
            return self._update(group, member, joining, f"member {member.member_id} rejoined")
        raise KafkaError(Errors.UNKNOWN_MEMBER_ID)

    def _add(self, group: ClassicGroup, member: Member) -> JoinAnswer:
        member.awaiting_join = future = _pending()
        group.add(member)
        self.groups.rebalance.schedule_session(group, member)
        if group.is_in(S.PREPARING_REBALANCE):
            group.new_member_added = True
        self.groups.rebalance.maybe_prepare(group, f"adding new member {member.member_id}")
        self.groups.rebalance.try_complete_join(group)
        return future

    def _update(self, group: ClassicGroup, member: Member, joining: Member, reason: str) -> JoinAnswer:
        # a second join for the same member (a retry on another connection) supersedes the first
        resolve_join(member, JoinResult(Errors.REBALANCE_IN_PROGRESS, member_id=member.member_id))
        member.protocols = joining.protocols
        member.rebalance_timeout_ms = joining.rebalance_timeout_ms
        member.session_timeout_ms = joining.session_timeout_ms
        member.awaiting_join = future = _pending()
        self.groups.rebalance.maybe_prepare(group, reason)
        self.groups.rebalance.try_complete_join(group)
        return future

    def _replace_static(self, group: ClassicGroup, old_id: str, joining: Member) -> JoinAnswer:
        """A static member came back with a new member id; the old id is fenced (KIP-345)."""
        old = group.members[old_id]
        resolve_join(old, JoinResult(Errors.FENCED_INSTANCE_ID, member_id=old_id))
        resolve_sync(old, SyncResult(Errors.FENCED_INSTANCE_ID))
        leader_before = group.leader_id
        previous = (old.protocols, old.rebalance_timeout_ms, old.session_timeout_ms)
        instance_id = joining.group_instance_id
        assert instance_id is not None, "only a static member is replaced"
        member = group.replace_static_member(instance_id, old_id, joining.member_id)
        member.protocols = joining.protocols
        member.rebalance_timeout_ms = joining.rebalance_timeout_ms
        member.session_timeout_ms = joining.session_timeout_ms
        self.groups.rebalance.schedule_session(group, member)
        if group.is_in(S.STABLE) and group.protocol_name == group.select_protocol():
            # nothing about the assignment changes: record the new id, answer with the current generation
            future = _pending()
            self.groups._spawn(self._store_replaced(group, member, old_id, previous, leader_before, future))
            return future
        member.awaiting_join = future = _pending()
        if group.is_in(S.PREPARING_REBALANCE):
            self.groups.rebalance.try_complete_join(group)
        else:
            self.groups.rebalance.maybe_prepare(group, f"static member {joining.group_instance_id} rejoined")
        return future

    async def _store_replaced(self, group: ClassicGroup, member: Member, old_id: str, previous: _Settings,
                             leader_before: str | None, future: JoinAnswer) -> None:
        generation = group.generation
        try:
            await self.groups._persist(group, {m.member_id: m.assignment for m in group.members.values()})
        except Exception as exc:
            if not isinstance(exc, KafkaError):  # a KafkaError is a failed append the disk layer logged
                log.exception("group %s: storing the replaced static member failed", group.group_id)
            if group.members.get(member.member_id) is member and member.group_instance_id is not None:
                group.replace_static_member(member.group_instance_id, member.member_id, old_id)
                member.protocols, member.rebalance_timeout_ms, member.session_timeout_ms = previous
            answer(future, JoinResult(exc.error if isinstance(exc, KafkaError) else Errors.UNKNOWN_SERVER_ERROR))
            return
        # the leader id is the one before the replacement, so a replaced leader acts as a follower
        # and syncs for the assignment it already has
        answer(future, JoinResult(Errors.NONE, member.member_id, generation, group.protocol_name,
                                  leader_before or ""))

    def _expire_pending(self, group: ClassicGroup, member_id: str) -> None:
        if member_id in group.pending_members:
            group.pending_members.discard(member_id)
            self.groups.rebalance.try_complete_join(group)


def _pending() -> JoinAnswer:
    return asyncio.get_running_loop().create_future()


def _done(result: JoinResult) -> JoinAnswer:
    future = _pending()
    future.set_result(result)
    return future
