"""ShareGroupHeartbeat (76), v1: a share group member joins (epoch 0, its own member id), heartbeats
with its epoch, and leaves (-1); the broker assigns partitions (``broker/group/share``).

With ``share.version`` below 1 the API answers UNSUPPORTED_VERSION, as Kafka's does when share
groups are not enabled. ACLs: READ on the group, DESCRIBE on each subscribed topic. A group id
held by a classic or consumer group answers GROUP_ID_NOT_FOUND ("Group g is not a share group."),
and a share group's id refuses the other protocols (ConsumerGroupHeartbeat: GROUP_ID_NOT_FOUND,
JoinGroup: INCONSISTENT_GROUP_PROTOCOL), as Kafka 4.4 answers.
"""

from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import Errors
from weir.protocol.messages import share_group_heartbeat as msg

from ..acl import model as acl
from ..dispatcher import handles
from ..features import SHARE_VERSION


@handles(ApiKey.SHARE_GROUP_HEARTBEAT, versions=(1, 1))
async def handle(context, header, request, client_host="", session=None):
    if context.features.level(SHARE_VERSION) < 1:
        return msg.RESPONSE(error_code=Errors.UNSUPPORTED_VERSION, error_message="Share groups are not enabled.")
    authorizer = context.authorizer
    if not authorizer.allows(session, acl.READ, acl.GROUP, request.group_id):
        return msg.RESPONSE(error_code=Errors.GROUP_AUTHORIZATION_FAILED)
    if request.subscribed_topic_names and authorizer.denied(session, acl.DESCRIBE, acl.TOPIC,
                                                            request.subscribed_topic_names):
        return msg.RESPONSE(error_code=Errors.TOPIC_AUTHORIZATION_FAILED)
    answer = await context.groups.share_group_heartbeat(request, header.client_id or "", client_host)
    assignment = answer.pop("assignment", None)
    response = msg.RESPONSE(**answer)
    if assignment is not None:
        response.assignment = msg.Assignment(topic_partitions=[
            msg.TopicPartitions(topic_id=topic_id, partitions=list(partitions))
            for topic_id, partitions in assignment.items()])
    return response
