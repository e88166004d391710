"""Metadata (3), v0-12.

One broker (this node) leads every partition with leader epoch 0. Unknown
topics are auto-created when both the request (v4+) and
``auto.create.topics.enable`` allow it. Deviation: Kafka answers the first
request for an auto-created topic with LEADER_NOT_AVAILABLE while the
controller elects a leader; here creation is synchronous, so the topic is
returned ready at once and clients skip a retry.

v10-11 carry a topic id field but may not use it: a null name or a non-zero
id there is INVALID_REQUEST, answered as Kafka's ``getErrorResponse`` does
(every asked topic with that error, a null name as "", no brokers). v12 looks
a topic with a null name up by its id.
"""

from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import Errors, KafkaError
from weir.protocol.messages import metadata as msg
from weir.protocol.primitives import ZERO_UUID

from .. import authorized_operations
from ..dispatcher import handles
from ..log.partition import LEADER_EPOCH
from ..security.session import advertised_address


@handles(ApiKey.METADATA, versions=(0, 12))
def handle(context, header, request, session=None):
    logs = context.logs
    version = header.api_version
    if request.topics is None or (version == 0 and not request.topics):
        wanted = [(name, None) for name in logs.topics]
    else:
        wanted = [(t.name, t.topic_id) for t in request.topics]
        if version < 12 and any(name is None or topic_id != ZERO_UUID for name, topic_id in wanted):
            return _invalid_request(wanted)
    topics = [_describe(context, name, topic_id, request.allow_auto_topic_creation) for name, topic_id in wanted]
    if request.include_topic_authorized_operations:  # no authorizer: every operation, as Kafka answers
        for topic in topics:
            if topic.name is not None:  # as Kafka, not for topic ids it does not know
                topic.topic_authorized_operations = authorized_operations.TOPIC
    node = context.node_id
    host, port = advertised_address(context, session)  # the address of the listener the client used
    response = msg.RESPONSE(
        brokers=[msg.Broker(node_id=node, host=host, port=port)],
        cluster_id=context.cluster_id, controller_id=node, topics=topics)
    if request.include_cluster_authorized_operations:
        response.cluster_authorized_operations = authorized_operations.CLUSTER
    return response


def _invalid_request(wanted):
    return msg.RESPONSE(brokers=[], cluster_id=None, controller_id=-1, topics=[
        msg.Topic(error_code=Errors.INVALID_REQUEST, name=name if name is not None else "", topic_id=topic_id,
                  is_internal=False, partitions=[])
        for name, topic_id in wanted])


def _describe(context, name, topic_id, allow_create):
    logs = context.logs
    if name is None:  # v12 lookup by topic id
        topic = next((t for t in logs.topics.values() if t.topic_id == topic_id), None)
        if topic is None:
            return msg.Topic(error_code=Errors.UNKNOWN_TOPIC_ID, name=None, topic_id=topic_id)
    else:
        try:
            topic = logs.get_or_create(name, allow_create=allow_create)
        except KafkaError as exc:
            return msg.Topic(error_code=exc.code, name=name)
    node = context.node_id
    return msg.Topic(
        error_code=0, name=topic.name, topic_id=topic.topic_id, is_internal=topic.is_internal,
        partitions=[msg.Partition(error_code=0, partition_index=p.index, leader_id=node,
                                  leader_epoch=LEADER_EPOCH, replica_nodes=[node], isr_nodes=[node])
                    for p in topic.partitions])
