"""StreamsGroupHeartbeat, Kafka's ``GroupMetadataManager.streamsGroupHeartbeat`` in its order.

Validate the request; find or create the group (a join, epoch 0, creates it) and the member (a
static member replaces the instance it succeeds once that one left with epoch -2); a joining
member brings the topology: the first, or one of a newer epoch, becomes the group's. Then the
group epoch is bumped when a member came or changed what the assignor sees (process, rack,
tags), when the topology changed, or when the topics changed what the topology makes of them
(tasks per subtopology) or the assignment configs changed; a bumped epoch computes a new target
assignment (when ``rebalance.py`` lets it). Last the member moves towards its target
(``reconcile.py``). The answer carries the tasks when they changed,
the group's statuses and, when the member's endpoint epoch is old, where every task lives.
"""

from __future__ import annotations

from typing import Any

from weir.protocol.errors import Errors, KafkaError

from .assignor import MemberSpec, Tasks, assign
from .reconcile import Owned, reconcile
from .group import JOIN_GROUP_EPOCH, LEAVE_GROUP_EPOCH, LEAVE_GROUP_STATIC_EPOCH, StreamsGroup, StreamsMember
from .topology import MISSING_CLIENT_TAGS, SHUTDOWN_APPLICATION, STALE_TOPOLOGY, Configured


def _invalid(message: str) -> KafkaError:
    return KafkaError(Errors.INVALID_REQUEST, message)


def validate(request: Any) -> None:
    """Kafka's throwIfStreamsGroupHeartbeatRequestIsInvalid."""
    if not request.group_id:
        raise _invalid("GroupId can't be empty.")
    if not request.member_id:
        raise _invalid("MemberId can't be empty.")
    if request.instance_id == "":
        raise _invalid("InstanceId can't be empty.")
    if request.rack_id == "":
        raise _invalid("RackId can't be empty.")
    epoch = request.member_epoch
    if epoch == JOIN_GROUP_EPOCH:
        if request.rebalance_timeout_ms == -1:
            raise _invalid("RebalanceTimeoutMs must be provided in first request.")
        if request.topology is None:
            raise _invalid("Topology must be non-null when (re-)joining.")
        for name in ("active_tasks", "standby_tasks", "warmup_tasks"):
            if getattr(request, name):
                label = "".join(part.capitalize() for part in name.split("_"))
                raise _invalid(f"{label} must be empty when (re-)joining.")
        if request.process_id is None:
            raise _invalid("ProcessId can't be null when joining.")
    elif epoch in (LEAVE_GROUP_EPOCH, LEAVE_GROUP_STATIC_EPOCH):
        if epoch == LEAVE_GROUP_STATIC_EPOCH and request.instance_id is None:
            raise _invalid("InstanceId can't be null.")
    elif epoch > 0:
        if request.topology is not None:
            raise _invalid("Topology can only be provided when (re-)joining.")
        given = [getattr(request, n) is None for n in ("active_tasks", "standby_tasks", "warmup_tasks")]
        if len(set(given)) > 1:
            raise _invalid("If one of ActiveTasks, StandbyTasks and WarmupTasks is null, all must be null.")
    else:
        raise _invalid(f"MemberEpoch is {epoch}, but must be greater than or equal to -2.")
    seen = set()
    for offset in request.task_offsets or ():  # Kafka's MemberTaskOffsets.update
        if (offset.subtopology_id, offset.partition) in seen:
            raise _invalid(f"Task offsets contain a duplicate entry for subtopology {offset.subtopology_id} and "
                           f"partition {offset.partition}.")
        seen.add((offset.subtopology_id, offset.partition))


def check_owned_tasks(configured: Configured, request: Any) -> None:
    """Kafka's throwIfRequestContainsInvalidTasks, once the topology is ready."""
    if not configured.tasks:
        return
    for kind in (request.active_tasks, request.standby_tasks, request.warmup_tasks):
        for task in kind or ():
            count = configured.tasks.get(task.subtopology_id)
            if count is None:
                raise _invalid(f"Subtopology {task.subtopology_id} does not exist in the topology.")
            for partition in task.partitions:
                if not 0 <= partition < count:
                    raise _invalid(f"Task {partition} for subtopology {task.subtopology_id} is invalid. Number of "
                                   f"tasks for this subtopology: {count}")


def tasks_of(wire: list[Any] | None) -> Tasks | None:
    if wire is None:
        return None
    return {t.subtopology_id: frozenset(t.partitions) for t in wire if t.partitions}


def check_epoch(epoch: int, member: StreamsMember, request: Any = None) -> None:
    """Kafka's throwIfStreamsGroupMemberEpochIsInvalid: the previous epoch is accepted only while the
    tasks the member reports are all still its own (its answer at the current epoch was lost)."""
    if epoch > member.member_epoch:
        raise KafkaError(Errors.FENCED_MEMBER_EPOCH, f"The streams group member has a greater member epoch ({epoch})"
                                                     f" than the one known by the group coordinator "
                                                     f"({member.member_epoch}). The member must abandon all its "
                                                     "partitions and rejoin.")
    owned = owned_tasks(request) if request is not None else None
    still_own = owned is None or all(parts <= mine.get(s, frozenset()) for kind, mine in zip(
        owned, (member.assigned, member.standby, member.warmup), strict=True) for s, parts in kind.items())
    if epoch < member.member_epoch and (epoch != member.previous_member_epoch or not still_own):
        raise KafkaError(Errors.FENCED_MEMBER_EPOCH, f"The streams group member has a smaller member epoch ({epoch})"
                                                     f" than the one known by the group coordinator "
                                                     f"({member.member_epoch}). The member must abandon all its "
                                                     "partitions and rejoin.")


