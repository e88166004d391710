"""Admin calls on share groups (KIP-932), as the Java Admin makes them for ``kafka-share-groups``:
describe (ShareGroupDescribe), the share-partitions' start offsets and lag
(DescribeShareGroupOffsets), moving them (AlterShareGroupOffsets, which the coordinator accepts
only while the group has no members) and dropping them (DeleteShareGroupOffsets). Every call goes
to the group's coordinator. Listing and deleting share groups are ``list_groups(types=["share"])``
and ``delete_groups``.
"""

from __future__ import annotations

from collections.abc import Mapping

from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import Errors
from weir.protocol.messages import alter_share_group_offsets as alter
from weir.protocol.messages import delete_share_group_offsets as delete
from weir.protocol.messages import describe_share_group_offsets as describe_offsets
from weir.protocol.messages import share_group_describe

from ..cluster import GROUP
from ..errors import BrokerResponseError, error_instance
from ..types import TopicPartition
from .base import by_topic, check, retry_code
from .groups import GroupAdmin
from .results import SharePartitionOffset, ShareGroupDescription, ShareMemberDescription


class ShareGroupAdmin(GroupAdmin):
    async def describe_share_groups(self, group_ids: list[str]) -> dict[str, ShareGroupDescription]:
        """State, epochs and members of each share group; GroupIdNotFoundError for a group that does
        not exist or is not a share group (the coordinator's answer)."""
        return {group_id: await self._describe_share_group(group_id) for group_id in group_ids}

    async def _describe_share_group(self, group_id: str) -> ShareGroupDescription:
        answer = await self._to_coordinator(
            GROUP, group_id, ApiKey.SHARE_GROUP_DESCRIBE,
            lambda _v: share_group_describe.REQUEST(group_ids=[group_id], include_authorized_operations=False),
            lambda r: r.groups[0].error_code)
        group = answer.groups[0]
        check(group.error_code, group.error_message or f"group {group_id}")
        members = [ShareMemberDescription(
            m.member_id, m.client_id, m.client_host, m.member_epoch, list(m.subscribed_topic_names),
            sorted(TopicPartition(t.topic_name, p) for t in m.assignment.topic_partitions for p in t.partitions),
            m.rack_id) for m in group.members]
        return ShareGroupDescription(group_id, group.group_state, group.group_epoch, group.assignment_epoch,
                                     group.assignor_name, members, await self.cluster.coordinator(GROUP, group_id))

    async def list_share_group_offsets(self, group_id: str, partitions: list[TopicPartition] | None = None
                                       ) -> dict[TopicPartition, SharePartitionOffset]:
        """Each share-partition's start offset, leader epoch and lag (every partition the group has
        state for when ``partitions`` is None)."""
        topics = None if partitions is None else [
            describe_offsets.RequestTopic(topic_name=t, partitions=ps) for t, ps in by_topic(partitions).items()]
        request = describe_offsets.REQUEST(groups=[describe_offsets.RequestGroup(group_id=group_id, topics=topics)])
        answer = await self._to_coordinator(
            GROUP, group_id, ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, lambda _v: request,
            lambda r: retry_code([r.groups[0].error_code, *(p.error_code for t in r.groups[0].topics
                                                            for p in t.partitions)]))
        group = answer.groups[0]
        check(group.error_code, group.error_message or f"group {group_id}")
        found = {}
        for topic in group.topics:
            for p in topic.partitions:
                check(p.error_code, p.error_message or f"group {group_id} {topic.topic_name}-{p.partition_index}")
                found[TopicPartition(topic.topic_name, p.partition_index)] = SharePartitionOffset(
                    p.start_offset, p.leader_epoch, p.lag)
        return dict(sorted(found.items()))

    async def alter_share_group_offsets(self, group_id: str, offsets: Mapping[TopicPartition, int]) -> None:
        """Set start offsets of a share group with no members (GroupNotEmptyError otherwise)."""
        request = alter.REQUEST(group_id=group_id, topics=[
            alter.RequestTopic(topic_name=t, partitions=[
                alter.RequestPartition(partition_index=p, start_offset=offsets[TopicPartition(t, p)]) for p in ps])
            for t, ps in by_topic(offsets).items()])
        answer = await self._to_coordinator(
            GROUP, group_id, ApiKey.ALTER_SHARE_GROUP_OFFSETS, lambda _v: request,
            lambda r: retry_code([r.error_code, *(p.error_code for t in r.responses for p in t.partitions)]))
        check(answer.error_code, answer.error_message or f"group {group_id}")
        for topic in answer.responses:
            for p in topic.partitions:
                check(p.error_code, p.error_message or f"group {group_id} {topic.topic_name}-{p.partition_index}")

    async def delete_share_group_offsets(self, group_id: str, topics: list[str]
                                         ) -> dict[str, BrokerResponseError | None]:
        """Drop the group's state for whole topics; per topic, None or the error it got (the tool
        prints one row per topic). A group-level error (NonEmptyGroupError, ...) is raised."""
        request = delete.REQUEST(group_id=group_id, topics=[delete.RequestTopic(topic_name=t) for t in topics])
        answer = await self._to_coordinator(
            GROUP, group_id, ApiKey.DELETE_SHARE_GROUP_OFFSETS, lambda _v: request,
            lambda r: retry_code([r.error_code, *(t.error_code for t in r.responses)]))
        check(answer.error_code, answer.error_message or f"group {group_id}")
        return {t.topic_name: None if t.error_code == Errors.NONE else error_instance(
            t.error_code, t.error_message or f"topic {t.topic_name}", request=ApiKey.DELETE_SHARE_GROUP_OFFSETS)
            for t in answer.responses}

