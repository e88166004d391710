"""The streams group coordinator (KIP-1071): heartbeats, sessions, internal topics, offsets' epochs.

``heartbeat.py`` decides; this module owns the groups, runs the decisions against the broker (it
creates the internal topics the topology asks for, with the configs it asks for) and keeps the
members' session deadlines (``streams.session.timeout.ms``, a group config over the broker's
``group.streams.session.timeout.ms``).

A group is Kafka's StreamsGroup* records in ``__consumer_offsets`` (``records.py``). An operation
changes the group in place; the records that differ between the group before and after it are
written (``RecordedGroups``) before the answer goes out, and start-up replays them, so after a
restart (kill -9 included) a member goes on at its epoch with its tasks, static members keep their
instance, and a deleted group stays deleted; its session deadline is armed again as at a join. A
write that fails rebuilds the group from its partition and the member is told
COORDINATOR_NOT_AVAILABLE, as Kafka's runtime reverts to its last committed state. A group id never
seen is GROUP_ID_NOT_FOUND, as Kafka answers.

When targets are computed (initial delay, assignment interval) and when a member slow to revoke is
fenced: ``rebalance.py``. Its timers are armed again for a replayed group, as its sessions are.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from weir.protocol.errors import Errors, KafkaError

from ...clock import Timer
from ...config import ConfigError, parse_topic_config
from ..recorded import RecordedGroups
from . import heartbeat as hb
from . import records
from .rebalance import ASSIGNMENT_DELAYED, RebalanceTimers
from .group import JOIN_GROUP_EPOCH, LEAVE_GROUP_EPOCH, LEAVE_GROUP_STATIC_EPOCH, StreamsGroup, StreamsMember
from .topology import MISSING_INTERNAL_TOPICS, Configured, configure, from_request

if TYPE_CHECKING:
    from ...context import BrokerContext
    from ...coordinator.runtime import CoordinatorLog

log = logging.getLogger(__name__)


class StreamsGroupCoordinator(RecordedGroups):
    KIND = "streams group"
    is_group_key = staticmethod(records.is_streams_group_key)
    decode_record = staticmethod(records.decode)

    def __init__(self, context: BrokerContext, offsets_log: CoordinatorLog) -> None:
        self.context = context
        self.clock = context.clock
        self.log = offsets_log
        self.group_configs = context.group_configs
        self.groups: dict[str, StreamsGroup] = {}
        self._sessions: dict[tuple[str, str], Timer] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self.rebalance = RebalanceTimers(self.clock, self.group_configs)

    # ------------------------------------------------------------------ records

    def replay(self, record: records.StreamsGroupRecord) -> None:
        records.replay(self.groups, record)

    def arm_sessions(self, group_id: str) -> None:
        """A replayed group: its topology held against the topics again (not written: derived), and
        every member's session deadline armed."""
        group = self.groups[group_id]
        if group.topology is not None:
            topics = {name: len(t.partitions) for name, t in self.context.logs.topics.items() if not t.is_internal}
            group.configured = configure(group.topology, topics)
        for member_id, member in group.members.items():
            self._schedule(group_id, member_id)
            self.rebalance.revocation(group_id, member, self._fence_at)

    def start(self) -> None:
        """Members replayed from the log must heartbeat within their session."""
        for group_id in self.groups:
            self.arm_sessions(group_id)

    async def _write_changes(self, group_id: str, before: dict[Any, records.StreamsGroupRecord]) -> bool:
        """Write what changed in the group since ``before``; False when the write failed (the group is
        then as its partition has it)."""
        changed = records.changes(before, records.records_of(self.groups.get(group_id)))
        return await self._write(group_id, changed) if changed else True

    def _write_later(self, group_id: str, before: dict[Any, records.StreamsGroupRecord]) -> None:
        """``_write_changes`` for a change a timer made (no request waits for it)."""
        task = asyncio.get_running_loop().create_task(self._write_changes(group_id, before))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # ------------------------------------------------------------------ StreamsGroupHeartbeat

    async def heartbeat(self, request: Any, client_id: str, client_host: str) -> dict[str, Any]:
        before = records.records_of(self.groups.get(request.group_id))
        try:
            hb.validate(request)
            answer = self._heartbeat(request, client_id, client_host)
        except KafkaError as exc:
            answer = {"error_code": exc.code, "error_message": exc.message or None, "member_id": request.member_id}
        if not await self._write_changes(request.group_id, before):
            return {"error_code": Errors.COORDINATOR_NOT_AVAILABLE, "member_id": request.member_id}
        return answer

    def _heartbeat(self, request: Any, client_id: str, client_host: str) -> dict[str, Any]:
        group_id, epoch = request.group_id, request.member_epoch
        group = self.groups.get(group_id)
        if group is None:
            if epoch != JOIN_GROUP_EPOCH:
                raise KafkaError(Errors.GROUP_ID_NOT_FOUND, f"Streams group {group_id} not found.")
            group = StreamsGroup(group_id)
        if epoch in (LEAVE_GROUP_EPOCH, LEAVE_GROUP_STATIC_EPOCH):
            return self._leave(group, request)
        member, replaced = hb.find_member(group, request)
        if member is not None and epoch != JOIN_GROUP_EPOCH and replaced is None:
            hb.check_epoch(epoch, member, request)
        self.groups[group_id] = group
        if replaced is not None:
            self._cancel(group_id, replaced)
            del group.members[replaced]
            group.target[request.member_id] = group.target.pop(replaced, ({}, {}))
        updated = hb.updated_metadata(member, request, client_id, client_host)
        bump = member is None or hb.assignor_view(member) != hb.assignor_view(updated)
        if request.topology is not None:
            topology = from_request(request.topology)
            if group.topology is None or topology.epoch > group.topology.epoch:
                group.topology, bump = topology, True
        configured = self._configure(group)
        hb.check_owned_tasks(configured, request)
        if group.configured is None or configured.tasks != group.configured.tasks:
            bump = True
        assignment_configs = self._assignment_configs(group_id)
        if assignment_configs != group.assignment_configs:
            bump = True  # Kafka: "Assignment configurations changed ... Triggering rebalance."
        group.configured = configured
        was_empty = not group.members
        group.members[updated.member_id] = updated
        if bump:
            group.group_epoch += 1
            group.assignment_configs = assignment_configs
        if was_empty:
            self.rebalance.joined_empty_group(group, functools.partial(self._assign_delayed, group_id))
        delayed = self._maybe_assign(group)
        owned = hb.owned_tasks(request)
        if epoch == JOIN_GROUP_EPOCH and replaced is None:
            owned = ({}, {}, {})  # a (re-)joining member owns nothing
        moved = hb.move_member(group, group.members[updated.member_id], owned)
        group.members[moved.member_id] = moved
        self._schedule(group_id, moved.member_id)
        self.rebalance.revocation(group_id, moved, self._fence_at)
        if request.shutdown_application and group.shutdown_requested_by is None:
            group.shutdown_requested_by = moved.member_id  # every member is told, until the group empties
        return self._answer(group, moved, member, request, delayed)

    def _configure(self, group: StreamsGroup) -> Configured:
        """The topology against the topics; internal topics it lacks are created here, and count from
        the next heartbeat on (Kafka creates them as this one is answered MISSING_INTERNAL_TOPICS)."""
        if group.topology is None:
            return Configured()
        logs = self.context.logs
        configured = configure(group.topology, {name: len(t.partitions) for name, t in logs.topics.items()
                                                if not t.is_internal})
        for name, (partitions, info) in configured.to_create.items():
            try:
                overrides = {key: parse_topic_config(key, value) for key, value in info.configs}
                logs.create_topic(name, partitions, overrides)
            except (KafkaError, ConfigError, ValueError) as exc:
                log.warning("streams group %s: creating internal topic %s failed: %s", group.group_id, name, exc)
                configured.statuses = [(MISSING_INTERNAL_TOPICS, f"Internal topic {name} could not be created: {exc}")]
        return configured

    def _assignment_configs(self, group_id: str) -> tuple[tuple[str, str], ...]:
        """What the assignor is configured with, as Kafka's ``lastAssignmentConfigs`` holds it (sorted
        pairs; the tags only when set): a change rebalances."""
        replicas = self.group_configs.value(group_id, "streams.num.standby.replicas")
        configs = [("num.standby.replicas", str(replicas))]
        if tags := self._rack_tags(group_id):
            configs.append(("rack.aware.assignment.tags", ",".join(tags)))
        return tuple(configs)

    def _rack_tags(self, group_id: str) -> tuple[str, ...]:
        return tuple(self.group_configs.value(group_id, "streams.rack.aware.assignment.tags")
                     or self.context.config["group.streams.rack.aware.assignment.tags"])

    def _maybe_assign(self, group: StreamsGroup) -> str | None:
        """A new target when the group epoch moved past it and no delay holds it back (``rebalance.py``);
        else why it waits (None when nothing is to be computed)."""
        delayed = self.rebalance.delayed(group)
        if delayed is not None or group.assignment_epoch >= group.group_epoch:
            return delayed
        assert group.configured is not None
        replicas = self.group_configs.value(group.group_id, "streams.num.standby.replicas")
        live = {m.member_id: m for m in group.members.values() if m.member_epoch != LEAVE_GROUP_STATIC_EPOCH}
        group.target = hb.new_target(group, live, group.configured, replicas)
        group.assignment_epoch = group.group_epoch
        group.assignment_timestamp_ms = self.clock.now_ms()
        group.endpoint_information_epoch += 1
        return None

    def _assign_delayed(self, group_id: str) -> None:
        """The initial delay ended: the target for the members there are (they get it as they heartbeat)."""
        group = self.groups.get(group_id)
        if group is not None and group.members and group.configured is not None:
            before = records.records_of(group)
            if group.assignment_epoch >= group.group_epoch:
                # a lone member took the first join's epoch while delayed: the target moves it on
                # (Kafka 4.4.0 answers such a member epoch 2 with its tasks after the delay)
                group.group_epoch += 1
            self._maybe_assign(group)
            self._write_later(group_id, before)

    def _answer(self, group: StreamsGroup, member: StreamsMember, before: StreamsMember | None,
                request: Any, delayed: str | None = None) -> dict[str, Any]:
        group_id = group.group_id
        answer: dict[str, Any] = {
            "error_code": Errors.NONE, "member_id": member.member_id, "member_epoch": member.member_epoch,
            "heartbeat_interval_ms": self.group_configs.value(group_id, "streams.heartbeat.interval.ms"),
            "acceptable_recovery_lag": self.group_configs.value(group_id, "streams.acceptable.recovery.lag"),
            "task_offset_interval_ms": self.group_configs.value(group_id, "streams.task.offset.interval.ms"),
            "status": hb.statuses(group, member, [(ASSIGNMENT_DELAYED, delayed)] if delayed else [],
                                  self._rack_tags(group_id)),
            "endpoint_information_epoch": group.endpoint_information_epoch,
        }
        changed = (before is None or request.member_epoch == JOIN_GROUP_EPOCH or before.assigned != member.assigned
                   or before.standby != member.standby or before.warmup != member.warmup)
        if changed:
            answer["tasks"] = (member.assigned, member.standby, member.warmup)
        # Kafka's test, not "older than": the epoch is not a record, so a restarted broker counts
        # from 0 again while its members hold a later one
        if request.endpoint_information_epoch != group.endpoint_information_epoch:
            answer["endpoints"] = self.endpoints(group)
        return answer

    def endpoints(self, group: StreamsGroup) -> list[tuple[tuple[str, int], dict[str, set[int]], dict[str, set[int]]]]:
        """For interactive queries: each member endpoint's source topic partitions, active and standby."""
        configured = group.configured
        found = []
        for member in group.members.values():
            if member.user_endpoint is None or configured is None:
                continue
            views: list[dict[str, set[int]]] = [{}, {}]
            for view, tasks in zip(views, (member.assigned, member.standby), strict=True):
                for subtopology_id, partitions in tasks.items():
                    for topic, count in configured.source_partitions.get(subtopology_id, {}).items():
                        view.setdefault(topic, set()).update(p for p in partitions if p < count)
            found.append((member.user_endpoint, views[0], views[1]))
        return found

    def _leave(self, group: StreamsGroup, request: Any) -> dict[str, Any]:
        member, _ = hb.find_member(group, request)
        assert member is not None
        if request.member_epoch == LEAVE_GROUP_STATIC_EPOCH:
            # a static member keeps its tasks for its instance until its session ends
            group.members[member.member_id] = member.replace(member_epoch=LEAVE_GROUP_STATIC_EPOCH)
        else:
            self._drop(group.group_id, member.member_id, "it left the group")
        return {"error_code": Errors.NONE, "member_id": member.member_id, "member_epoch": request.member_epoch,
                "heartbeat_interval_ms": 0}

    def _fence_at(self, group_id: str, member_id: str, epoch: int, why: str) -> None:
        """The member's rebalance timeout ended: removed if still at ``epoch`` (not if it left, static)."""
        group = self.groups.get(group_id)
        member = group.members.get(member_id) if group is not None else None
        if member is not None and member.member_epoch == epoch:
            self.remove(group_id, member_id, why)

    def remove(self, group_id: str, member_id: str, why: str) -> None:
        """Remove a member now (its session ended) and write that."""
        before = records.records_of(self.groups.get(group_id))
        self._drop(group_id, member_id, why)
        self._write_later(group_id, before)

    def _drop(self, group_id: str, member_id: str, why: str) -> None:
        group = self.groups.get(group_id)
        self._cancel(group_id, member_id)
        self.rebalance.cancel_revocation(group_id, member_id)
        if group is None or member_id not in group.members:
            return
        log.info("streams group %s: member %s removed: %s", group_id, member_id, why)
        del group.members[member_id]
        group.target.pop(member_id, None)
        if group.configured is not None:
            # as Kafka: the epoch moves on and the next heartbeat computes the target; the last member
            # gone, the group is assigned as it is, and a first join assigns at once
            group.group_epoch += 1
            if not group.members:
                group.assignment_epoch, group.assignment_timestamp_ms = group.group_epoch, 0
        if not group.members:
            group.shutdown_requested_by = None

    # ------------------------------------------------------------------ admin

    async def delete(self, group_id: str) -> Errors:
        """DeleteGroups: tombstones for every record of an empty group."""
        group = self.groups.get(group_id)
        if group is None:
            return Errors.GROUP_ID_NOT_FOUND
        if group.members:
            return Errors.NON_EMPTY_GROUP
        before = records.records_of(group)
        del self.groups[group_id]
        self.rebalance.forget_group(group_id)
        if not await self._write_changes(group_id, before):
            return Errors.COORDINATOR_NOT_AVAILABLE
        return Errors.NONE

    def validate_offset_commit(self, group: StreamsGroup, member_id: str, member_epoch: int,
                               transactional: bool, partitions: Iterable[tuple[str, int]] = (),
                               api_version: int = 9) -> None:
        """Kafka 4.4's StreamsGroup.validateOffsetCommit: epoch -1 with no members is the admin client; an
        epoch older than the member's is accepted for the partitions of tasks it has held since then."""
        if member_epoch < 0 and not group.members:
            return
        if transactional and member_epoch == -1 and member_id == "":
            return
        member = group.members.get(member_id)
        if member is None:
            raise KafkaError(Errors.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {group.group_id}.")
        if not transactional and api_version < 9:
            raise KafkaError(Errors.UNSUPPORTED_VERSION, "OffsetCommit version 9 or above must be used by members "
                                                         "using the streams group protocol")
        if member_epoch == member.member_epoch:
            return
        stale = Errors.ILLEGAL_GENERATION if transactional else Errors.STALE_MEMBER_EPOCH
        if member_epoch > member.member_epoch:
            raise KafkaError(stale, f"Received member epoch {member_epoch} is newer than current member epoch "
                                    f"{member.member_epoch}.")
        subtopology_of = {}
        for sub in group.topology.subtopologies if group.topology is not None else ():
            for name in (*sub.source_topics, *(t.name for t in sub.repartition_source_topics)):
                subtopology_of[name] = sub.subtopology_id
        for name, partition in partitions:
            subtopology_id = subtopology_of.get(name)
            held_since = member.assigned_at(subtopology_id, partition) if subtopology_id is not None else None
            if held_since is None or member_epoch < held_since:
                raise KafkaError(stale, f"Task {subtopology_id}_{partition} is not assigned to the member at epoch "
                                        f"{member_epoch}.")

    def validate_offset_fetch(self, group: StreamsGroup, member_id: str | None, member_epoch: int) -> None:
        if member_epoch == -1:
            return
        member = group.members.get(member_id or "")
        if member is None:
            raise KafkaError(Errors.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {group.group_id}.")
        if member_epoch != member.member_epoch:
            raise KafkaError(Errors.STALE_MEMBER_EPOCH, f"The received member epoch {member_epoch} does not match "
                                                        f"the expected member epoch {member.member_epoch}.")

    # ------------------------------------------------------------------ sessions

    def _schedule(self, group_id: str, member_id: str) -> None:
        self._cancel(group_id, member_id)
        timeout_ms = self.group_configs.value(group_id, "streams.session.timeout.ms")
        self._sessions[(group_id, member_id)] = self.clock.call_later(
            timeout_ms / 1000, functools.partial(self.remove, group_id, member_id, "its session timed out"))

    def _cancel(self, group_id: str, member_id: str) -> None:
        timer = self._sessions.pop((group_id, member_id), None)
        if timer is not None:
            timer.cancel()

    async def close(self) -> None:
        for timer in self._sessions.values():
            timer.cancel()
        self._sessions.clear()
        self.rebalance.close()
        await asyncio.gather(*self._tasks, return_exceptions=True)