def find_member(group: StreamsGroup, request: Any) -> tuple[StreamsMember | None, str | None]:
    """The member the request speaks for, and the id of a static member it replaces."""
    member_id, epoch, instance_id = request.member_id, request.member_epoch, request.instance_id
    member = group.members.get(member_id)
    if instance_id is not None:
        static = group.static_member(instance_id)
        if epoch == JOIN_GROUP_EPOCH and static is not None and static.member_id != member_id:
            if static.member_epoch != LEAVE_GROUP_STATIC_EPOCH:
                raise KafkaError(Errors.UNRELEASED_INSTANCE_ID, f"Static member {member_id} with instance id "
                                                                f"{instance_id} cannot join the group because the "
                                                                f"instance id is owned by {static.member_id} member.")
            return static.replace(member_id=member_id), static.member_id
        if epoch != JOIN_GROUP_EPOCH and static is not None and static.member_id != member_id:
            raise KafkaError(Errors.FENCED_INSTANCE_ID, f"Static member {member_id} with instance id {instance_id} "
                                                        f"was fenced by member {static.member_id}.")
    if member is None and epoch != JOIN_GROUP_EPOCH:
        raise KafkaError(Errors.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {group.group_id}.")
    return member, None


def updated_metadata(member: StreamsMember | None, request: Any, client_id: str, client_host: str) -> StreamsMember:
    base = member or StreamsMember(request.member_id)
    endpoint = request.user_endpoint
    changes: dict[str, Any] = {"client_id": client_id, "client_host": client_host}
    for name in ("instance_id", "rack_id", "process_id"):
        if getattr(request, name) is not None:
            changes[name] = getattr(request, name)
    if request.rebalance_timeout_ms != -1:
        changes["rebalance_timeout_ms"] = request.rebalance_timeout_ms
    if endpoint is not None:
        changes["user_endpoint"] = (endpoint.host, endpoint.port)
    if request.client_tags is not None:
        changes["client_tags"] = tuple((kv.key, kv.value) for kv in request.client_tags)
    if request.topology is not None:
        changes["topology_epoch"] = request.topology.epoch
    for name in ("task_offsets", "task_end_offsets"):
        if getattr(request, name) is not None:
            changes[name] = tuple((o.subtopology_id, o.partition, o.offset) for o in getattr(request, name))
    return base.replace(**changes)


def assignor_view(member: StreamsMember) -> tuple[Any, ...]:
    """What the assignor sees of a member: a change bumps the group epoch."""
    return (member.process_id, member.rack_id, member.client_tags)


def new_target(group: StreamsGroup, members: dict[str, StreamsMember], configured: Configured,
               standby_replicas: int) -> dict[str, tuple[Tasks, Tasks]]:
    specs = {m.member_id: MemberSpec(m.process_id, {**m.assigned, **_merge(m.assigned, m.pending_revocation)},
                                     m.standby, {(s, p): offset for s, p, offset in m.task_offsets})
             for m in members.values()}
    stateful = frozenset(sub.subtopology_id for sub in group.topology.subtopologies
                         if sub.state_changelog_topics) if group.topology is not None else frozenset()
    return assign(specs, configured.tasks, standby_replicas, stateful)


def _merge(a: Tasks, b: Tasks) -> Tasks:
    return {s: a.get(s, frozenset()) | b.get(s, frozenset()) for s in set(a) | set(b)}


def owned_tasks(request: Any) -> Owned | None:
    """The member's active, standby and warm-up tasks as its heartbeat reports them (None: unchanged)."""
    kinds = (request.active_tasks, request.standby_tasks, request.warmup_tasks)
    if any(kind is None for kind in kinds):
        return None
    return tasks_of(kinds[0]) or {}, tasks_of(kinds[1]) or {}, tasks_of(kinds[2]) or {}


def move_member(group: StreamsGroup, member: StreamsMember, owned: Owned | None) -> StreamsMember:
    """Towards the target (``reconcile.py``); Kafka 4.4's targets carry no warm-up tasks."""
    active, standby = group.target.get(member.member_id, ({}, {}))
    return reconcile(group, member, group.assignment_epoch, (active, standby, {}), owned)


def statuses(group: StreamsGroup, member: StreamsMember, delayed: list[tuple[int, str]],
             rack_tags: tuple[str, ...] = ()) -> list[tuple[int, str]]:
    """Kafka's order: a stale topology, a delayed assignment, the topology's own, a member's request to
    shut the application down, then client tags the
    group's ``rack.aware.assignment.tags`` ask for and the member lacks (the handler drops that one
    for v0, as Kafka does)."""
    found = []
    if group.topology is not None and member.topology_epoch < group.topology.epoch:
        found.append((STALE_TOPOLOGY, f"The member's topology epoch {member.topology_epoch} is behind the group's "
                                      f"topology epoch {group.topology.epoch}."))
    found += delayed + (list(group.configured.statuses) if group.configured is not None else [])
    if group.shutdown_requested_by is not None:
        found.append((SHUTDOWN_APPLICATION, f"Streams group member {group.shutdown_requested_by} encountered a fatal "
                                            "error and requested a shutdown for the entire application."))
    missing = [tag for tag in rack_tags if tag not in dict(member.client_tags)]
    if missing:
        found.append((MISSING_CLIENT_TAGS, f"Missing required client tags for rack-aware standby assignment: "
                                           f"[{', '.join(missing)}]. Configure them via 'client.tag.<tagKey>' in "
                                           "your Streams config."))
    return found
