"""ConsumerGroupHeartbeat as one operation: (group, request) -> (records, response). Pure.

Kafka's ``GroupMetadataManager.consumerGroupHeartbeat``, in its order:
1. validate the request (Kafka's checks and messages) and find or create the member;
2. a new member, a changed subscription or changed subscribed topics bump the group epoch;
3. a group epoch above the target assignment epoch computes a new target (the assignor);
4. the member reconciles one step towards its target (``reconcile.py``).
Leaving (epoch -1) removes the member and bumps the epoch; a static member's -2 keeps its place and
partitions until it rejoins with the same instance id or its session ends.

Nothing here changes the group: the records returned do, when the coordinator replays them.
A member that rejoins with epoch 0 under a member id the group still holds (the consumer keeps its
id for life, KIP-1082) keeps its epoch and partitions and is sent them again, as Kafka 4.3 answers.
"""

from __future__ import annotations

import uuid
from collections import Counter
from dataclasses import dataclass, field

from weir.protocol.errors import Errors, KafkaError

from . import records as r
from .assignors import ASSIGNORS, MemberSpec
from .group import ConsumerGroup, topic_partitions
from .member import (JOIN_GROUP_EPOCH, LEAVE_GROUP_EPOCH, LEAVE_GROUP_STATIC_EPOCH, Assignment,
                     ConsumerGroupMember, clean, is_subset)
from .reconcile import reconcile
from .subscription import TopicsView, compile_regex, member_topics, metadata_hash


@dataclass(frozen=True)
class Settings:
    max_size: int
    assignors: list[str]


@dataclass
class Outcome:
    records: list[r.GroupRecord] = field(default_factory=list)
    member_id: str = ""
    member_epoch: int = 0
    assignment: Assignment | None = None   # None: not sent
    member: ConsumerGroupMember | None = None  # the member after the records, for its timers


def validate(request, version: int, settings: Settings) -> None:
    def invalid(message):
        raise KafkaError(Errors.INVALID_REQUEST, message)
    if not request.group_id:
        invalid("GroupId can't be empty.")
    if request.instance_id == "":
        invalid("InstanceId can't be empty.")
    if request.rack_id == "":
        invalid("RackId can't be empty.")
    epoch = request.member_epoch
    if version >= 1 and not request.member_id:
        invalid("MemberId can't be empty.")
    if epoch > 0 or epoch == LEAVE_GROUP_EPOCH:
        if not request.member_id:
            invalid("MemberId can't be empty.")
    elif epoch == JOIN_GROUP_EPOCH:
        if request.rebalance_timeout_ms == -1:
            invalid("RebalanceTimeoutMs must be provided in first request.")
        if request.topic_partitions is None or request.topic_partitions:
            invalid("TopicPartitions must be empty when (re-)joining.")
        if request.subscribed_topic_names is None and request.subscribed_topic_regex is None:
            invalid("Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining.")
    elif epoch == LEAVE_GROUP_STATIC_EPOCH:
        if not request.member_id:
            invalid("MemberId can't be empty.")
        if request.instance_id is None:
            invalid("InstanceId can't be null.")
    else:
        invalid("MemberEpoch is invalid.")
    if request.subscribed_topic_regex is not None:
        compile_regex(request.subscribed_topic_regex)
    if request.server_assignor is not None and request.server_assignor not in settings.assignors:
        raise KafkaError(Errors.UNSUPPORTED_ASSIGNOR, f"ServerAssignor {request.server_assignor} is not supported. "
                                                      f"Supported assignors: {', '.join(settings.assignors)}.")


