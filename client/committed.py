"""A group's committed offsets as OffsetFetch reads them: one request and one reading of the answer.

The classic consumer (its group's starting positions) and the Admin (``list_group_offsets``) send
the same v7-layout request for one group (v8 and later batch groups in another layout: one group
is all either asks); the consumer-protocol member sends v9's groups layout with its epoch
(consumer/member_offsets.py) and reads each group's topics with ``committed_offsets`` too. Each
caller routes the request itself (its own deadline and its own idea of a retriable answer).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from weir.protocol.api_keys import ApiKey
from weir.protocol.messages import offset_fetch

from .errors import raise_for
from .types import OffsetAndMetadata, TopicPartition

#: The highest OffsetFetch version whose request names one group (``request`` below).
ONE_GROUP_VERSION = 7


def by_topic(partitions: Iterable[TopicPartition]) -> dict[str, list[int]]:
    """Partition indexes per topic, in the order first seen."""
    grouped: dict[str, list[int]] = {}
    for tp in partitions:
        grouped.setdefault(tp.topic, []).append(tp.partition)
    return grouped


def request(group_id: str, partitions: Iterable[TopicPartition] | None, *, require_stable: bool) -> Any:
    """OffsetFetch (v7 at most) for ``partitions`` of ``group_id``, or every partition it committed (None).
    ``require_stable``: wait out (UNSTABLE_OFFSET_COMMIT, retriable) offsets of a transaction completing."""
    return offset_fetch.REQUEST(group_id=group_id, require_stable=require_stable, topics=None if partitions is None
                                else [offset_fetch.RequestTopic(name=topic, partition_indexes=indexes)
                                      for topic, indexes in by_topic(partitions).items()])


def answer_codes(answer: Any) -> list[int]:
    """Every error code of a v7 answer, the group's first: the caller's ``error_of`` picks from them."""
    return [answer.error_code, *(p.error_code for t in answer.topics for p in t.partitions)]


def read_answer(answer: Any, group_id: str) -> dict[TopicPartition, OffsetAndMetadata]:
    """The committed offsets of a v7 answer; the group's error, or a partition's, is raised."""
    raise_for(answer.error_code, f"OffsetFetch {group_id}", request=ApiKey.OFFSET_FETCH)
    return committed_offsets(answer.topics, group_id)


def committed_offsets(topics: Any, group_id: str) -> dict[TopicPartition, OffsetAndMetadata]:
    """The committed offsets of an answer's topics (any version's layout); an error on a partition
    is raised, a partition with nothing committed (-1) left out."""
    found = {}
    for topic in topics:
        for p in topic.partitions:
            raise_for(p.error_code, f"OffsetFetch {group_id} {topic.name}-{p.partition_index}",
                      request=ApiKey.OFFSET_FETCH)
            if p.committed_offset >= 0:
                found[TopicPartition(topic.name, p.partition_index)] = OffsetAndMetadata(
                    p.committed_offset, p.metadata or "", p.committed_leader_epoch)
    return found
