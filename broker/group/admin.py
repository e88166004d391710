"""What admin tools ask of the group coordinator: DescribeGroups, ListGroups,
DeleteGroups and OffsetDelete, with Kafka's answers for classic groups."""

from __future__ import annotations

from dataclasses import dataclass

from weir.protocol.errors import Errors, KafkaError

from .classic import CONSUMER_PROTOCOL_TYPE, ClassicGroup, GroupState
from .consumer.subscription import TopicsView, member_topics
from .coordinator import GroupCoordinator
from .storage import group_key
from .offsets import TopicPartition

GROUP_TYPE = "classic"


@dataclass(frozen=True)
class MemberSummary:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    metadata: bytes
    assignment: bytes


@dataclass(frozen=True)
class GroupSummary:
    error: Errors
    state: str
    protocol_type: str
    protocol: str
    members: list[MemberSummary]


def describe(groups: GroupCoordinator, group_id: str) -> GroupSummary:
    """A missing group is described as Dead with no members (DescribeGroups before v6)."""
    group = groups.groups.get(group_id)
    if group is None:
        return GroupSummary(Errors.NONE, GroupState.DEAD.value, "", "", [])
    stable = group.is_in(GroupState.STABLE)
    # member metadata and assignments are only meaningful once a generation is in place
    members = [MemberSummary(m.member_id, m.group_instance_id, m.client_id, m.client_host,
                             m.metadata(group.protocol_name) if stable and group.protocol_name else b"",
                             m.assignment if stable else b"")
               for m in group.members.values()]
    return GroupSummary(Errors.NONE, group.state.value, group.protocol_type or "",
                        group.protocol_name if stable and group.protocol_name else "", members)


def list_groups(groups: GroupCoordinator, states: list[str], types: list[str]) -> list[ClassicGroup]:
    """Live groups, filtered by state and type names (case-insensitive, as Kafka compares them)."""
    wanted_states = {s.lower() for s in states}
    wanted_types = {t.lower() for t in types}
    if wanted_types and GROUP_TYPE not in wanted_types:
        return []
    return [group for group in groups.groups.values()
            if not group.is_in(GroupState.DEAD)
            and (not wanted_states or group.state.value.lower() in wanted_states)]


async def delete_group(groups: GroupCoordinator, group_id: str) -> Errors:
    """Remove an empty group and its offsets (tombstones for both)."""
    if group_id in groups.share.groups:  # KIP-932: its records and its share-partitions' state
        return await groups.share.delete(group_id)
    if group_id in groups.streams.groups:  # KIP-1071: the group, then its offsets
        error = await groups.streams.delete(group_id)
        if error == Errors.NONE:
            await groups.offsets.delete(group_id, list(groups.offsets.committed.get(group_id, {})))
        return error
    consumer_group = groups.consumer.groups.get(group_id)
    if consumer_group is not None:  # KIP-848
        if consumer_group.members:
            return Errors.NON_EMPTY_GROUP
        await groups.offsets.delete(group_id, list(groups.offsets.committed.get(group_id, {})))
        await groups.consumer.delete(group_id)
        return Errors.NONE
    group = groups.groups.get(group_id)
    if group is None or group.is_in(GroupState.DEAD):
        return Errors.GROUP_ID_NOT_FOUND
    if not group.is_in(GroupState.EMPTY):
        return Errors.NON_EMPTY_GROUP
    group.transition_to(GroupState.DEAD, groups.clock.now_ms())
    try:
        committed = list(groups.offsets.committed.get(group_id, {}))
        await groups.offsets.delete(group_id, committed, also=[(group_key(group_id), None)])
    except Exception:
        group.state = GroupState.EMPTY  # nothing was deleted; the group stays as it was
        raise
    groups.groups.pop(group_id, None)
    return Errors.NONE


async def delete_offsets(groups: GroupCoordinator, group_id: str,
                         partitions: list[TopicPartition]) -> dict[TopicPartition, Errors]:
    """OffsetDelete: refused per partition while the group's members subscribe to its topic."""
    consumer_group = groups.consumer.groups.get(group_id)
    group = groups.groups.get(group_id)
    subscribed: set[str] = set()
    if consumer_group is not None:  # KIP-848: topics named or matched by a member's regex
        topics = TopicsView.of(groups.context.logs)
        for member in consumer_group.members.values():
            subscribed |= member_topics(member.subscribed_topic_names, member.subscribed_topic_regex, topics)
    elif group is None or group.is_in(GroupState.DEAD):
        raise KafkaError(Errors.GROUP_ID_NOT_FOUND)
    elif not group.is_in(GroupState.EMPTY):
        if group.protocol_type != CONSUMER_PROTOCOL_TYPE:
            raise KafkaError(Errors.NON_EMPTY_GROUP, "only a consumer group's offsets can go while it has members")
        # subscriptions that cannot be read count as no subscription, as in Kafka
        subscribed = group.subscribed_topics() or set()
    errors = {tp: Errors.GROUP_SUBSCRIBED_TO_TOPIC if tp[0] in subscribed else Errors.NONE for tp in partitions}
    committed = groups.offsets.committed.get(group_id, {})
    await groups.offsets.delete(group_id, [tp for tp, error in errors.items()
                                           if error == Errors.NONE and tp in committed])
    return errors
