"""The group coordinator: Kafka's classic group protocol on one node.

JoinGroup answers are parked until the rebalance completes (every member has
rejoined, or the rebalance timeout passes); SyncGroup answers until the leader
sends the assignment and it is stored. Session, rebalance, initial-delay and
pending-sync deadlines are timers on the injected clock. A group's metadata
(generation, protocol, leader, members with subscription and assignment) is a
GroupMetadata record in ``__consumer_offsets`` written when a generation's
assignment is stored, when a group becomes empty, and when a static member
is replaced; start-up replays it, as Kafka does, into a Stable group whose
members must heartbeat within their session timeout.

Live changes are applied after their record is written; unlike the
transaction coordinator they are not re-derived from the record, because a
group's live state (parked answers, timers) is more than the record holds.

The module is longer than most (~500 lines) because the four membership APIs
share one set of timers and parked answers; record encoding lives in
``storage.py``, the admin APIs in ``admin.py``.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import uuid

from protocol.errors import Errors, KafkaError

from ..coordinator import records
from . import storage
from .classic import ClassicGroup, GroupState, JoinResult, Member, SyncResult
from .offsets import validate_group_id

log = logging.getLogger(__name__)

S = GroupState


class GroupCoordinator:
    def __init__(self, context):
        self.context = context
        self.config = context.config
        self.clock = context.clock
        self.offsets = context.offsets
        self.log = self.offsets.log
        self.groups: dict[str, ClassicGroup] = {}
        self._tasks: set[asyncio.Task] = set()

    # ------------------------------------------------------------------ load and persistence

    def load(self) -> None:
        """Replay ``__consumer_offsets``: offsets, transactional offsets and group metadata."""
        count = 0
        for entry in self.log.replay():
            if entry.marker_commit is not None:
                self.offsets.complete_txn(entry.partition, entry.header.producer_id, entry.marker_commit,
                                          entry.offset)
                continue
            if records.RecordKeyVersion.parse(entry.key[:2]) == records.GROUP_METADATA_KEY_VERSION:
                self._replay_group(records.GroupMetadataKey.parse(entry.key).group, entry.value)
            else:
                producer_id = entry.header.producer_id if entry.header.is_transactional else None
                group_id = self.offsets.replay(entry.offset, entry.key, entry.value, producer_id)
                if group_id is not None:
                    self._group(group_id, create=True)  # offsets alone make a ("simple") group
            count += 1
        if count:
            log.info("group coordinator: replayed %d record(s), %d group(s)", count, len(self.groups))

    def _replay_group(self, group_id: str, value: bytes | None) -> None:
        group = storage.group_from_record(group_id, value, self.clock.now_ms())
        if group is None:
            self.groups.pop(group_id, None)
        else:
            self.groups[group_id] = group

    async def _persist(self, group: ClassicGroup, assignments: dict[str, bytes]) -> None:
        key, value = storage.group_record(group, assignments)
        await self.log.append(self.log.partition_for(group.group_id), [(key, value)], self.clock.now_ms())

    def start(self) -> None:
        """Members replayed from the log must heartbeat within their session timeout."""
        for group in self.groups.values():
            for member in group.members.values():
                self._schedule_session(group, member)

    async def close(self) -> None:
        for group in self.groups.values():
            for timer in (group.join_timer, group.sync_timer, *(m.session_timer for m in group.members.values())):
                if timer is not None:
                    timer.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    def _spawn(self, coroutine) -> None:
        task = asyncio.get_running_loop().create_task(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # ------------------------------------------------------------------ lookup

    def _group(self, group_id: str, *, create: bool = False) -> ClassicGroup | None:
        group = self.groups.get(group_id)
        if group is None and create:
            group = self.groups[group_id] = ClassicGroup(group_id, self.clock.now_ms())
        return group

    # ------------------------------------------------------------------ JoinGroup

    async def join_group(self, group_id: str, member_id: str, instance_id: str | None, protocol_type: str,
                         protocols: list[tuple[str, bytes]], session_timeout_ms: int, rebalance_timeout_ms: int,
                         client_id: str, client_host: str, require_known_member_id: bool) -> JoinResult:
        try:
            validate_group_id(group_id)
            if not (self.config["group.min.session.timeout.ms"] <= session_timeout_ms
                    <= self.config["group.max.session.timeout.ms"]):
                raise KafkaError(Errors.INVALID_SESSION_TIMEOUT,
                                 f"session timeout {session_timeout_ms} ms is outside the broker's bounds")
            group = self._group(group_id, create=not member_id)
            if group is None:
                raise KafkaError(Errors.UNKNOWN_MEMBER_ID, f"group {group_id} has no member {member_id}")
            if group.is_in(S.DEAD):
                raise KafkaError(Errors.COORDINATOR_NOT_AVAILABLE)
            if not group.supports(protocol_type, protocols):
                raise KafkaError(Errors.INCONSISTENT_GROUP_PROTOCOL)
            member = Member(member_id, instance_id, client_id, client_host, rebalance_timeout_ms,
                            session_timeout_ms, protocol_type, protocols)
            if member_id:
                future = self._join_known(group, member)
            else:
                future = self._join_unknown(group, member, require_known_member_id)
        except KafkaError as exc:
            return JoinResult(exc.error, member_id=member_id)
        return await future

    def _join_unknown(self, group: ClassicGroup, joining: Member, require_known_member_id: bool):
        if len(group.members) + len(group.pending_members) >= self.config["group.max.size"]:
            raise KafkaError(Errors.GROUP_MAX_SIZE_REACHED)
        joining.member_id = f"{joining.client_id}-{uuid.uuid4()}"
        old_id = group.static_member_id(joining.group_instance_id)
        if old_id is not None:
            return self._replace_static_member(group, old_id, joining)
        if joining.group_instance_id is None and require_known_member_id:
            # JoinGroup v4+: hand out the id and make the member come back with it (KIP-394)
            group.pending_members.add(joining.member_id)
            self.clock.call_later(joining.session_timeout_ms / 1000,
                                  functools.partial(self._expire_pending, group, joining.member_id))
            return _done(JoinResult(Errors.MEMBER_ID_REQUIRED, member_id=joining.member_id))
        return self._add_member(group, joining)

    def _join_known(self, group: ClassicGroup, joining: Member):
        if joining.member_id in group.pending_members:
            return self._add_member(group, joining)
        member = group.validate_member(joining.member_id, joining.group_instance_id)
        if group.is_in(S.PREPARING_REBALANCE):
            return self._update_member(group, member, joining, "member rejoined")
        if group.is_in(S.COMPLETING_REBALANCE):
            if member.matches(joining.protocols):
                return _done(self._current_generation(group, member))
            return self._update_member(group, member, joining, f"member {member.member_id} changed its protocols")
        if group.is_in(S.STABLE):
            if member.member_id != group.leader_id and member.matches(joining.protocols):
                return _done(self._current_generation(group, member))
            # the leader rejoining is how a consumer asks for a new assignment (e.g. new topics)
            return self._update_member(group, member, joining, f"member {member.member_id} rejoined")
        raise KafkaError(Errors.UNKNOWN_MEMBER_ID)

    def _add_member(self, group: ClassicGroup, member: Member):
        member.is_new = True
        member.awaiting_join = future = asyncio.get_running_loop().create_future()
        group.add(member)
        self._schedule_session(group, member)
        if group.is_in(S.PREPARING_REBALANCE):
            group.new_member_added = True
        self._maybe_prepare_rebalance(group, f"adding new member {member.member_id}")
        self._try_complete_join(group)
        return future

    def _update_member(self, group: ClassicGroup, member: Member, joining: Member, reason: str):
        # a second join for the same member (a retry on another connection) supersedes the first
        _answer_join(member, JoinResult(Errors.REBALANCE_IN_PROGRESS, member_id=member.member_id))
        member.protocols = joining.protocols
        member.rebalance_timeout_ms = joining.rebalance_timeout_ms
        member.session_timeout_ms = joining.session_timeout_ms
        member.awaiting_join = future = asyncio.get_running_loop().create_future()
        self._maybe_prepare_rebalance(group, reason)
        self._try_complete_join(group)
        return future

    def _replace_static_member(self, group: ClassicGroup, old_id: str, joining: Member):
        """A static member came back with a new member id; the old id is fenced (KIP-345)."""
        old = group.members[old_id]
        _answer_join(old, JoinResult(Errors.FENCED_INSTANCE_ID, member_id=old_id))
        _answer_sync(old, SyncResult(Errors.FENCED_INSTANCE_ID))
        leader_before = group.leader_id
        previous = (old.protocols, old.rebalance_timeout_ms, old.session_timeout_ms)
        member = group.replace_static_member(joining.group_instance_id, old_id, joining.member_id)
        member.protocols = joining.protocols
        member.rebalance_timeout_ms = joining.rebalance_timeout_ms
        member.session_timeout_ms = joining.session_timeout_ms
        self._schedule_session(group, member)
        if group.is_in(S.STABLE) and group.protocol_name == group.select_protocol():
            # nothing about the assignment changes: record the new id, answer with the current generation
            future = asyncio.get_running_loop().create_future()
            self._spawn(self._store_replaced_member(group, member, old_id, previous, leader_before, future))
            return future
        member.awaiting_join = future = asyncio.get_running_loop().create_future()
        if group.is_in(S.PREPARING_REBALANCE):
            self._try_complete_join(group)
        else:
            self._maybe_prepare_rebalance(group, f"static member {joining.group_instance_id} rejoined")
        return future

    async def _store_replaced_member(self, group, member, old_id, previous, leader_before, future) -> None:
        generation = group.generation
        try:
            await self._persist(group, {m.member_id: m.assignment for m in group.members.values()})
        except Exception:
            log.exception("group %s: storing the replaced static member failed", group.group_id)
            if group.members.get(member.member_id) is member:
                group.replace_static_member(member.group_instance_id, member.member_id, old_id)
                member.protocols, member.rebalance_timeout_ms, member.session_timeout_ms = previous
            future.set_result(JoinResult(Errors.UNKNOWN_SERVER_ERROR))
            return
        # the leader id is the one before the replacement, so a replaced leader acts as a follower
        # and syncs for the assignment it already has
        future.set_result(JoinResult(Errors.NONE, member.member_id, generation, group.protocol_name,
                                     leader_before or ""))

    def _expire_pending(self, group: ClassicGroup, member_id: str) -> None:
        if member_id in group.pending_members:
            group.pending_members.discard(member_id)
            self._try_complete_join(group)

    @staticmethod
    def _current_generation(group: ClassicGroup, member: Member) -> JoinResult:
        is_leader = member.member_id == group.leader_id
        return JoinResult(Errors.NONE, member.member_id, group.generation, group.protocol_name,
                          group.leader_id or "", group.member_metadata() if is_leader else [])

    # ------------------------------------------------------------------ rebalance

    def _maybe_prepare_rebalance(self, group: ClassicGroup, reason: str) -> None:
        if group.is_in(S.STABLE, S.COMPLETING_REBALANCE, S.EMPTY):
            self._prepare_rebalance(group, reason)

    def _prepare_rebalance(self, group: ClassicGroup, reason: str) -> None:
        if group.is_in(S.COMPLETING_REBALANCE):
            for member in group.members.values():
                member.assignment = b""
                self._answer_sync(group, member, SyncResult(Errors.REBALANCE_IN_PROGRESS))
        _cancel(group.sync_timer)
        _cancel(group.join_timer)
        group.pending_sync.clear()
        was_empty = group.is_in(S.EMPTY)
        log.info("group %s: preparing to rebalance in state %s with old generation %d (%s)",
                 group.group_id, group.state.value, group.generation, reason)
        group.transition_to(S.PREPARING_REBALANCE, self.clock.now_ms())
        if was_empty:
            # the first rebalance of an empty group waits a little for more members to arrive
            delay = self.config["group.initial.rebalance.delay.ms"]
            group.initial_join = True
            group.new_member_added = False
            self._initial_join_timer(group, delay, max(group.rebalance_timeout_ms() - delay, 0))
        else:
            group.initial_join = False
            group.join_timer = self.clock.call_later(group.rebalance_timeout_ms() / 1000,
                                                     functools.partial(self._complete_join, group))

    def _initial_join_timer(self, group: ClassicGroup, delay_ms: int, remaining_ms: int) -> None:
        def expired():
            if group.new_member_added and remaining_ms > 0:
                group.new_member_added = False
                step = min(self.config["group.initial.rebalance.delay.ms"], remaining_ms)
                self._initial_join_timer(group, step, remaining_ms - step)
            else:
                self._complete_join(group)
        group.join_timer = self.clock.call_later(delay_ms / 1000, expired)

    def _try_complete_join(self, group: ClassicGroup) -> None:
        if group.is_in(S.PREPARING_REBALANCE) and not group.initial_join and group.all_members_joined():
            self._complete_join(group)

    def _complete_join(self, group: ClassicGroup) -> None:
        if not group.is_in(S.PREPARING_REBALANCE):
            return
        _cancel(group.join_timer)
        group.join_timer = None
        for member in [m for m in group.members.values() if m.awaiting_join is None]:
            if member.group_instance_id is None:  # a static member keeps its place until its session ends
                log.info("group %s: member %s did not rejoin in time", group.group_id, member.member_id)
                _cancel(member.session_timer)
                group.remove(member.member_id)
        now = self.clock.now_ms()
        if not group.members:
            group.generation += 1
            group.protocol_name = None
            group.leader_id = None
            group.transition_to(S.EMPTY, now)
            log.info("group %s: generation %d is empty", group.group_id, group.generation)
            self._spawn(self._persist_logged(group))
            return
        joined = [m for m in group.members.values() if m.awaiting_join is not None]
        if not joined:
            # only static members that have not come back: wait for them or for their sessions to end
            group.join_timer = self.clock.call_later(group.rebalance_timeout_ms() / 1000,
                                                     functools.partial(self._complete_join, group))
            return
        if group.members.get(group.leader_id) not in joined:
            group.leader_id = joined[0].member_id
        group.generation += 1
        group.protocol_name = group.select_protocol()
        group.transition_to(S.COMPLETING_REBALANCE, now)
        group.pending_sync = set(group.members)
        generation = group.generation
        group.sync_timer = self.clock.call_later(group.rebalance_timeout_ms() / 1000,
                                                 functools.partial(self._expire_pending_sync, group, generation))
        log.info("group %s: generation %d with %d member(s), protocol %s, leader %s", group.group_id,
                 generation, len(group.members), group.protocol_name, group.leader_id)
        for member in joined:
            future, member.awaiting_join, member.is_new = member.awaiting_join, None, False
            future.set_result(self._current_generation(group, member))
            self._schedule_session(group, member)

    async def _persist_logged(self, group: ClassicGroup) -> None:
        try:
            await self._persist(group, {})
        except Exception:
            log.exception("group %s: storing group metadata failed", group.group_id)

    def _expire_pending_sync(self, group: ClassicGroup, generation: int) -> None:
        if group.generation != generation or not group.is_in(S.COMPLETING_REBALANCE, S.STABLE):
            return
        late = sorted(group.pending_sync)
        if not late:
            return
        for member_id in late:
            member = group.remove(member_id)
            if member is not None:
                _cancel(member.session_timer)
                _answer_join(member, JoinResult(Errors.UNKNOWN_MEMBER_ID))
        self._prepare_rebalance(group, f"no SyncGroup from {', '.join(late)} in time")
        self._try_complete_join(group)

    # ------------------------------------------------------------------ SyncGroup

    async def sync_group(self, group_id: str, generation: int, member_id: str, instance_id: str | None,
                         assignments: dict[str, bytes]) -> SyncResult:
        try:
            group = self._live_group(group_id)
            member = group.validate_member(member_id, instance_id)
            if generation != group.generation:
                raise KafkaError(Errors.ILLEGAL_GENERATION)
            if group.is_in(S.EMPTY):
                raise KafkaError(Errors.UNKNOWN_MEMBER_ID)
            if group.is_in(S.PREPARING_REBALANCE):
                raise KafkaError(Errors.REBALANCE_IN_PROGRESS)
        except KafkaError as exc:
            return SyncResult(exc.error)
        self._synced(group, member)
        if group.is_in(S.STABLE):
            return SyncResult(Errors.NONE, member.assignment)
        _answer_sync(member, SyncResult(Errors.REBALANCE_IN_PROGRESS))  # superseded by this one
        member.awaiting_sync = future = asyncio.get_running_loop().create_future()
        if member_id == group.leader_id:
            self._spawn(self._store_assignment(group, assignments))
        return await future

    def _answer_sync(self, group: ClassicGroup, member: Member, result: SyncResult) -> None:
        if member.awaiting_sync is not None:
            _answer_sync(member, result)
            self._schedule_session(group, member)  # it was alive while it waited

    def _synced(self, group: ClassicGroup, member: Member) -> None:
        group.pending_sync.discard(member.member_id)
        if not group.pending_sync:
            _cancel(group.sync_timer)
        self._schedule_session(group, member)

    async def _store_assignment(self, group: ClassicGroup, assignments: dict[str, bytes]) -> None:
        generation = group.generation
        error = Errors.NONE
        try:
            await self._persist(group, assignments)
        except Exception:
            log.exception("group %s: storing the assignment of generation %d failed", group.group_id, generation)
            error = Errors.COORDINATOR_NOT_AVAILABLE
        if not group.is_in(S.COMPLETING_REBALANCE) or group.generation != generation:
            return  # a rebalance started meanwhile; its answers went out already
        if error != Errors.NONE:
            for member in group.members.values():
                self._answer_sync(group, member, SyncResult(error))
            self._prepare_rebalance(group, "storing the assignment failed")
            return
        for member in group.members.values():
            member.assignment = assignments.get(member.member_id, b"")
            self._answer_sync(group, member, SyncResult(Errors.NONE, member.assignment))
        group.transition_to(S.STABLE, self.clock.now_ms())

    # ------------------------------------------------------------------ Heartbeat and LeaveGroup

    def heartbeat(self, group_id: str, generation: int, member_id: str, instance_id: str | None) -> Errors:
        try:
            group = self._live_group(group_id)
            member = group.validate_member(member_id, instance_id)
            if generation != group.generation:
                raise KafkaError(Errors.ILLEGAL_GENERATION)
        except KafkaError as exc:
            return exc.error
        self._schedule_session(group, member)
        return Errors.REBALANCE_IN_PROGRESS if group.is_in(S.PREPARING_REBALANCE) else Errors.NONE

    def leave_group(self, group_id: str, leaving: list[tuple[str, str | None]]) -> list[Errors]:
        """One error per (member id, group instance id) leaving; a missing group: UNKNOWN_MEMBER_ID each."""
        group = self._group(group_id)
        if group is None:
            return [Errors.UNKNOWN_MEMBER_ID] * len(leaving)
        if group.is_in(S.DEAD):
            raise KafkaError(Errors.COORDINATOR_NOT_AVAILABLE)
        return [self._leave(group, member_id, instance_id) for member_id, instance_id in leaving]

    def _leave(self, group: ClassicGroup, member_id: str, instance_id: str | None) -> Errors:
        if instance_id is not None:
            known = group.static_member_id(instance_id)
            if known is None:
                return Errors.UNKNOWN_MEMBER_ID
            if member_id and member_id != known:
                return Errors.FENCED_INSTANCE_ID
            member_id = known
        elif member_id in group.pending_members:
            group.pending_members.discard(member_id)
            self._try_complete_join(group)
            return Errors.NONE
        member = group.members.get(member_id)
        if member is None:
            return Errors.UNKNOWN_MEMBER_ID
        self.remove_member(group, member, f"member {member_id} left the group")
        return Errors.NONE

    def remove_member(self, group: ClassicGroup, member: Member, reason: str) -> None:
        _answer_join(member, JoinResult(Errors.UNKNOWN_MEMBER_ID))
        _answer_sync(member, SyncResult(Errors.UNKNOWN_MEMBER_ID))
        _cancel(member.session_timer)
        group.remove(member.member_id)
        if group.is_in(S.STABLE, S.COMPLETING_REBALANCE):
            self._prepare_rebalance(group, reason)
        self._try_complete_join(group)

    def _schedule_session(self, group: ClassicGroup, member: Member) -> None:
        _cancel(member.session_timer)
        member.session_timer = self.clock.call_later(
            member.session_timeout_ms / 1000, functools.partial(self._session_expired, group, member))

    def _session_expired(self, group: ClassicGroup, member: Member) -> None:
        if group.members.get(member.member_id) is not member:
            return
        if member.awaiting_join is not None or member.awaiting_sync is not None:
            # a parked request counts as a heartbeat; the rebalance and sync deadlines bound the wait
            self._schedule_session(group, member)
            return
        log.info("group %s: member %s missed its session timeout (%d ms)", group.group_id, member.member_id,
                 member.session_timeout_ms)
        self.remove_member(group, member, f"member {member.member_id} session expired")

    def _live_group(self, group_id: str) -> ClassicGroup:
        group = self._group(group_id)
        if group is None:
            raise KafkaError(Errors.UNKNOWN_MEMBER_ID, f"unknown group {group_id}")
        if group.is_in(S.DEAD):
            raise KafkaError(Errors.COORDINATOR_NOT_AVAILABLE)
        return group

    # ------------------------------------------------------------------ offset commits

    def validate_offset_commit(self, group_id: str, member_id: str, instance_id: str | None, generation: int,
                               transactional: bool) -> None:
        """Who may commit: a member of the current generation, or anyone while the group is empty."""
        validate_group_id(group_id)
        group = self._group(group_id)
        if group is None:
            if generation >= 0:
                raise KafkaError(Errors.ILLEGAL_GENERATION, f"group {group_id} has no generation {generation}")
            self._group(group_id, create=True)
            return
        group.validate_offset_commit(member_id, instance_id, generation, transactional)
        member = group.members.get(member_id)
        if member is not None and not transactional and group.is_in(S.STABLE):
            self._schedule_session(group, member)  # a commit shows the member is alive


def _done(result) -> asyncio.Future:
    future = asyncio.get_running_loop().create_future()
    future.set_result(result)
    return future


def _answer_join(member: Member, result: JoinResult) -> None:
    if member.awaiting_join is not None:
        if not member.awaiting_join.done():
            member.awaiting_join.set_result(result)
        member.awaiting_join = None


def _answer_sync(member: Member, result: SyncResult) -> None:
    if member.awaiting_sync is not None:
        if not member.awaiting_sync.done():
            member.awaiting_sync.set_result(result)
        member.awaiting_sync = None


def _cancel(timer) -> None:
    if timer is not None:
        timer.cancel()
