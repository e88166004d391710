"""AlterShareGroupOffsets (91), v0: set share-partitions' start offsets; what was in flight is
forgotten, and the next read starts there (kafka-share-groups --reset-offsets).

The group must have no members: NON_EMPTY_GROUP ("The group is not empty.") for the whole request
otherwise. A group Weir does not know is altered all the same, and an unknown topic or partition
answers UNKNOWN_TOPIC_OR_PARTITION for it, as Kafka 4.4 answers. A classic or consumer group's id:
GROUP_ID_NOT_FOUND. ACLs: READ on the group, READ on each topic.
"""

from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import Errors
from weir.protocol.messages import alter_share_group_offsets as msg

from ..acl import model as acl
from ..dispatcher import handles
from ..share.groups_admin import refusal

NOT_HOSTED = "This server does not host this topic-partition."


@handles(ApiKey.ALTER_SHARE_GROUP_OFFSETS, versions=(0, 0))
async def handle(context, header, request, session=None):
    error, message = refusal(context, session, request.group_id, acl.READ)
    if error != Errors.NONE:
        return msg.RESPONSE(error_code=error, error_message=message, responses=[])
    responses = []
    for wanted in request.topics:
        topic = context.logs.topics.get(wanted.topic_name)
        topic_id = topic.topic_id if topic is not None else bytes(16)
        refused = not context.authorizer.allows(session, acl.READ, acl.TOPIC, wanted.topic_name)
        partitions = []
        for partition in wanted.partitions:
            answer = msg.ResponsePartition(partition_index=partition.partition_index, error_code=Errors.NONE)
            if refused:
                answer.error_code = Errors.TOPIC_AUTHORIZATION_FAILED
            elif topic is None or not 0 <= partition.partition_index < len(topic.partitions):
                answer.error_code, answer.error_message = Errors.UNKNOWN_TOPIC_OR_PARTITION, NOT_HOSTED
            else:
                await context.share_partitions.alter_offset(request.group_id, topic_id, partition.partition_index,
                                                            partition.start_offset)
            partitions.append(answer)
        responses.append(msg.ResponseTopic(topic_name=wanted.topic_name, topic_id=topic_id, partitions=partitions))
    return msg.RESPONSE(error_code=Errors.NONE, responses=responses)
