"""ConsumerGroupHeartbeat (68), v0-1: the consumer group protocol (KIP-848).

Joining (epoch 0), heartbeating with the member epoch and owned partitions, and leaving (-1; -2
for a static member coming back) are one API; the broker computes assignments and hands each
member its partitions step by step (``broker/group/consumer``). v1 adds regex subscriptions and
requires the member id from the client (KIP-1082); v0 members get one from the broker.

With ``group.version`` below 1 the API answers UNSUPPORTED_VERSION, as Kafka's does when the
consumer protocol is not enabled. Deviation: classic members do not migrate into a consumer group
(nor back); a group id held by a classic group with members answers GROUP_ID_NOT_FOUND.
"""

from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import Errors
from weir.protocol.messages import consumer_group_heartbeat as msg

from ..acl import model as acl
from ..dispatcher import handles
from ..features import GROUP_VERSION
from ..group.consumer.group import topic_partitions


@handles(ApiKey.CONSUMER_GROUP_HEARTBEAT, versions=(0, 1))
async def handle(context, header, request, client_host="", session=None):
    if context.features.level(GROUP_VERSION) < 1:
        return msg.RESPONSE(error_code=Errors.UNSUPPORTED_VERSION,
                            error_message="The new consumer group protocol is not enabled.")
    # ACLs: READ on the group, DESCRIBE on every topic the subscription names. Deviation: topics a
    # regex subscription resolves to are not filtered by DESCRIBE (Kafka's coordinator does);
    # the member still cannot fetch what it may not READ.
    authorizer = context.authorizer
    if not authorizer.allows(session, acl.READ, acl.GROUP, request.group_id):
        return msg.RESPONSE(error_code=Errors.GROUP_AUTHORIZATION_FAILED)
    if request.subscribed_topic_names and authorizer.denied(session, acl.DESCRIBE, acl.TOPIC,
                                                            request.subscribed_topic_names):
        return msg.RESPONSE(error_code=Errors.TOPIC_AUTHORIZATION_FAILED)
    answer = await context.groups.consumer_group_heartbeat(request, header.api_version, header.client_id or "",
                                                           client_host)
    assignment = answer.pop("assignment", None)
    response = msg.RESPONSE(**answer)
    if assignment is not None:
        response.assignment = msg.Assignment(topic_partitions=topic_partitions(assignment, msg.TopicPartitions))
    return response
