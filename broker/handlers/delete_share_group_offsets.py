"""DeleteShareGroupOffsets (92), v0: forget a share group's state for whole topics; their next read
starts at ``share.auto.offset.reset`` again (kafka-share-groups --delete-offsets).

The group must have no members: NON_EMPTY_GROUP ("The group is not empty.") otherwise; an unknown
topic answers UNKNOWN_TOPIC_OR_PARTITION for it; an unknown group is answered without errors, as
Kafka 4.4 answers. A classic or consumer group's id: GROUP_ID_NOT_FOUND. ACLs: DELETE on the
group, READ on each topic.
"""

from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import Errors
from weir.protocol.messages import delete_share_group_offsets as msg

from ..acl import model as acl
from ..dispatcher import handles
from ..share.groups_admin import refusal
from .alter_share_group_offsets import NOT_HOSTED


@handles(ApiKey.DELETE_SHARE_GROUP_OFFSETS, versions=(0, 0))
async def handle(context, header, request, session=None):
    error, message = refusal(context, session, request.group_id, acl.DELETE)
    if error != Errors.NONE:
        return msg.RESPONSE(error_code=error, error_message=message, responses=[])
    responses, deleted = [], set()
    for wanted in request.topics:
        topic = context.logs.topics.get(wanted.topic_name)
        answer = msg.ResponseTopic(topic_name=wanted.topic_name,
                                   topic_id=topic.topic_id if topic is not None else bytes(16), error_code=Errors.NONE)
        if not context.authorizer.allows(session, acl.READ, acl.TOPIC, wanted.topic_name):
            answer.error_code = Errors.TOPIC_AUTHORIZATION_FAILED
        elif topic is None:
            answer.error_code, answer.error_message = Errors.UNKNOWN_TOPIC_OR_PARTITION, NOT_HOSTED
        else:
            deleted.add(topic.topic_id)
        responses.append(answer)
    if deleted:
        await context.share_partitions.delete_group(request.group_id, deleted)
    return msg.RESPONSE(error_code=Errors.NONE, responses=responses)
