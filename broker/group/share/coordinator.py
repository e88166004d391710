"""The share group coordinator: ShareGroupHeartbeat, members' sessions, the target assignment.

Kafka's ``GroupMetadataManager.shareGroupHeartbeat`` in its order: validate the request; find or
create the group (epoch 0) and the member; a new member or a changed subscription bumps the group
epoch and computes a new target assignment (``assignor.py``); the member takes its target at once
(share groups revoke nothing) and its epoch becomes the assignment epoch. Leaving (-1) and a
session ending remove the member, bump the epoch and give its records back (``broker/share``).

Every change is a record replayed by ``ShareGroup.replay``; the operation itself changes nothing.
``apply`` replays the records at once (the next request sees them) and writes them to the group's
``__consumer_offsets`` partition; the answer goes out when the write is done, and start-up replays
the same records, so members keep their epochs and partitions across a restart (they must
heartbeat within their session). A failed write rebuilds the group from its partition and the
member is told COORDINATOR_NOT_AVAILABLE, as Kafka's runtime reverts.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Coroutine
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from weir.protocol.errors import Errors, KafkaError

from ...clock import Timer
from ...config import ConfigError
from ..recorded import RecordedGroups
from . import records as r
from .assignor import assign
from .group import ShareGroup, ShareGroupMember

if TYPE_CHECKING:
    from ...context import BrokerContext
    from ...coordinator.runtime import CoordinatorLog
    from ...share.manager import SharePartitionManager

log = logging.getLogger(__name__)

JOIN_GROUP_EPOCH = 0
LEAVE_GROUP_EPOCH = -1


@dataclass
class Outcome:
    records: list[r.ShareGroupRecord] = field(default_factory=list)
    member_epoch: int = 0
    assignment: r.Partitions | None = None  # None: not sent


def validate(request: Any) -> None:
    def invalid(message: str) -> None:
        raise KafkaError(Errors.INVALID_REQUEST, message)
    if not request.group_id:
        invalid("GroupId can't be empty.")
    if not request.member_id:
        raise KafkaError(Errors.INVALID_REQUEST)  # Kafka 4.4 answers this one without a message
    if request.rack_id == "":
        invalid("RackId can't be empty.")
    epoch = request.member_epoch
    if epoch == JOIN_GROUP_EPOCH:
        if not request.subscribed_topic_names:
            invalid("SubscribedTopicNames must be set in first request.")
    elif epoch < LEAVE_GROUP_EPOCH:
        invalid("MemberEpoch is invalid.")


def _check_epoch(epoch: int, member: ShareGroupMember) -> None:
    """Kafka's check: the member's epoch, or the one before it (an answer the member missed)."""
    rejoin = "The member must abandon all its partitions and rejoin."
    if epoch > member.member_epoch:
        raise KafkaError(Errors.FENCED_MEMBER_EPOCH, f"The share group member has a greater member epoch ({epoch}) "
                                                     f"than the one known by the group coordinator "
                                                     f"({member.member_epoch}). {rejoin}")
    if epoch < member.member_epoch and epoch != member.previous_member_epoch:
        raise KafkaError(Errors.FENCED_MEMBER_EPOCH, f"The share group member has a smaller member epoch ({epoch}) "
                                                     f"than the one known by the group coordinator "
                                                     f"({member.member_epoch}), and it does not match the previous "
                                                     f"member epoch ({member.previous_member_epoch}). {rejoin}")


class ShareGroupCoordinator(RecordedGroups):
    KIND = "share group"
    is_group_key = staticmethod(r.is_share_group_key)
    decode_record = staticmethod(r.decode)

    def __init__(self, context: BrokerContext, share_partitions: SharePartitionManager,
                 offsets_log: CoordinatorLog) -> None:
        self.context = context
        self.log = offsets_log
        self.clock = context.clock
        self.group_configs = context.group_configs
        self.share_partitions = share_partitions
        self.max_size = context.config["group.share.max.size"]
        config = context.config
        for name in ("session.timeout.ms", "heartbeat.interval.ms", "record.lock.duration.ms", "delivery.count.limit",
                     "partition.max.record.locks"):
            value, low, high = (config[f"group.share.{name}"], config[f"group.share.min.{name}"],
                                config[f"group.share.max.{name}"])
            if not low <= value <= high:  # Kafka's ShareGroupConfig and GroupCoordinatorConfig refuse to start
                raise ConfigError(f"group.share.{name} must be between group.share.min.{name} ({low}) and "
                                  f"group.share.max.{name} ({high}), got {value}")
        self.groups: dict[str, ShareGroup] = {}
        self._sessions: dict[tuple[str, str], Timer] = {}
        self._tasks: set[asyncio.Task[Any]] = set()

    # ------------------------------------------------------------------ records

    def replay(self, record: r.ShareGroupRecord) -> None:
        group = self.groups.get(record.group_id)
        if group is None:
            if record.value is None:
                return
            group = self.groups[record.group_id] = ShareGroup(record.group_id)
        group.replay(record)
        if group.deleted:
            del self.groups[record.group_id]

    def arm_sessions(self, group_id: str) -> None:
        for member_id in self.groups[group_id].members:
            self._schedule(group_id, member_id)

    def start(self) -> None:
        """Members replayed from the log must heartbeat within their session."""
        for group_id in self.groups:
            self.arm_sessions(group_id)

    # ------------------------------------------------------------------ ShareGroupHeartbeat

    async def heartbeat(self, request: Any, client_id: str, client_host: str) -> dict[str, Any]:
        try:
            validate(request)
            outcome = self._heartbeat(request, client_id, client_host)
        except KafkaError as exc:
            return {"error_code": exc.code, "error_message": exc.message or None}
        if not await self.apply(request.group_id, outcome.records):
            return {"error_code": Errors.COORDINATOR_NOT_AVAILABLE}
        group_id, member_id = request.group_id, request.member_id
        if request.member_epoch == LEAVE_GROUP_EPOCH:
            self._cancel(group_id, member_id)
            self.share_partitions.member_left(group_id, member_id)
        else:
            self._schedule(group_id, member_id)
            for topic_id, partitions in (outcome.assignment or {}).items():
                for index in partitions:  # Kafka initializes a share-partition when it is first assigned
                    await self.share_partitions.initialize(group_id, topic_id, index)
        leaving = request.member_epoch == LEAVE_GROUP_EPOCH  # Kafka answers a leave with interval 0
        answer = {"error_code": Errors.NONE, "member_id": member_id, "member_epoch": outcome.member_epoch,
                  "heartbeat_interval_ms": 0 if leaving else self.group_configs.value(group_id,
                                                                                      "share.heartbeat.interval.ms")}
        if outcome.assignment is not None:
            answer["assignment"] = outcome.assignment
        return answer

    def _heartbeat(self, request: Any, client_id: str, client_host: str) -> Outcome:
        group_id, member_id, epoch = request.group_id, request.member_id, request.member_epoch
        group = self.groups.get(group_id)
        if group is None:
            if epoch != JOIN_GROUP_EPOCH:
                raise KafkaError(Errors.GROUP_ID_NOT_FOUND, f"Share group {group_id} not found.")
            group = ShareGroup(group_id)
        member = group.members.get(member_id)
        if epoch == LEAVE_GROUP_EPOCH:
            if member is None:
                raise KafkaError(Errors.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {group_id}.")
            return Outcome(self._removal(group, member_id), member_epoch=LEAVE_GROUP_EPOCH)
        if epoch != JOIN_GROUP_EPOCH:
            if member is None:
                raise KafkaError(Errors.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {group_id}.")
            _check_epoch(epoch, member)
        elif member is None and len(group.members) >= self.max_size:
            raise KafkaError(Errors.GROUP_MAX_SIZE_REACHED,
                             f"The share group has reached its maximum capacity of {self.max_size} members.")
        subscribed = (tuple(request.subscribed_topic_names) if request.subscribed_topic_names is not None
                      else member.metadata.subscribed_topic_names if member is not None else ())
        metadata = r.MemberMetadata(client_id, client_host,
                                    request.rack_id if request.rack_id is not None
                                    else (member.metadata.rack_id if member is not None else None), subscribed)
        records: list[r.ShareGroupRecord] = []
        if member is None or member.metadata != metadata:
            records.append(r.ShareGroupRecord(r.MEMBER_METADATA, group_id, member_id, metadata))
        target_epoch = group.assignment_epoch
        target = group.target.get(member_id)
        members = {m.member_id: m.metadata.subscribed_topic_names for m in group.members.values()}
        members[member_id] = subscribed
        # a new member, a changed subscription or changed topics (one created or grown since) bump
        # the group epoch, as Kafka's metadata hash does
        if (member is None or member.metadata.subscribed_topic_names != subscribed
                or assign(members.items(), self._topics(), group.target) != {m: group.target.get(m) for m in members}):
            target_epoch = group.group_epoch + 1
            new_records, targets = self._new_target(group, members, target_epoch)
            records += new_records
            target = targets[member_id]
        if target is None:
            target = {}
        current_epoch = member.member_epoch if member is not None else 0
        current = member.assignment if member is not None else None
        if current_epoch != target_epoch or current != target:
            records.append(r.ShareGroupRecord(r.CURRENT_MEMBER_ASSIGNMENT, group_id, member_id,
                                              r.MemberAssignment(target_epoch, target, current_epoch)))
        send = epoch == JOIN_GROUP_EPOCH or current != target
        return Outcome(records, member_epoch=target_epoch, assignment=target if send else None)

    def _new_target(self, group: ShareGroup, members: dict[str, tuple[str, ...]],
                    epoch: int) -> tuple[list[r.ShareGroupRecord], dict[str, r.Partitions]]:
        targets = assign(members.items(), self._topics(), group.target)
        records = [r.ShareGroupRecord(r.GROUP_METADATA, group.group_id, None, r.GroupEpoch(epoch))]
        for member_id, partitions in targets.items():
            if group.target.get(member_id) != partitions:
                records.append(r.ShareGroupRecord(r.TARGET_ASSIGNMENT_MEMBER, group.group_id, member_id,
                                                  r.MemberAssignment(epoch, partitions)))
        records.append(r.ShareGroupRecord(r.TARGET_ASSIGNMENT_METADATA, group.group_id, None,
                                          r.AssignmentEpoch(epoch)))
        return records, targets

    def _topics(self) -> dict[str, tuple[bytes, int]]:
        return {name: (topic.topic_id, len(topic.partitions)) for name, topic in self.context.logs.topics.items()
                if not topic.is_internal}

    def _removal(self, group: ShareGroup, member_id: str) -> list[r.ShareGroupRecord]:
        records = [r.ShareGroupRecord(r.CURRENT_MEMBER_ASSIGNMENT, group.group_id, member_id, None),
                   r.ShareGroupRecord(r.TARGET_ASSIGNMENT_MEMBER, group.group_id, member_id, None),
                   r.ShareGroupRecord(r.MEMBER_METADATA, group.group_id, member_id, None)]
        others = {m.member_id: m.metadata.subscribed_topic_names for m in group.members.values()
                  if m.member_id != member_id}
        return records + self._new_target(group, others, group.group_epoch + 1)[0]

    async def delete(self, group_id: str) -> Errors:
        """DeleteGroups: an empty share group's records and its share-partitions' state go."""
        group = self.groups[group_id]
        if group.members:
            return Errors.NON_EMPTY_GROUP
        records = [*(r.ShareGroupRecord(r.TARGET_ASSIGNMENT_MEMBER, group_id, member_id) for member_id in group.target),
                   r.ShareGroupRecord(r.TARGET_ASSIGNMENT_METADATA, group_id),
                   r.ShareGroupRecord(r.GROUP_METADATA, group_id)]
        await self.share_partitions.delete_group(group_id)
        if not await self.apply(group_id, records):
            return Errors.COORDINATOR_NOT_AVAILABLE
        return Errors.NONE

    # ------------------------------------------------------------------ sessions

    def _schedule(self, group_id: str, member_id: str) -> None:
        self._cancel(group_id, member_id)
        timeout_ms = self.group_configs.value(group_id, "share.session.timeout.ms")
        self._sessions[(group_id, member_id)] = self.clock.call_later(
            timeout_ms / 1000, functools.partial(self._expire, group_id, member_id))

    def _cancel(self, group_id: str, member_id: str) -> None:
        timer = self._sessions.pop((group_id, member_id), None)
        if timer is not None:
            timer.cancel()

    def _expire(self, group_id: str, member_id: str) -> None:
        self._sessions.pop((group_id, member_id), None)
        group = self.groups.get(group_id)
        if group is None or member_id not in group.members:
            return
        log.info("share group %s: member %s removed, its session timed out", group_id, member_id)
        records = self._removal(group, member_id)
        for record in records:
            self.replay(record)  # at once: the next request sees the member gone
        self._spawn(self._write(group_id, records))
        self.share_partitions.member_left(group_id, member_id)

    def _spawn(self, coroutine: Coroutine[Any, Any, Any]) -> None:
        task = asyncio.get_running_loop().create_task(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def close(self) -> None:
        for timer in self._sessions.values():
            timer.cancel()
        self._sessions.clear()
        await asyncio.gather(*self._tasks, return_exceptions=True)
