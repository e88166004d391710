"""Converting a group between the classic and the consumer protocol, as Kafka 4 does online.

``group.consumer.migration.policy`` (Kafka's names: bidirectional, the default; upgrade;
downgrade; disabled) says which way is allowed.

Upgrade (Kafka's convertToConsumerGroup): a ConsumerGroupHeartbeat for a classic group whose
members use the "consumer" embedded protocol. Every classic member becomes a consumer-group member
that keeps speaking the classic protocol (``classic_members.py``), at member epoch = the group's
generation, owning the partitions of its current assignment; the group epoch and the target
assignment epoch are that generation and the target is the current assignment. So nothing moves
until the joining member bumps the group epoch, and then only as reconciliation moves it.
The records: the classic group's tombstone, then the consumer group's records.

Downgrade (Kafka's convertToClassicGroup): when the last consumer-protocol member of a consumer
group leaves (or is fenced) and classic members remain. The classic group gets generation = the
group epoch before that member left, the first remaining member as leader, each member's protocols and its assigned
partitions as its assignment; it then rebalances at once, so the classic members rejoin and a
leader assigns. The records: the consumer group's tombstones, then the classic group's record.
"""

from __future__ import annotations

from weir.protocol.consumer_protocol import decode_assignment, decode_subscription, encode_assignment

from ..classic import CONSUMER_PROTOCOL_TYPE, ClassicGroup, GroupState, Member
from . import records as r
from .classic_members import assigned_by_name
from .group import ConsumerGroup, topic_partitions
from .heartbeat import current_assignment_record, member_metadata_record, removal_records
from .member import ConsumerGroupMember, MemberState, clean
from .subscription import TopicsView, member_topics, metadata_hash

POLICIES = ("disabled", "upgrade", "downgrade", "bidirectional")


def upgrade_allowed(policy: str) -> bool:
    return policy in ("upgrade", "bidirectional")


def downgrade_allowed(policy: str) -> bool:
    return policy in ("downgrade", "bidirectional")


def can_upgrade(classic: ClassicGroup, policy: str, max_size: int) -> bool:
    return (upgrade_allowed(policy) and classic.protocol_type == CONSUMER_PROTOCOL_TYPE
            and classic.protocol_name is not None and len(classic.members) <= max_size)


def to_consumer_group(classic: ClassicGroup, topics: TopicsView) -> list[r.GroupRecord]:
    """The records that make a classic group a consumer group of classic members (raises on bad metadata)."""
    group_id, epoch, protocol = classic.group_id, classic.generation, classic.protocol_name or ""
    records, subscribed = [], set()
    members = []
    for old in classic.members.values():
        subscription = decode_subscription(old.metadata(protocol))
        assigned = clean({topics.by_name[name].topic_id: set(parts)
                          for name, parts in decode_assignment(old.assignment).items() if name in topics.by_name})
        member = ConsumerGroupMember(
            old.member_id, instance_id=old.group_instance_id, rack_id=subscription.rack_id or None,
            client_id=old.client_id, client_host=old.client_host,
            subscribed_topic_names=tuple(subscription.topics), rebalance_timeout_ms=old.rebalance_timeout_ms,
            member_epoch=epoch, previous_member_epoch=epoch, state=MemberState.STABLE, assigned=assigned,
            classic_session_timeout_ms=old.session_timeout_ms, classic_protocols=tuple(old.protocols))
        subscribed |= member_topics(member.subscribed_topic_names, None, topics)
        members.append(member)
        records.append(member_metadata_record(group_id, member))
    records.append(r.GroupRecord(r.GROUP_METADATA, group_id, value=r.GroupMetadataValue(
        epoch=epoch, metadata_hash=metadata_hash(subscribed, topics))))
    for member in members:
        records.append(r.GroupRecord(r.TARGET_ASSIGNMENT_MEMBER, group_id, member.member_id,
                                     r.TargetAssignmentMemberValue(
                                         topic_partitions=topic_partitions(member.assigned, r.TopicPartition))))
    records.append(r.GroupRecord(r.TARGET_ASSIGNMENT_METADATA, group_id,
                                 value=r.TargetAssignmentMetadataValue(assignment_epoch=epoch)))
    records.extend(current_assignment_record(group_id, member) for member in members)
    return records


def can_downgrade(group: ConsumerGroup, policy: str, max_size: int) -> bool:
    """Only classic members remain (at least one), and the policy and the classic group size allow it."""
    return (bool(group.members) and all(m.uses_classic_protocol for m in group.members.values())
            and downgrade_allowed(policy) and len(group.members) <= max_size)


def to_classic_group(group: ConsumerGroup, topics: TopicsView, now_ms: int,
                     generation: int) -> tuple[list[r.GroupRecord], ClassicGroup]:
    """The consumer group's tombstones and the classic group that replaces it (Stable, to rebalance next)."""
    records = []
    for member_id in group.members:
        records.extend(removal_records(group.group_id, member_id))
    records += [r.GroupRecord(r.TARGET_ASSIGNMENT_METADATA, group.group_id),
                r.GroupRecord(r.GROUP_METADATA, group.group_id)]
    classic = ClassicGroup(group.group_id, now_ms)
    classic.generation = generation
    classic.protocol_type = CONSUMER_PROTOCOL_TYPE
    for member in group.members.values():
        protocols = list(member.classic_protocols or ())
        classic.add(Member(member.member_id, member.instance_id, member.client_id, member.client_host,
                           member.rebalance_timeout_ms, member.classic_session_timeout_ms or 0,
                           CONSUMER_PROTOCOL_TYPE, protocols,
                           encode_assignment(assigned_by_name(member, topics))))
    classic.protocol_name = classic.select_protocol()
    classic.state = GroupState.STABLE
    return records, classic
