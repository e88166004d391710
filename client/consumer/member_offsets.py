"""Committed offsets of a consumer-protocol member (KIP-848): OffsetCommit v9 and OffsetFetch v9,
both carrying the member id and member epoch, which the coordinator checks.

As the Java consumer's CommitRequestManager: STALE_MEMBER_EPOCH and UNKNOWN_MEMBER_ID refuse a
commit with CommitFailedError (the member's epoch moved on, or it left the group); OffsetFetch
sends the member id and epoch only while the member is in the group (epoch > 0), as Java does, so
a consumer that has not joined yet (or was fenced) still reads the group's offsets.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import Errors
from weir.protocol.messages import offset_commit, offset_fetch

from ..calls import Coordinator, first_retriable
from ..cluster import GROUP, Cluster
from ..errors import raise_for
from ..types import OffsetAndMetadata, TopicPartition
from ..committed import committed_offsets
from .group import CommitFailedError

#: OffsetCommit answers that refuse a member's commit for good (rejoining is the membership's business).
_REFUSED = frozenset({Errors.STALE_MEMBER_EPOCH, Errors.UNKNOWN_MEMBER_ID, Errors.FENCED_MEMBER_EPOCH})


class MemberOffsets:
    """Mixed into ConsumerGroupMembership, which owns these attributes."""

    cluster: Cluster
    group_id: str
    group_instance_id: str | None
    member_id: str
    member_epoch: int
    require_stable: bool

    async def commit(self, offsets: dict[TopicPartition, OffsetAndMetadata]) -> None:
        if not offsets:
            return
        by_topic: dict[str, list[Any]] = {}
        for tp, offset in sorted(offsets.items()):
            by_topic.setdefault(tp.topic, []).append(offset_commit.RequestPartition(
                partition_index=tp.partition, committed_offset=offset.offset,
                committed_leader_epoch=offset.leader_epoch, committed_metadata=offset.metadata))
        epoch, member_id = self.member_epoch, self.member_id
        answer = await self._group_call(
            ApiKey.OFFSET_COMMIT, lambda _v: offset_commit.REQUEST(
                group_id=self.group_id, generation_id_or_member_epoch=epoch, member_id=member_id,
                group_instance_id=self.group_instance_id,
                topics=[offset_commit.RequestTopic(name=name, partitions=parts) for name, parts in by_topic.items()]),
            lambda r: first_retriable(p.error_code for t in r.topics for p in t.partitions), lowest=9)
        for topic in answer.topics:
            for p in topic.partitions:
                where = f"{topic.name}-{p.partition_index}"
                if p.error_code in _REFUSED:
                    raise CommitFailedError(f"commit of {where} by member {member_id} at epoch {epoch} refused: "
                                            f"{Errors(p.error_code).name}")
                raise_for(p.error_code, f"OffsetCommit {where}", request=ApiKey.OFFSET_COMMIT)

    async def fetch_committed(self, partitions: list[TopicPartition]) -> dict[TopicPartition, OffsetAndMetadata]:
        """Committed offsets; waits out transactional commits still pending (UNSTABLE_OFFSET_COMMIT,
        retriable: the call path asks again until it settles)."""
        by_topic: dict[str, list[int]] = {}
        for tp in partitions:
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        in_group = self.member_epoch > 0
        request = offset_fetch.REQUEST(require_stable=self.require_stable, groups=[offset_fetch.RequestGroup(
            group_id=self.group_id, member_id=self.member_id if in_group else None,
            member_epoch=self.member_epoch if in_group else -1,
            topics=[offset_fetch.RequestGroupTopic(name=n, partition_indexes=ps) for n, ps in by_topic.items()])])

        def codes(r: Any) -> int:
            return first_retriable([g.error_code for g in r.groups] + [
                p.error_code for g in r.groups for t in g.topics for p in t.partitions])
        answer = await self._group_call(ApiKey.OFFSET_FETCH, lambda _v: request, codes, lowest=9)
        group = answer.groups[0]
        raise_for(group.error_code, f"OffsetFetch {self.group_id}", request=ApiKey.OFFSET_FETCH)
        return committed_offsets(group.topics, self.group_id)

    async def _group_call(self, api_key: ApiKey, build: Callable[[int], Any], error_of: Callable[[Any], int], *,
                          lowest: int) -> Any:
        """To the group coordinator through the call path, at version ``lowest`` or above (the first that
        carries member epochs): a broker without it cannot serve a consumer-protocol member."""
        def checked(version: int) -> Any:
            if version < lowest:
                raise_for(Errors.UNSUPPORTED_VERSION, f"{api_key.name} v{lowest}+ is needed by the consumer protocol",
                          request=api_key)
            return build(version)
        return await self.cluster.call(Coordinator(GROUP, self.group_id), api_key, checked, error_of=error_of,
                                       highest=9)
