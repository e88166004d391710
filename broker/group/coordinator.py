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

How a JoinGroup enters a group is ``joins.py``'s; rebalances and their deadlines run in
``rebalance.py``, record encoding in ``storage.py``, the admin APIs in ``admin.py``; classic
members of consumer groups in ``consumer/classic_members.py``, conversions between the two kinds
in ``migration.py``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine, Iterable
from typing import TYPE_CHECKING, Any

from weir.protocol.errors import Errors, KafkaError

from ..coordinator import records
from . import storage
from .consumer import records as consumer_records
from .consumer.coordinator import ConsumerGroupCoordinator
from .share import records as share_records
from .share.coordinator import ShareGroupCoordinator
from .streams import records as streams_records
from .streams.coordinator import StreamsGroupCoordinator
from .migration import Migration
from .classic import ClassicGroup, GroupState, JoinResult, Member, SyncResult
from .joins import Joins
from .offsets import validate_group_id
from .rebalance import Rebalancer, resolve_sync

if TYPE_CHECKING:
    from ..context import BrokerContext

log = logging.getLogger(__name__)

S = GroupState


class GroupCoordinator:
    def __init__(self, context: BrokerContext) -> None:
        self.context = context
        self.config = context.config
        self.clock = context.clock
        self.offsets = context.offsets
        self.log = self.offsets.log
        self.groups: dict[str, ClassicGroup] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self.rebalance = Rebalancer(self.clock, self.config, self._persist, self._spawn)
        self.consumer = ConsumerGroupCoordinator(context, self.log)  # KIP-848 groups, same topic
        self.migration = Migration(self)  # classic <-> consumer conversions
        self.joins = Joins(self)  # how a JoinGroup enters a classic group
        self.consumer.on_member_removed = self.migration.maybe_downgrade
        self.share = ShareGroupCoordinator(context, context.share_partitions, self.log)  # KIP-932 share groups
        self.streams = StreamsGroupCoordinator(context, self.log)  # KIP-1071 streams groups, same topic

    # ------------------------------------------------------------------ load and persistence

    def load(self) -> None:
        """Replay ``__consumer_offsets``: offsets, transactional offsets and group metadata."""
        count = 0
        for entry in self.log.replay():
            if entry.marker_commit is not None:
                self.offsets.complete_txn(entry.partition, entry.header.producer_id, entry.marker_commit,
                                          entry.offset)
                continue
            if entry.key is None:
                continue  # not a record of ours: every record of __consumer_offsets has a key
            if records.RecordKeyVersion.parse(entry.key[:2]) == records.GROUP_METADATA_KEY_VERSION:
                self._replay_group(records.GroupMetadataKey.parse(entry.key).group, entry.value)
            elif consumer_records.is_consumer_group_key(entry.key):
                record = consumer_records.decode(entry.key, entry.value)
                if record is not None:
                    self.consumer.replay(record)
            elif share_records.is_share_group_key(entry.key):
                share_record = share_records.decode(entry.key, entry.value)
                if share_record is not None:
                    self.share.replay(share_record)
            elif streams_records.is_streams_group_key(entry.key):
                self.streams.replay(streams_records.decode(entry.key, entry.value))
            else:
                producer_id = entry.header.producer_id if entry.header.is_transactional else None
                group_id = self.offsets.replay(entry.offset, entry.key, entry.value, producer_id)
                if group_id is not None:
                    self._group(group_id, create=True)  # offsets alone make a ("simple") group
            count += 1
        for group_id in [g for g, group in self.groups.items()
                         if (g in self.consumer.groups or g in self.streams.groups) and not group.members]:
            del self.groups[group_id]  # offsets of a consumer-protocol or streams group made an empty classic one
        if count:
            log.info("group coordinator: replayed %d record(s), %d classic, %d consumer and %d streams group(s)",
                     count, len(self.groups), len(self.consumer.groups), len(self.streams.groups))

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
                self.rebalance.schedule_session(group, member)
        self.consumer.start()
        self.share.start()
        self.streams.start()

    async def close(self) -> None:
        for group in self.groups.values():
            for timer in (group.join_timer, group.sync_timer, *(m.session_timer for m in group.members.values())):
                if timer is not None:
                    timer.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self.consumer.close()
        await self.share.close()
        await self.streams.close()

    def _spawn(self, coroutine: Coroutine[Any, Any, Any]) -> None:
        task = asyncio.get_running_loop().create_task(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def writes_done(self) -> None:
        """Wait for the group records being written now: an answer that changed a group (a member
        leaving) goes out after its record, as Kafka's does, so a crash right after it cannot bring
        the member back on restart."""
        if self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

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
            if group_id in self.share.groups or group_id in self.streams.groups:
                raise KafkaError(Errors.INCONSISTENT_GROUP_PROTOCOL)  # as Kafka answers a share group's id
            consumer_group = self.consumer.groups.get(group_id)
            if consumer_group is not None and consumer_group.members:
                # a classic member joining a consumer group is served by it (online migration)
                return await self.consumer.classic.join(
                    consumer_group, member_id, instance_id, protocol_type, protocols, session_timeout_ms,
                    rebalance_timeout_ms, client_id, client_host, require_known_member_id)
            await self._take_from_consumer_protocol(group_id)
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
                future = self.joins.known(group, member)
            else:
                future = self.joins.unknown(group, member, require_known_member_id)
        except KafkaError as exc:
            return JoinResult(exc.error, member_id=member_id)
        return await future

    async def _take_from_consumer_protocol(self, group_id: str) -> None:
        """A classic member joining an empty consumer-protocol group: the group is deleted, as Kafka
        converts an empty group."""
        if group_id in self.consumer.groups:
            await self.consumer.delete(group_id)

    # ------------------------------------------------------------------ SyncGroup

    async def sync_group(self, group_id: str, generation: int, member_id: str, instance_id: str | None,
                         assignments: dict[str, bytes]) -> SyncResult:
        try:
            consumer_group = self.consumer.groups.get(group_id)
            if consumer_group is not None:
                return self.consumer.classic.sync(consumer_group, generation, member_id, instance_id)
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
        self.rebalance.synced(group, member)
        if group.is_in(S.STABLE):
            return SyncResult(Errors.NONE, member.assignment)
        resolve_sync(member, SyncResult(Errors.REBALANCE_IN_PROGRESS))  # superseded by this one
        future: asyncio.Future[SyncResult] = asyncio.get_running_loop().create_future()
        member.awaiting_sync = future
        if member_id == group.leader_id:
            self._spawn(self._store_assignment(group, assignments))
        return await future

    async def _store_assignment(self, group: ClassicGroup, assignments: dict[str, bytes]) -> None:
        generation = group.generation
        error = Errors.NONE
        try:
            await self._persist(group, assignments)
        except KafkaError as exc:  # a failed append, logged by the disk layer: NOT_COORDINATOR, as Kafka maps it
            error = exc.error
        except Exception:
            log.exception("group %s: storing the assignment of generation %d failed", group.group_id, generation)
            error = Errors.COORDINATOR_NOT_AVAILABLE
        if not group.is_in(S.COMPLETING_REBALANCE) or group.generation != generation:
            return  # a rebalance started meanwhile; its answers went out already
        if error != Errors.NONE:
            for member in group.members.values():
                self.rebalance.answer_sync(group, member, SyncResult(error))
            self.rebalance.prepare(group, "storing the assignment failed")
            return
        for member in group.members.values():
            member.assignment = assignments.get(member.member_id, b"")
            self.rebalance.answer_sync(group, member, SyncResult(Errors.NONE, member.assignment))
        group.transition_to(S.STABLE, self.clock.now_ms())

    # ------------------------------------------------------------------ Heartbeat and LeaveGroup

    def heartbeat(self, group_id: str, generation: int, member_id: str, instance_id: str | None) -> Errors:
        try:
            consumer_group = self.consumer.groups.get(group_id)
            if consumer_group is not None:
                return self.consumer.classic.heartbeat(consumer_group, generation, member_id, instance_id)
            group = self._live_group(group_id)
            member = group.validate_member(member_id, instance_id)
            if generation != group.generation:
                raise KafkaError(Errors.ILLEGAL_GENERATION)
        except KafkaError as exc:
            return exc.error
        self.rebalance.schedule_session(group, member)
        return Errors.REBALANCE_IN_PROGRESS if group.is_in(S.PREPARING_REBALANCE) else Errors.NONE

    def leave_group(self, group_id: str, leaving: list[tuple[str, str | None]]) -> list[Errors]:
        """One error per (member id, group instance id) leaving; a missing group: UNKNOWN_MEMBER_ID each."""
        consumer_group = self.consumer.groups.get(group_id)
        if consumer_group is not None:
            return [self.consumer.classic.leave(consumer_group, member_id, instance_id)
                    for member_id, instance_id in leaving]
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
            self.rebalance.try_complete_join(group)
            return Errors.NONE
        member = group.members.get(member_id)
        if member is None:
            return Errors.UNKNOWN_MEMBER_ID
        self.rebalance.remove_member(group, member, f"member {member_id} left the group")
        return Errors.NONE

    def _live_group(self, group_id: str) -> ClassicGroup:
        group = self._group(group_id)
        if group is None:
            raise KafkaError(Errors.UNKNOWN_MEMBER_ID, f"unknown group {group_id}")
        if group.is_in(S.DEAD):
            raise KafkaError(Errors.COORDINATOR_NOT_AVAILABLE)
        return group

    # ------------------------------------------------------------------ the consumer protocol (KIP-848)

    async def consumer_group_heartbeat(self, request: Any, version: int, client_id: str,
                                       client_host: str) -> dict[str, Any]:
        if request.group_id in self.share.groups or request.group_id in self.streams.groups:
            return {"error_code": Errors.GROUP_ID_NOT_FOUND,
                    "error_message": f"Group {request.group_id} is not a consumer group."}
        try:
            await self.migration.maybe_upgrade(request.group_id, request.member_epoch)
        except KafkaError as exc:
            return {"error_code": exc.code, "error_message": exc.message or None}
        answer = await self.consumer.heartbeat(request, version, client_id, client_host, self.groups)
        classic = self.groups.get(request.group_id)
        if answer["error_code"] == Errors.NONE and classic is not None and not classic.members:
            del self.groups[request.group_id]  # an empty classic group (offsets only) becomes this one
        return answer

    # ------------------------------------------------------------------ share groups (KIP-932)

    async def share_group_heartbeat(self, request: Any, client_id: str, client_host: str) -> dict[str, Any]:
        group_id = request.group_id
        classic = self.groups.get(group_id)
        if (group_id in self.consumer.groups or group_id in self.streams.groups
                or (classic is not None and not classic.is_in(S.DEAD))):
            return {"error_code": Errors.GROUP_ID_NOT_FOUND, "error_message": f"Group {group_id} is not a share group."}
        return await self.share.heartbeat(request, client_id, client_host)

    # ------------------------------------------------------------------ streams groups (KIP-1071)

    def holds(self, group_id: str) -> bool:
        """Does a group of any type have this id?"""
        return any(group_id in groups for groups in (self.groups, self.consumer.groups, self.share.groups,
                                                     self.streams.groups))

    async def streams_group_heartbeat(self, request: Any, client_id: str, client_host: str) -> dict[str, Any]:
        group_id = request.group_id
        classic = self.groups.get(group_id)
        if classic is not None and not classic.members and group_id not in self.consumer.groups:
            del self.groups[group_id]  # an empty classic group (offsets only) becomes this one, as in Kafka
        elif group_id in self.consumer.groups or group_id in self.share.groups or classic is not None:
            return {"error_code": Errors.GROUP_ID_NOT_FOUND, "member_id": request.member_id,
                    "error_message": f"Group {group_id} is not a streams group."}
        return await self.streams.heartbeat(request, client_id, client_host)

    # ------------------------------------------------------------------ offset commits

    def validate_offset_commit(self, group_id: str, member_id: str, instance_id: str | None, generation: int,
                               transactional: bool, api_version: int = 9,
                               partitions: Iterable[tuple[str, int]] = ()) -> None:
        """Who may commit: a member of the current generation, or anyone while the group is empty.
        In a consumer-protocol group, ``generation`` is the member epoch (KIP-848), checked against
        each of ``partitions`` (KIP-1251). A KafkaError refuses the whole commit, as in Kafka."""
        validate_group_id(group_id)
        consumer_group = self.consumer.groups.get(group_id)
        if consumer_group is not None:
            self.consumer.validate_offset_commit(consumer_group, member_id, instance_id, generation, transactional,
                                                 api_version, partitions)
            return
        streams_group = self.streams.groups.get(group_id)
        if streams_group is not None:
            self.streams.validate_offset_commit(streams_group, member_id, generation, transactional, partitions,
                                                api_version)
            return
        group = self._group(group_id)
        if group is None:
            if generation >= 0:
                raise KafkaError(Errors.ILLEGAL_GENERATION, f"group {group_id} has no generation {generation}")
            self._group(group_id, create=True)
            return
        group.validate_offset_commit(member_id, instance_id, generation, transactional)
        member = group.members.get(member_id)
        if member is not None and not transactional and group.is_in(S.STABLE):
            self.rebalance.schedule_session(group, member)  # a commit shows the member is alive