def heartbeat(group: ConsumerGroup | None, request, settings: Settings, topics: TopicsView,
              client_id: str, client_host: str, classic: dict | None = None) -> Outcome:
    """``classic``: the classic_* fields of a member joining through JoinGroup (``classic_members.py``)."""
    epoch = request.member_epoch
    group_id = request.group_id
    if group is None:
        if epoch != JOIN_GROUP_EPOCH:
            raise KafkaError(Errors.GROUP_ID_NOT_FOUND, f"Consumer group {group_id} not found.")
        group = ConsumerGroup(group_id)
    if epoch in (LEAVE_GROUP_EPOCH, LEAVE_GROUP_STATIC_EPOCH):
        return leave(group, request.member_id, request.instance_id, epoch, topics)
    member_id = request.member_id or str(uuid.uuid4())
    owned = None if request.topic_partitions is None else clean(
        {tp.topic_id: set(tp.partitions) for tp in request.topic_partitions})
    out = Outcome(member_id=member_id)
    if len(group.members) >= settings.max_size and member_id not in group.members:
        raise KafkaError(Errors.GROUP_MAX_SIZE_REACHED,
                         f"The consumer group has reached its maximum capacity of {settings.max_size} members.")
    member, replaced = _find_member(group, member_id, request.instance_id, epoch, owned, out.records,
                                    joining_classic=classic is not None)
    is_new = member_id not in group.members and replaced is None

    updated = member.replace(
        instance_id=request.instance_id if request.instance_id is not None else member.instance_id,
        rack_id=request.rack_id if request.rack_id is not None else member.rack_id,
        rebalance_timeout_ms=(request.rebalance_timeout_ms if request.rebalance_timeout_ms != -1
                              else member.rebalance_timeout_ms),
        server_assignor=request.server_assignor if request.server_assignor is not None else member.server_assignor,
        subscribed_topic_names=(tuple(request.subscribed_topic_names) if request.subscribed_topic_names is not None
                                else member.subscribed_topic_names),
        subscribed_topic_regex=(request.subscribed_topic_regex if request.subscribed_topic_regex is not None
                                else member.subscribed_topic_regex),
        client_id=client_id, client_host=client_host, **(classic or {}))
    # as Kafka's hasMemberSubscriptionChanged: a new member bumps the epoch by its subscription (from
    # none), so one joining with an empty subscription does not
    bump = (updated.subscribed_topic_names != member.subscribed_topic_names
            or updated.subscribed_topic_regex != member.subscribed_topic_regex)
    if updated != member or is_new:
        out.records.append(member_metadata_record(group_id, updated))

    members = {m: other for m, other in group.members.items() if m != replaced}
    members[member_id] = updated
    current_target = {m: target for m, target in group.target.items() if m != replaced}
    if replaced is not None:
        current_target[member_id] = group.target.get(replaced, {})
    subscribed = _subscribed(members, topics)
    new_hash = metadata_hash(set().union(*subscribed.values()) if subscribed else set(), topics)
    group_epoch = group.group_epoch
    if bump or new_hash != group.metadata_hash:
        group_epoch += 1
        out.records.append(r.GroupRecord(r.GROUP_METADATA, group_id,
                                         value=r.GroupMetadataValue(epoch=group_epoch, metadata_hash=new_hash)))

    if group_epoch > group.target_epoch:
        target = _new_target(group_id, current_target, members, subscribed, topics, settings, group_epoch,
                             out.records)
        target_epoch = group_epoch
    else:
        target, target_epoch = current_target, group.target_epoch

    # partitions of a member this one replaces are free for it (the replaced one's records go first)
    released = set(group.members[replaced].owned_partitions()) if replaced in group.members else set()

    def partition_epoch(topic_id: bytes, partition: int) -> int:
        return -1 if (topic_id, partition) in released else group.partition_epoch(topic_id, partition)

    reconciled = reconcile(updated, target_epoch, target.get(member_id, {}), partition_epoch, owned)
    if reconciled != updated or epoch == JOIN_GROUP_EPOCH:
        out.records.append(current_assignment_record(group_id, reconciled))
    out.member, out.member_epoch = reconciled, reconciled.member_epoch
    full_request = epoch == JOIN_GROUP_EPOCH or (request.rebalance_timeout_ms != -1 and owned is not None and (
        request.subscribed_topic_names is not None or request.subscribed_topic_regex is not None))
    if full_request or reconciled.assigned != member.assigned:
        out.assignment = reconciled.assigned
    return out


