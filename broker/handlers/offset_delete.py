"""OffsetDelete (47), v0: drop a group's committed offsets for partitions it no longer consumes."""

from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import Errors, KafkaError
from weir.protocol.messages import offset_delete as msg

from ..acl import model as acl
from ..dispatcher import handles
from ..group import admin
from ..group.offsets import validate_group_id


@handles(ApiKey.OFFSET_DELETE, versions=(0, 0))
async def handle(context, header, request, session=None):
    authorizer = context.authorizer
    if not authorizer.allows(session, acl.DELETE, acl.GROUP, request.group_id):  # ACLs
        return msg.RESPONSE(error_code=Errors.GROUP_AUTHORIZATION_FAILED, topics=[])
    denied = authorizer.denied(session, acl.READ, acl.TOPIC, [topic.name for topic in request.topics])
    asked = [(topic.name, p.partition_index) for topic in request.topics for p in topic.partitions
             if topic.name not in denied]
    try:
        validate_group_id(request.group_id)
        errors = await admin.delete_offsets(context.groups, request.group_id, asked)
    except KafkaError as exc:
        return msg.RESPONSE(error_code=exc.code, topics=[])
    by_topic: dict[str, list] = {}
    for topic in request.topics:
        if topic.name in denied:
            by_topic[topic.name] = [msg.ResponsePartition(partition_index=p.partition_index,
                                                          error_code=Errors.TOPIC_AUTHORIZATION_FAILED)
                                    for p in topic.partitions]
    for (topic, index), error in errors.items():
        by_topic.setdefault(topic, []).append(msg.ResponsePartition(partition_index=index, error_code=error))
    return msg.RESPONSE(error_code=Errors.NONE, topics=[
        msg.ResponseTopic(name=name, partitions=parts) for name, parts in by_topic.items()])
