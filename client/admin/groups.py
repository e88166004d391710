"""Admin calls on consumer groups: list, describe, delete, and their committed offsets.

Every group call goes to the group's coordinator through the call path, which
finds it again when it moved and waits while it loads. Committed offsets are
changed as ``kafka-consumer-groups --reset-offsets`` does: an OffsetCommit with
generation -1 and no member id, which the coordinator accepts only while the
group has no active members (UNKNOWN_MEMBER_ID otherwise).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from weir.protocol.api_keys import ApiKey
from weir.protocol.consumer_protocol import decode_assignment
from weir.protocol.errors import Errors
from weir.protocol.messages import delete_groups, describe_groups, list_groups, offset_commit, offset_delete

from .. import committed
from ..cluster import GROUP
from ..errors import error_instance
from ..types import OffsetAndMetadata, TopicPartition
from .base import AdminBase, by_topic, check, retry_code
from .results import GroupDescription, GroupListing, MemberDescription


class GroupAdmin(AdminBase):
    async def list_groups(self, *, states: list[str] | None = None, types: list[str] | None = None
                          ) -> list[GroupListing]:
        """Every group on every broker (optionally only those in ``states``, ListGroups v4+, and of
        ``types``: classic, consumer, share, streams, v5+)."""
        def build(version: int) -> Any:
            if states and version < 4:
                check(Errors.UNSUPPORTED_VERSION, "this broker cannot filter groups by state")
            if types and version < 5:
                check(Errors.UNSUPPORTED_VERSION, "this broker cannot filter groups by type")
            return list_groups.REQUEST(states_filter=list(states or []), types_filter=list(types or []))

        answers = await self._every_broker(ApiKey.LIST_GROUPS, build)
        found = []
        for answer in answers.values():
            check(answer.error_code, "ListGroups")
            found += [GroupListing(g.group_id, g.protocol_type, g.group_state or None, g.group_type or None)
                      for g in answer.groups]
        return sorted(found, key=lambda g: g.group_id)

    async def describe_groups(self, group_ids: list[str]) -> dict[str, GroupDescription]:
        """State, protocol and members of each group; GroupIdNotFoundError for one that does not exist
        (the coordinator answers Dead for it, which the Java Admin turns into the same error)."""
        found = {}
        for group_id in group_ids:
            found[group_id] = await self._describe_group(group_id)
        return found

    async def _describe_group(self, group_id: str) -> GroupDescription:
        answer = await self._to_coordinator(
            GROUP, group_id, ApiKey.DESCRIBE_GROUPS, lambda _v: describe_groups.REQUEST(groups=[group_id]),
            lambda r: r.groups[0].error_code)
        group = answer.groups[0]
        check(group.error_code, f"group {group_id}: {group.error_message or ''}".rstrip(": "))
        if group.group_state == "Dead":
            raise error_instance(Errors.GROUP_ID_NOT_FOUND, f"group {group_id}", request=ApiKey.DESCRIBE_GROUPS)
        members = []
        for m in group.members:
            assignment = []
            if group.protocol_type == "consumer" and m.member_assignment:
                assignment = [TopicPartition(t, p) for t, ps in sorted(decode_assignment(m.member_assignment).items())
                              for p in sorted(ps)]
            members.append(MemberDescription(m.member_id, m.group_instance_id, m.client_id, m.client_host,
                                             assignment))
        return GroupDescription(group_id, group.group_state, group.protocol_type, group.protocol_data, members,
                                await self.cluster.coordinator(GROUP, group_id))

    async def delete_groups(self, group_ids: list[str]) -> None:
        """Delete empty groups and their offsets (NonEmptyGroupError, GroupIdNotFoundError)."""
        for group_id in group_ids:
            # the request is built within this iteration (awaited here): group_id is current
            answer = await self._to_coordinator(
                GROUP, group_id, ApiKey.DELETE_GROUPS,
                lambda _v: delete_groups.REQUEST(groups_names=[group_id]),  # noqa: B023
                lambda r: r.results[0].error_code)
            check(answer.results[0].error_code, f"group {group_id}")

    async def list_group_offsets(self, group_id: str, partitions: list[TopicPartition] | None = None
                                 ) -> dict[TopicPartition, OffsetAndMetadata]:
        """The group's committed offsets (all of them when ``partitions`` is None); partitions
        without a committed offset are left out."""
        request = committed.request(group_id, partitions, require_stable=True)
        answer = await self._to_coordinator(
            GROUP, group_id, ApiKey.OFFSET_FETCH, lambda _v: request, lambda r: retry_code(committed.answer_codes(r)),
            highest=committed.ONE_GROUP_VERSION)
        return committed.read_answer(answer, group_id)

    async def alter_group_offsets(self, group_id: str, offsets: Mapping[TopicPartition, OffsetAndMetadata | int]
                                  ) -> None:
        """Commit offsets for an inactive group (generation -1, no member), as a reset does."""
        wanted = {tp: o if isinstance(o, OffsetAndMetadata) else OffsetAndMetadata(o) for tp, o in offsets.items()}
        request = offset_commit.REQUEST(group_id=group_id, generation_id_or_member_epoch=-1, member_id="", topics=[
            offset_commit.RequestTopic(name=t, partitions=[
                offset_commit.RequestPartition(partition_index=p, committed_offset=wanted[TopicPartition(t, p)].offset,
                                               committed_leader_epoch=wanted[TopicPartition(t, p)].leader_epoch,
                                               committed_metadata=wanted[TopicPartition(t, p)].metadata)
                for p in ps])
            for t, ps in by_topic(wanted).items()])

        answer = await self._to_coordinator(GROUP, group_id, ApiKey.OFFSET_COMMIT, lambda _v: request, lambda r: (
            retry_code(p.error_code for t in r.topics for p in t.partitions)))
        for topic in answer.topics:
            for p in topic.partitions:
                check(p.error_code, f"group {group_id} {topic.name}-{p.partition_index}")

    async def delete_group_offsets(self, group_id: str, partitions: list[TopicPartition]) -> None:
        """Delete committed offsets of partitions the group no longer consumes
        (GroupSubscribedToTopicError for a topic it still subscribes to)."""
        request = offset_delete.REQUEST(group_id=group_id, topics=[
            offset_delete.RequestTopic(name=t, partitions=[offset_delete.RequestPartition(partition_index=p)
                                                           for p in ps])
            for t, ps in by_topic(partitions).items()])

        answer = await self._to_coordinator(GROUP, group_id, ApiKey.OFFSET_DELETE, lambda _v: request,
                                            lambda r: retry_code([r.error_code, *(
                                                p.error_code for t in r.topics for p in t.partitions)]))
        check(answer.error_code, f"group {group_id}")
        for topic in answer.topics:
            for p in topic.partitions:
                check(p.error_code, f"group {group_id} {topic.name}-{p.partition_index}")