def _find_member(group, member_id, instance_id, epoch, owned, records,
                 joining_classic=False) -> tuple[ConsumerGroupMember, str | None]:
    """The member the heartbeat is from, and the member id it replaces (a static member's old id).
    A classic member (joining, or the one in place) replaces a static member without waiting for it
    to leave with epoch -2, as Kafka lets it: a classic consumer restarts without leaving."""
    if instance_id is None:
        member = group.members.get(member_id)
        if member is None:
            if epoch != JOIN_GROUP_EPOCH:
                raise KafkaError(Errors.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group "
                                                           f"{group.group_id}.")
            return ConsumerGroupMember(member_id), None
        if epoch != JOIN_GROUP_EPOCH:  # a member rejoining with its id (KIP-1082) keeps its place, as in Kafka
            _check_epoch(member, epoch, owned)
        return member, None
    existing = group.static_member(instance_id)
    if epoch == JOIN_GROUP_EPOCH:
        if existing is not None and existing.member_id == member_id:
            return existing, None
        if existing is None:
            return group.members.get(member_id) or ConsumerGroupMember(member_id), None
        if (existing.member_epoch != LEAVE_GROUP_STATIC_EPOCH and existing.member_id != member_id
                and not joining_classic and not existing.uses_classic_protocol):
            raise KafkaError(Errors.UNRELEASED_INSTANCE_ID,
                             f"Static member {member_id} with instance id {instance_id} cannot join the group "
                             f"because the instance id is owned by {existing.member_id} member.")
        # the instance came back: a new member id takes over the old member's place and partitions
        replacement = existing.replace(member_id=member_id, member_epoch=0, previous_member_epoch=0)
        records.extend(removal_records(group.group_id, existing.member_id))
        records.append(member_metadata_record(group.group_id, replacement))
        kept_target = topic_partitions(group.target.get(existing.member_id, {}), r.TopicPartition)
        records.append(r.GroupRecord(r.TARGET_ASSIGNMENT_MEMBER, group.group_id, member_id,
                                     r.TargetAssignmentMemberValue(topic_partitions=kept_target)))
        records.append(current_assignment_record(group.group_id, replacement))
        return replacement, existing.member_id
    if existing is None:
        raise KafkaError(Errors.UNKNOWN_MEMBER_ID, f"Instance id {instance_id} is unknown.")
    if existing.member_id != member_id:
        raise KafkaError(Errors.FENCED_INSTANCE_ID, f"The static member {member_id} with instance id {instance_id} "
                                                    f"is fenced by existing member {existing.member_id}.")
    _check_epoch(existing, epoch, owned)
    return existing, None


def _check_epoch(member: ConsumerGroupMember, epoch: int, owned: Assignment | None) -> None:
    if epoch > member.member_epoch:
        raise KafkaError(Errors.FENCED_MEMBER_EPOCH, f"The consumer group member has a greater member epoch ({epoch})"
                         f" than the one known by the group coordinator ({member.member_epoch}). The member must "
                         "abandon all its partitions and rejoin.")
    if epoch < member.member_epoch and (epoch != member.previous_member_epoch or owned is None
                                         or not is_subset(owned, member.assigned)):
        # the previous epoch is accepted when the answer that bumped it may have been lost
        raise KafkaError(Errors.FENCED_MEMBER_EPOCH, f"The consumer group member has a smaller member epoch ({epoch})"
                         f" than the one known by the group coordinator ({member.member_epoch}). The member must "
                         "abandon all its partitions and rejoin.")


def leave(group: ConsumerGroup, member_id: str, instance_id: str | None, epoch: int, topics: TopicsView) -> Outcome:
    out = Outcome(member_id=member_id, member_epoch=epoch)
    if instance_id is None:
        member = group.members.get(member_id)
        if member is None:
            raise KafkaError(Errors.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group "
                                                       f"{group.group_id}.")
    else:
        member = group.static_member(instance_id)
        if member is None:
            raise KafkaError(Errors.UNKNOWN_MEMBER_ID, f"Instance id {instance_id} is unknown.")
        if member.member_id != member_id:
            raise KafkaError(Errors.FENCED_INSTANCE_ID, f"The static member {member_id} with instance id "
                             f"{instance_id} is fenced by existing member {member.member_id}.")
        if epoch == LEAVE_GROUP_STATIC_EPOCH:
            leaving = member.replace(member_epoch=LEAVE_GROUP_STATIC_EPOCH, pending_revocation={})
            out.records.append(current_assignment_record(group.group_id, leaving))
            out.member = leaving
            return out
    out.records = fence(group, member.member_id, topics)
    return out


