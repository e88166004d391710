"""OffsetFetch (9), v1-9.

Committed offsets of a group (-1 where none). Null topics (v2+) ask for every
partition the group has offsets for. With require_stable (v7+, KIP-447) a
partition with transactional offsets still pending answers
UNSTABLE_OFFSET_COMMIT, which clients retry. v8 batches groups. v9 carries the member id and
epoch of a consumer-protocol member (KIP-848): a stale epoch answers STALE_MEMBER_EPOCH, an
unknown member UNKNOWN_MEMBER_ID; epoch -1 (admin tools) is always allowed.
"""

from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import Errors, KafkaError
from weir.protocol.messages import offset_fetch as msg

from ..acl.model import DESCRIBE, GROUP, TOPIC
from ..dispatcher import handles
from ..group.offsets import validate_group_id


@handles(ApiKey.OFFSET_FETCH, versions=(1, 9))
def handle(context, header, request, session=None):
    if header.api_version >= 8:
        return msg.RESPONSE(groups=[_group(context, group.group_id, group.topics, request.require_stable,
                                           group.member_id, group.member_epoch, session)
                                    for group in request.groups])
    answer = _group(context, request.group_id, request.topics, request.require_stable, session=session)
    return msg.RESPONSE(error_code=answer.error_code, topics=[
        msg.ResponseTopic(name=topic.name, partitions=[
            msg.ResponsePartition(partition_index=p.partition_index, committed_offset=p.committed_offset,
                                  committed_leader_epoch=p.committed_leader_epoch, metadata=p.metadata,
                                  error_code=p.error_code)
            for p in topic.partitions])
        for topic in answer.topics])


def _group(context, group_id, topics, require_stable, member_id=None, member_epoch=-1, session=None):
    authorizer = context.authorizer
    if not authorizer.allows(session, DESCRIBE, GROUP, group_id):  # ACLs, as KafkaApis checks them
        return msg.Group(group_id=group_id, topics=[], error_code=Errors.GROUP_AUTHORIZATION_FAILED)
    try:
        validate_group_id(group_id)
        consumer_group = context.groups.consumer.groups.get(group_id)
        if consumer_group is not None:
            context.groups.consumer.validate_offset_fetch(consumer_group, member_id, member_epoch)
        streams_group = context.groups.streams.groups.get(group_id)
        if streams_group is not None:  # KIP-1071: a member's epoch, as for a consumer group
            context.groups.streams.validate_offset_fetch(streams_group, member_id, member_epoch)
    except KafkaError as exc:
        return msg.Group(group_id=group_id, topics=[], error_code=exc.code)
    wanted = None if topics is None else [(t.name, index) for t in topics for index in t.partition_indexes]
    by_topic: dict[str, list] = {}
    for (topic, index), entry, code in context.offsets.fetch(group_id, wanted, require_stable):
        by_topic.setdefault(topic, []).append(msg.GroupPartition(
            partition_index=index, committed_offset=entry.offset if entry else -1,
            committed_leader_epoch=entry.leader_epoch if entry else -1,
            metadata=entry.metadata if entry else "", error_code=code))
    # Topics the principal may not DESCRIBE: left out of an all-topics answer, refused when named.
    for name in authorizer.denied(session, DESCRIBE, TOPIC, by_topic, audit_denial=topics is not None):
        parts = by_topic.pop(name)
        if topics is not None:
            by_topic[name] = [msg.GroupPartition(partition_index=p.partition_index, committed_offset=-1,
                                                 committed_leader_epoch=-1, metadata="",
                                                 error_code=Errors.TOPIC_AUTHORIZATION_FAILED) for p in parts]
    return msg.Group(group_id=group_id, error_code=Errors.NONE, topics=[
        msg.GroupTopic(name=name, partitions=parts) for name, parts in by_topic.items()])
