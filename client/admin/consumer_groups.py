"""Admin calls on consumer-protocol groups (KIP-848): ConsumerGroupDescribe, as the Java Admin's
``describeConsumerGroups`` sends it.

Each group is asked of its coordinator with ConsumerGroupDescribe: the group and target assignment
epochs, the assignor, and per member its epoch, its current and target assignments (topic names as
the broker gives them) and, from v1, whether it speaks the consumer protocol or joined through
JoinGroup (KIP-1099). A group the coordinator answers GROUP_ID_NOT_FOUND for ("not a consumer
group": a classic group, or none at all), or a broker without the API, is described with
DescribeGroups instead, as the Java Admin falls back.
"""

from __future__ import annotations

from typing import Any

from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import Errors
from weir.protocol.messages import consumer_group_describe as cgd

from ..cluster import GROUP
from ..errors import UnsupportedVersionError
from ..types import TopicPartition
from .base import check
from .groups import GroupAdmin
from .results import GroupDescription, MemberDescription

CONSUMER_MEMBER = 1  # KIP-1099's member type: 0 classic, 1 consumer


class ConsumerGroupAdmin(GroupAdmin):
    async def describe_consumer_groups(self, group_ids: list[str]) -> dict[str, GroupDescription]:
        """Consumer groups of either protocol, each with its members' assignments (and, for a
        consumer-protocol group, the epochs and target assignments); GroupIdNotFoundError for none."""
        return {group_id: await self._describe_consumer_group(group_id) for group_id in group_ids}

    async def _describe_consumer_group(self, group_id: str) -> GroupDescription:
        try:
            answer = await self._to_coordinator(
                GROUP, group_id, ApiKey.CONSUMER_GROUP_DESCRIBE,
                lambda _v: cgd.REQUEST(group_ids=[group_id], include_authorized_operations=False),
                lambda r: r.groups[0].error_code)
        except UnsupportedVersionError:
            return await self._describe_group(group_id)
        group = answer.groups[0]
        if group.error_code == Errors.GROUP_ID_NOT_FOUND:
            return await self._describe_group(group_id)
        check(group.error_code, f"group {group_id}: {group.error_message or ''}".rstrip(": "))
        members = [MemberDescription(
            m.member_id, m.instance_id, m.client_id, m.client_host, _partitions(m.assignment),
            member_epoch=m.member_epoch, target_assignment=_partitions(m.target_assignment),
            upgraded=None if m.member_type < 0 else m.member_type == CONSUMER_MEMBER) for m in group.members]
        return GroupDescription(group_id, group.group_state, "consumer", group.assignor_name, members,
                                await self.cluster.coordinator(GROUP, group_id), group_type="consumer",
                                group_epoch=group.group_epoch, target_assignment_epoch=group.assignment_epoch)


def _partitions(assignment: Any) -> list[TopicPartition]:
    return sorted(TopicPartition(t.topic_name, p) for t in assignment.topic_partitions for p in t.partitions)