def fence(group: ConsumerGroup, member_id: str, topics: TopicsView) -> list[r.GroupRecord]:
    """Remove a member (it left, or its session or revocation deadline passed) and bump the epoch."""
    records = removal_records(group.group_id, member_id)
    others = {m: member for m, member in group.members.items() if m != member_id}
    subscribed = _subscribed(others, topics)
    new_hash = metadata_hash(set().union(*subscribed.values()) if subscribed else set(), topics)
    records.append(r.GroupRecord(r.GROUP_METADATA, group.group_id,
                                 value=r.GroupMetadataValue(epoch=group.group_epoch + 1, metadata_hash=new_hash)))
    return records


def removal_records(group_id: str, member_id: str) -> list[r.GroupRecord]:
    return [r.GroupRecord(r.CURRENT_MEMBER_ASSIGNMENT, group_id, member_id),
            r.GroupRecord(r.TARGET_ASSIGNMENT_MEMBER, group_id, member_id),
            r.GroupRecord(r.MEMBER_METADATA, group_id, member_id)]


def _subscribed(members: dict[str, ConsumerGroupMember], topics: TopicsView) -> dict[str, set[str]]:
    return {member_id: member_topics(m.subscribed_topic_names, m.subscribed_topic_regex, topics)
            for member_id, m in members.items()}


def _new_target(group_id, current, members, subscribed, topics, settings, group_epoch, records):
    assignor = ASSIGNORS[preferred_assignor(members.values(), settings)]
    specs = {member_id: MemberSpec(frozenset(topics.by_name[name].topic_id for name in subscribed[member_id]),
                                   current.get(member_id, {}))
             for member_id in members}
    partitions = {topics.by_name[name].topic_id: topics.by_name[name].partitions
                  for names in subscribed.values() for name in names}
    target = assignor(specs, partitions)
    for member_id, assignment in sorted(target.items()):
        if assignment != current.get(member_id, {}) or member_id not in current:
            records.append(r.GroupRecord(r.TARGET_ASSIGNMENT_MEMBER, group_id, member_id,
                                         r.TargetAssignmentMemberValue(
                                             topic_partitions=topic_partitions(assignment, r.TopicPartition))))
    records.append(r.GroupRecord(r.TARGET_ASSIGNMENT_METADATA, group_id,
                                 value=r.TargetAssignmentMetadataValue(assignment_epoch=group_epoch)))
    return target


def preferred_assignor(members, settings: Settings) -> str:
    """The assignor most members ask for (ties: the configured order), else the first configured."""
    votes = Counter(m.server_assignor for m in members if m.server_assignor in settings.assignors)
    if not votes:
        return settings.assignors[0]
    return max(votes, key=lambda name: (votes[name], -settings.assignors.index(name)))


def member_metadata_record(group_id: str, member: ConsumerGroupMember) -> r.GroupRecord:
    return r.GroupRecord(r.MEMBER_METADATA, group_id, member.member_id, r.MemberMetadataValue(
        instance_id=member.instance_id, rack_id=member.rack_id, client_id=member.client_id,
        client_host=member.client_host, subscribed_topic_names=list(member.subscribed_topic_names),
        subscribed_topic_regex=member.subscribed_topic_regex, rebalance_timeout_ms=member.rebalance_timeout_ms,
        server_assignor=member.server_assignor, classic_member_metadata=None if member.classic_protocols is None else
        r.ClassicMemberMetadata(session_timeout_ms=member.classic_session_timeout_ms, supported_protocols=[
            r.ClassicProtocol(name=name, metadata=metadata) for name, metadata in member.classic_protocols])))


def current_assignment_record(group_id: str, member: ConsumerGroupMember) -> r.GroupRecord:
    return r.GroupRecord(r.CURRENT_MEMBER_ASSIGNMENT, group_id, member.member_id, r.CurrentMemberAssignmentValue(
        member_epoch=member.member_epoch, previous_member_epoch=member.previous_member_epoch,
        state=int(member.state), assigned_partitions=_with_epochs(member, member.assigned),
        partitions_pending_revocation=_with_epochs(member, member.pending_revocation)))


def _with_epochs(member: ConsumerGroupMember, assignment: Assignment) -> list:
    entries = topic_partitions(assignment, r.TopicPartitions)
    for entry in entries:
        entry.assignment_epochs = [member.assigned_at(entry.topic_id, p) for p in entry.partitions]
    return entries
