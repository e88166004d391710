"""ShareAcknowledge (79), v1-2: acknowledge acquired records in an open share session, fetching none.

The session must exist and the epoch be its next one (epoch 0 is INVALID_SHARE_SESSION_EPOCH: an
acknowledgement cannot open a session, as in Kafka); -1 acknowledges and closes the session,
giving back what the member still holds. Each partition answers its acknowledgement result
(``broker/share/requests.py``). v2: ``is_renew_ack`` allows RENEW; the lock timeout is answered.
ACLs: READ on the group and on each topic.
A connection's share requests run one at a time, in order, as Kafka's muted channel runs them
(``broker/share/turns.py``).
"""

from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import Errors, KafkaError
from weir.protocol.messages import share_acknowledge as msg

from ..acl import model as acl
from ..dispatcher import handles
from ._share_requests import refusal
from ..log.partition import LEADER_EPOCH
from ..share import requests as share
from ..share.sessions import INITIAL_EPOCH


@handles(ApiKey.SHARE_ACKNOWLEDGE, versions=(1, 2))
async def handle(context, header, request, session=None):
    async with context.share_partitions.turns.turn(session):
        return await _handle(context, header, request, session)


async def _handle(context, header, request, session):
    if (refused := refusal(context, msg, request, session)) is not None:
        return refused
    group_id, member_id, epoch = request.group_id, request.member_id, request.share_session_epoch
    manager = context.share_partitions
    limits = manager.limits(group_id)
    try:
        if epoch == INITIAL_EPOCH:
            raise KafkaError(Errors.INVALID_SHARE_SESSION_EPOCH, "Acknowledge requests cannot open a share session.")
        share.step_session(manager, group_id, member_id, epoch)
    except KafkaError as exc:
        return msg.RESPONSE(error_code=exc.code, acquisition_lock_timeout_ms=0)  # Kafka's answer: no message
    names = {topic.topic_id: name for name, topic in context.logs.topics.items()}
    refused = {t.topic_id for t in request.topics
               if t.topic_id in names and not context.authorizer.allows(session, acl.READ, acl.TOPIC,
                                                                           names[t.topic_id])}
    results = await share.acknowledge(manager, group_id, member_id,
                                [t for t in request.topics if t.topic_id not in refused], request.is_renew_ack)
    share.end_session(manager, group_id, member_id, epoch)
    leader = msg.LeaderIdAndEpoch(leader_id=context.node_id, leader_epoch=LEADER_EPOCH)
    responses = []
    for topic in request.topics:
        partitions = []
        for partition in topic.partitions:
            error = results.get((topic.topic_id, partition.partition_index))
            code = Errors.TOPIC_AUTHORIZATION_FAILED if topic.topic_id in refused else (
                error.code if error else Errors.NONE)
            partitions.append(msg.PartitionData(partition_index=partition.partition_index, error_code=code,
                                                error_message=error.message if error else None,
                                                current_leader=leader))
        responses.append(msg.TopicResponse(topic_id=topic.topic_id, partitions=partitions))
    return msg.RESPONSE(error_code=Errors.NONE, acquisition_lock_timeout_ms=limits.lock_ms, responses=responses,
                        node_endpoints=[])
