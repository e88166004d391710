"""Classic members in a consumer group: KIP-848's online migration, as Kafka 4's GroupMetadataManager does it.

A consumer that still speaks JoinGroup/SyncGroup/Heartbeat/LeaveGroup (``group.protocol=classic``,
embedded protocol type "consumer") joining a consumer group becomes one of its members, served by
the same state machine as consumer-protocol members (Kafka's classicGroupJoinToConsumerGroup):

- JoinGroup reads the member's subscription (topics, owned partitions) from its protocol metadata,
  runs the heartbeat operation (``heartbeat.py``) with the owned partitions as its report, and
  answers at once: generation = the member epoch after reconciliation, the member's first
  protocol, no leader (every classic member is a follower; the broker assigns).
- SyncGroup answers the member's assigned partitions (ConsumerProtocolAssignment); a target
  assignment epoch past the member's, unless it is revoking, is REBALANCE_IN_PROGRESS.
- Heartbeat answers REBALANCE_IN_PROGRESS while the member must rejoin: the target assignment
  epoch moved past its epoch, it must revoke partitions, or partitions it waits for were released
  (the target's epoch, as Kafka's: a group epoch bumped by a member leaving asks no rejoin until
  a heartbeat has computed the new target).
- LeaveGroup removes it and bumps the group epoch.

The member's classic session timeout replaces the group's, and its rebalance timeout bounds the time
from a REBALANCE_IN_PROGRESS answer to its JoinGroup and from its JoinGroup to its SyncGroup, as in
Kafka (the coordinator's rejoin and sync deadlines); the conversions between a classic group and a
consumer group (upgrade and downgrade) are ``conversion.py``'s.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from types import SimpleNamespace
from typing import TYPE_CHECKING

from weir.protocol.consumer_protocol import MemberSubscription, decode_subscription, encode_assignment
from weir.protocol.errors import Errors, KafkaError

from ..classic import CONSUMER_PROTOCOL_TYPE, JoinResult, SyncResult
from . import heartbeat as op
from .group import ConsumerGroup
from .member import ConsumerGroupMember, MemberState
from .subscription import TopicsView

if TYPE_CHECKING:
    from .coordinator import ConsumerGroupCoordinator


def subscription_of(protocols: Sequence[tuple[str, bytes]]) -> MemberSubscription:
    """The subscription every protocol of a member carries (they share it, as Kafka assumes)."""
    try:
        return decode_subscription(protocols[0][1])
    except Exception:  # construct raises its own errors for malformed bytes
        raise KafkaError(Errors.INCONSISTENT_GROUP_PROTOCOL, "The embedded consumer protocol is malformed.") \
            from None


def owned_by_id(owned: dict[str, list[int]], topics: TopicsView) -> list[SimpleNamespace]:
    return [SimpleNamespace(topic_id=topics.by_name[name].topic_id, partitions=sorted(parts))
            for name, parts in sorted(owned.items()) if name in topics.by_name and parts]


def assigned_by_name(member: ConsumerGroupMember, topics: TopicsView) -> dict[str, list[int]]:
    return {topics.by_id[topic_id].name: sorted(parts) for topic_id, parts in member.assigned.items()
            if topic_id in topics.by_id}


class ClassicMembers:
    """The classic APIs for members of a consumer group; state changes go through the coordinator."""

    def __init__(self, coordinator: ConsumerGroupCoordinator) -> None:
        self.coordinator = coordinator

    async def join(self, group: ConsumerGroup, member_id: str, instance_id: str | None, protocol_type: str,
                   protocols: list[tuple[str, bytes]], session_timeout_ms: int, rebalance_timeout_ms: int,
                   client_id: str, client_host: str, require_known_member_id: bool) -> JoinResult:
        coordinator = self.coordinator
        if protocol_type != CONSUMER_PROTOCOL_TYPE or not protocols:
            raise KafkaError(Errors.INCONSISTENT_GROUP_PROTOCOL,
                             f"Group {group.group_id} only accepts the consumer embedded protocol.")
        unknown = not member_id
        member_id = member_id or str(uuid.uuid4())
        _check_common_protocol(group, member_id, protocols)
        if unknown and instance_id is None and require_known_member_id:
            return JoinResult(Errors.MEMBER_ID_REQUIRED, member_id=member_id)
        subscription = subscription_of(protocols)
        topics = TopicsView.of(coordinator.context.logs)
        known = group.members.get(member_id)  # an id it was given with MEMBER_ID_REQUIRED is not known yet
        request = SimpleNamespace(
            group_id=group.group_id, member_id=member_id, member_epoch=0 if known is None else known.member_epoch,
            instance_id=instance_id, rack_id=subscription.rack_id or None, rebalance_timeout_ms=rebalance_timeout_ms,
            subscribed_topic_names=list(subscription.topics), subscribed_topic_regex=None, server_assignor=None,
            topic_partitions=owned_by_id(subscription.owned, topics))
        classic = {"classic_session_timeout_ms": session_timeout_ms, "classic_protocols": tuple(protocols)}
        outcome = op.heartbeat(group, request, coordinator.settings, topics, client_id, client_host, classic)
        if not await coordinator.apply(group.group_id, outcome.records):
            return JoinResult(Errors.COORDINATOR_NOT_AVAILABLE, member_id=member_id)
        member = outcome.member
        assert member is not None  # a join always leaves the member in the group
        coordinator.schedule(group.group_id, member)
        coordinator.expect_sync(group.group_id, member_id, rebalance_timeout_ms)
        return JoinResult(Errors.NONE, member_id, member.member_epoch, protocols[0][0], "")

    def sync(self, group: ConsumerGroup, generation: int, member_id: str, instance_id: str | None) -> SyncResult:
        member = self._member(group, member_id, instance_id)
        self._check_generation(member, generation)
        if group.target_epoch > member.member_epoch and member.state != MemberState.UNREVOKED_PARTITIONS:
            self.coordinator.expect_rejoin(group.group_id, member)
            raise KafkaError(Errors.REBALANCE_IN_PROGRESS, f"A new rebalance is triggered in group "
                                                           f"{group.group_id} and member {member_id} should rejoin.")
        self.coordinator.synced(group.group_id, member_id)
        self.coordinator.schedule(group.group_id, member)
        topics = TopicsView.of(self.coordinator.context.logs)
        return SyncResult(Errors.NONE, encode_assignment(assigned_by_name(member, topics)))

    def heartbeat(self, group: ConsumerGroup, generation: int, member_id: str, instance_id: str | None) -> Errors:
        member = self._member(group, member_id, instance_id)
        self._check_generation(member, generation)
        self.coordinator.schedule(group.group_id, member)
        if (member.member_epoch < group.target_epoch or member.state == MemberState.UNREVOKED_PARTITIONS
                or (member.state == MemberState.UNRELEASED_PARTITIONS and not _waits_for_unreleased(group, member))):
            self.coordinator.expect_rejoin(group.group_id, member)
            return Errors.REBALANCE_IN_PROGRESS
        return Errors.NONE

    def leave(self, group: ConsumerGroup, member_id: str, instance_id: str | None) -> Errors:
        try:
            if instance_id is None:
                member = self._member(group, member_id, None)
            else:
                static = group.static_member(instance_id)
                if static is None or not static.uses_classic_protocol:
                    raise KafkaError(Errors.UNKNOWN_MEMBER_ID)
                if member_id and static.member_id != member_id:
                    raise KafkaError(Errors.FENCED_INSTANCE_ID)
                member = static
        except KafkaError as exc:
            return exc.error
        self.coordinator.remove(group.group_id, member.member_id, "left the group")
        return Errors.NONE

    @staticmethod
    def _member(group: ConsumerGroup, member_id: str, instance_id: str | None) -> ConsumerGroupMember:
        if instance_id is None:
            member = group.members.get(member_id)
        else:
            member = group.static_member(instance_id)
            if member is not None and member.member_id != member_id:
                raise KafkaError(Errors.FENCED_INSTANCE_ID, f"Static member {member_id} with instance id "
                                                            f"{instance_id} is fenced by {member.member_id}.")
        if member is None or not member.uses_classic_protocol:
            raise KafkaError(Errors.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group "
                                                       f"{group.group_id}.")
        return member

    @staticmethod
    def _check_generation(member: ConsumerGroupMember, generation: int) -> None:
        if generation != member.member_epoch:
            raise KafkaError(Errors.ILLEGAL_GENERATION, f"The request generation id {generation} is not equal to "
                                                        f"the member epoch {member.member_epoch}.")


def _check_common_protocol(group: ConsumerGroup, member_id: str, protocols: Sequence[tuple[str, bytes]]) -> None:
    """Kafka's supportsClassicProtocols: one of the member's protocols is one every other classic member has."""
    others = [{name for name, _ in m.classic_protocols or ()} for m in group.members.values()
              if m.uses_classic_protocol and m.member_id != member_id]
    if others and not any(all(name in names for names in others) for name, _ in protocols):
        raise KafkaError(Errors.INCONSISTENT_GROUP_PROTOCOL, f"Member {member_id}'s protocols are not supported.")


def _waits_for_unreleased(group: ConsumerGroup, member: ConsumerGroupMember) -> bool:
    """A partition of its target that it does not have yet is still owned by another member."""
    for topic_id, partitions in group.target.get(member.member_id, {}).items():
        held = member.assigned.get(topic_id, frozenset())
        if any(p not in held and group.partition_epoch(topic_id, p) != -1 for p in partitions):
            return True
    return False
