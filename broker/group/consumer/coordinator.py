"""The consumer group coordinator (KIP-848): owns the consumer-protocol groups, writes their records
and replays them, and runs their deadlines.

An operation (``heartbeat.py``) returns records and an answer; ``apply`` replays the records at
once, so the next request sees them, and writes them to the group's ``__consumer_offsets``
partition; the answer goes out when the write is done. Replay is the only way state changes, and
start-up replays the same records (``replay``), so a restart (kill -9 included) resumes every
member at its epoch with its partitions, without a rebalance. If a write fails, the group is
rebuilt from what its partition holds and the member is told COORDINATOR_NOT_AVAILABLE, as
Kafka's runtime reverts to its last committed state.

Deadlines, on the injected clock: a member's session (the group's ``consumer.session.timeout.ms``
config, else ``group.consumer.session.timeout.ms``; renewed by each heartbeat) and its revocation
deadline (its rebalance timeout, while it holds partitions it was told to revoke); for a classic
member also its rejoin and sync deadlines (its rebalance timeout from REBALANCE_IN_PROGRESS to
JoinGroup, and from JoinGroup to SyncGroup). Any one passing removes the member, as Kafka fences it.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable, Coroutine, Iterable
from typing import TYPE_CHECKING, Any

from weir.protocol.errors import Errors, KafkaError

from ...clock import Timer
from ...config import ConfigError
from ..recorded import RecordedGroups
from . import heartbeat as op
from . import records as r
from .assignors import configured
from .classic_members import ClassicMembers
from .group import ConsumerGroup
from .member import LEAVE_GROUP_EPOCH, Assignment, ConsumerGroupMember, MemberState
from .subscription import TopicsView

if TYPE_CHECKING:
    from ...context import BrokerContext
    from ...coordinator.runtime import CoordinatorLog
    from ..classic import ClassicGroup

log = logging.getLogger(__name__)


class ConsumerGroupCoordinator(RecordedGroups):
    KIND = "consumer group"
    is_group_key = staticmethod(r.is_consumer_group_key)
    decode_record = staticmethod(r.decode)

    def __init__(self, context: BrokerContext, offsets_log: CoordinatorLog) -> None:
        self.context = context
        self.config = context.config
        self.clock = context.clock
        self.log = offsets_log
        self.groups: dict[str, ConsumerGroup] = {}
        self.settings = op.Settings(max_size=self.config["group.consumer.max.size"],
                                    assignors=configured(self.config["group.consumer.assignors"]))
        self.group_configs = context.group_configs  # per-group session timeout and heartbeat interval
        for name in ("session.timeout.ms", "heartbeat.interval.ms"):
            value = self.config[f"group.consumer.{name}"]
            low, high = self.config[f"group.consumer.min.{name}"], self.config[f"group.consumer.max.{name}"]
            if not low <= value <= high:  # Kafka's GroupCoordinatorConfig refuses to start likewise
                raise ConfigError(f"group.consumer.{name} must be between group.consumer.min.{name} ({low}) and "
                                  f"group.consumer.max.{name} ({high}), got {value}")
        self._sessions: dict[tuple[str, str], Timer] = {}
        self._revocations: dict[tuple[str, str], Timer] = {}
        # classic members only (Kafka's join and sync timeouts): told to rejoin, a member must send
        # JoinGroup within its rebalance timeout; joined, it must send SyncGroup within it
        self._rejoins: dict[tuple[str, str], Timer] = {}
        self._syncs: dict[tuple[str, str], Timer] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self.classic = ClassicMembers(self)  # classic-protocol members of consumer groups (migration)
        # the group coordinator's downgrade check: (group id, the group epoch before the member left)
        self.on_member_removed: Callable[[str, int], None] = lambda group_id, epoch: None

    # ------------------------------------------------------------------ replay and start-up

    def replay(self, record: r.GroupRecord) -> None:
        group = self.groups.get(record.group_id)
        if group is None:
            if record.value is None:
                return
            group = self.groups[record.group_id] = ConsumerGroup(record.group_id)
        group.replay(record)
        if record.type == r.GROUP_METADATA and record.value is None and not group.members:
            del self.groups[record.group_id]

    def start(self) -> None:
        """Members replayed from the log must heartbeat within their session, and revoke in time."""
        for group_id in self.groups:
            self.arm_sessions(group_id)

    async def close(self) -> None:
        for timer in (*self._sessions.values(), *self._revocations.values(), *self._rejoins.values(),
                      *self._syncs.values()):
            timer.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    # ------------------------------------------------------------------ ConsumerGroupHeartbeat

    async def heartbeat(self, request: Any, version: int, client_id: str, client_host: str,
                        classic_groups: dict[str, ClassicGroup]) -> dict[str, Any]:
        try:
            op.validate(request, version, self.settings)
            self._check_not_classic(request.group_id, request.member_epoch, classic_groups)
            outcome = op.heartbeat(self.groups.get(request.group_id), request, self.settings,
                                   TopicsView.of(self.context.logs), client_id, client_host)
        except KafkaError as exc:
            return {"error_code": exc.code, "error_message": exc.message or None}
        group = self.groups.get(request.group_id)
        epoch_before = group.group_epoch if group is not None else 0
        if not await self.apply(request.group_id, outcome.records):
            return {"error_code": Errors.COORDINATOR_NOT_AVAILABLE}
        if outcome.member is not None and request.member_epoch != LEAVE_GROUP_EPOCH:
            self.schedule(request.group_id, outcome.member)
        else:
            self._cancel(request.group_id, outcome.member_id)
            self.on_member_removed(request.group_id, epoch_before)
        return {"error_code": Errors.NONE, "member_id": outcome.member_id, "member_epoch": outcome.member_epoch,
                "heartbeat_interval_ms": self.group_configs.value(request.group_id, "consumer.heartbeat.interval.ms"),
                "assignment": outcome.assignment}

    def _check_not_classic(self, group_id: str, epoch: int, classic_groups: dict[str, ClassicGroup]) -> None:
        """A classic group with members the group coordinator did not upgrade (the migration policy, the
        embedded protocol or the group size did not allow it) keeps its id; an empty one yields."""
        classic = classic_groups.get(group_id)
        if classic is not None and classic.members:
            raise KafkaError(Errors.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group.")

    async def delete(self, group_id: str) -> bool:
        """Tombstones for an empty group's records (DeleteGroups; a classic JoinGroup taking the id)."""
        group = self.groups.get(group_id)
        if group is None or group.members:
            return False
        records = [r.GroupRecord(r.TARGET_ASSIGNMENT_METADATA, group_id), r.GroupRecord(r.GROUP_METADATA, group_id)]
        if not await self.apply(group_id, records):
            raise KafkaError(Errors.COORDINATOR_NOT_AVAILABLE)
        return True

    # ------------------------------------------------------------------ writes

    def arm_sessions(self, group_id: str) -> None:
        for member in self.groups[group_id].members.values():
            self.schedule(group_id, member)

    def _spawn(self, coroutine: Coroutine[Any, Any, Any]) -> None:
        task = asyncio.get_running_loop().create_task(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # ------------------------------------------------------------------ deadlines

    def schedule(self, group_id: str, member: ConsumerGroupMember) -> None:
        key = (group_id, member.member_id)
        previous = self._sessions.pop(key, None)
        if previous is not None:
            previous.cancel()
        classic_timeout_ms = member.classic_session_timeout_ms  # set for a member of the classic protocol
        session_timeout_ms = (classic_timeout_ms if classic_timeout_ms is not None
                              else self.group_configs.value(group_id, "consumer.session.timeout.ms"))
        self._sessions[key] = self.clock.call_later(
            session_timeout_ms / 1000, functools.partial(self._expire, group_id, member.member_id, "session"))
        revocation = self._revocations.pop(key, None)
        if member.state == MemberState.UNREVOKED_PARTITIONS:
            if revocation is not None:
                self._revocations[key] = revocation  # the deadline runs from when revocation was asked
            else:
                self._revocations[key] = self.clock.call_later(
                    max(member.rebalance_timeout_ms, 0) / 1000,
                    functools.partial(self._expire_revocation, group_id, member.member_id, member.member_epoch))
        elif revocation is not None:
            revocation.cancel()

    def expect_rejoin(self, group_id: str, member: ConsumerGroupMember) -> None:
        """A classic member told REBALANCE_IN_PROGRESS: fenced unless it rejoins within its rebalance
        timeout (the first such answer starts the deadline, as Kafka's scheduleIfAbsent)."""
        key = (group_id, member.member_id)
        if key not in self._rejoins:
            self._rejoins[key] = self.clock.call_later(max(member.rebalance_timeout_ms, 0) / 1000, functools.partial(
                self._expire_deadline, self._rejoins, group_id, member.member_id,
                "the classic member failed to join within the rebalance timeout"))

    def expect_sync(self, group_id: str, member_id: str, rebalance_timeout_ms: int) -> None:
        """A classic member that joined: its rejoin deadline is met, and it must sync within its rebalance timeout."""
        for timers in (self._rejoins, self._syncs):
            timer = timers.pop((group_id, member_id), None)
            if timer is not None:
                timer.cancel()
        expire = functools.partial(self._expire_deadline, self._syncs, group_id, member_id,
                                   "the member failed to sync within timeout")
        self._syncs[(group_id, member_id)] = self.clock.call_later(max(rebalance_timeout_ms, 0) / 1000, expire)

    def synced(self, group_id: str, member_id: str) -> None:
        timer = self._syncs.pop((group_id, member_id), None)
        if timer is not None:
            timer.cancel()

    def _expire_deadline(self, timers: dict[tuple[str, str], Timer], group_id: str, member_id: str,
                         why: str) -> None:
        timers.pop((group_id, member_id), None)
        group = self.groups.get(group_id)
        if group is not None and member_id in group.members:
            self.remove(group_id, member_id, why)

    def _cancel(self, group_id: str, member_id: str) -> None:
        for timers in (self._sessions, self._revocations, self._rejoins, self._syncs):
            timer = timers.pop((group_id, member_id), None)
            if timer is not None:
                timer.cancel()

    def _expire(self, group_id: str, member_id: str, why: str) -> None:
        self._sessions.pop((group_id, member_id), None)
        group = self.groups.get(group_id)
        if group is None or member_id not in group.members:
            return
        self.remove(group_id, member_id, f"{why} timeout")

    def remove(self, group_id: str, member_id: str, why: str) -> None:
        """Fence a member now (its session or revocation deadline passed, or it left by LeaveGroup)."""
        group = self.groups[group_id]
        epoch_before = group.group_epoch
        log.info("consumer group %s: member %s removed (%s)", group_id, member_id, why)
        self._cancel(group_id, member_id)
        records = op.fence(group, member_id, TopicsView.of(self.context.logs))
        for record in records:  # at once, as apply does: a heartbeat arriving next sees the member gone
            self.replay(record)
        self._spawn(self._write(group_id, records))
        self.on_member_removed(group_id, epoch_before)

    def _expire_revocation(self, group_id: str, member_id: str, epoch: int) -> None:
        self._revocations.pop((group_id, member_id), None)
        group = self.groups.get(group_id)
        member = group.members.get(member_id) if group else None
        if member is not None and member.state == MemberState.UNREVOKED_PARTITIONS and member.member_epoch == epoch:
            self._expire(group_id, member_id, "revocation")

    # ------------------------------------------------------------------ offsets (KIP-848 member epochs)

    def validate_offset_commit(self, group: ConsumerGroup, member_id: str, instance_id: str | None,
                               member_epoch: int, transactional: bool, api_version: int,
                               partitions: Iterable[tuple[str, int]] = ()) -> None:
        """Kafka 4.3's ConsumerGroup.validateOffsetCommit and its per-partition validator: a KafkaError
        refuses the whole commit, as Kafka's does (one stale partition fails them all).

        An epoch older than the member's is accepted for partitions it has held since that epoch or
        before (KIP-1251). STALE_MEMBER_EPOCH for a consumer-protocol member, ILLEGAL_GENERATION for
        a classic one (its generation is its member epoch); TxnOffsetCommit answers
        ILLEGAL_GENERATION for both, as Kafka's OffsetMetadataManager maps it (KIP-447 fencing)."""
        if member_epoch < 0 and not group.members:
            return  # the admin client, or a consumer using assign()
        if transactional and member_epoch == -1 and member_id == "" and instance_id is None:
            return  # TxnOffsetCommit without group metadata (before KIP-447, or the Java producer's groupId-only)
        member = group.members.get(member_id)
        if member is None:
            raise KafkaError(Errors.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group "
                                                       f"{group.group_id}.")
        classic = member.uses_classic_protocol
        if not transactional and not classic and api_version < 9:
            raise KafkaError(Errors.UNSUPPORTED_VERSION, "OffsetCommit version 9 or above must be used by members "
                                                         "using the consumer group protocol")
        if member_epoch == member.member_epoch:
            return
        stale = Errors.ILLEGAL_GENERATION if classic or transactional else Errors.STALE_MEMBER_EPOCH
        word = "generation id" if classic else "member epoch"
        if member_epoch > member.member_epoch:
            raise KafkaError(stale, f"Received {word} {member_epoch} is newer than current member epoch "
                                    f"{member.member_epoch}.")
        topics = self.context.logs.topics
        for name, partition in partitions:
            topic = topics.get(name)
            if topic is None:  # Kafka: a topic it cannot resolve fails a member's transactional commit
                raise KafkaError(Errors.ILLEGAL_GENERATION)
            held_since = member.assigned_at(topic.topic_id, partition)
            if held_since is None:
                raise KafkaError(stale, f"Partition {name}-{partition} is not assigned or pending revocation "
                                        "for member.")
            if member_epoch < held_since:
                raise KafkaError(stale, f"Received {word} {member_epoch} is older than assignment epoch "
                                        f"{held_since} for partition {name}-{partition}.")

    def validate_offset_fetch(self, group: ConsumerGroup, member_id: str | None, member_epoch: int) -> None:
        """Kafka's ConsumerGroup.validateOffsetFetch: epoch -1 is the admin client, always allowed."""
        if member_epoch == -1:
            return
        member = group.members.get(member_id or "")
        if member is None:
            raise KafkaError(Errors.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group "
                                                       f"{group.group_id}.")
        if member_epoch != member.member_epoch:
            error = Errors.ILLEGAL_GENERATION if member.uses_classic_protocol else Errors.STALE_MEMBER_EPOCH
            raise KafkaError(error, f"The received member epoch {member_epoch} does not match "
                                    f"the expected member epoch {member.member_epoch}.")

    def cancel_all(self, group_id: str) -> None:
        """Stop every deadline of a group's members (the group is converted to a classic group)."""
        for member_id in list(self.groups[group_id].members):
            self._cancel(group_id, member_id)

    async def write_raw(self, group_id: str, entries: list[tuple[bytes, bytes | None]]) -> bool:
        """Append conversion records (some of them classic records) to the group's partition."""
        try:
            await self.log.append(self.log.partition_for(group_id), entries, self.clock.now_ms())
        except Exception:
            log.exception("group %s: writing its conversion failed", group_id)
            return False
        return True


def topic_names(assignment: Assignment, topics: TopicsView) -> list[tuple[bytes, str, list[int]]]:
    """(topic id, name, partitions) of an assignment, for ConsumerGroupDescribe; deleted topics left out."""
    return [(topic_id, topics.by_id[topic_id].name, sorted(partitions))
            for topic_id, partitions in sorted(assignment.items()) if topic_id in topics.by_id]
