"""Metadata (3), v0-12.

One broker (this node) leads every partition with leader epoch 0. Unknown
topics are auto-created when both the request (v4+) and
``auto.create.topics.enable`` allow it. The request that creates a topic is
answered UNKNOWN_TOPIC_OR_PARTITION (no partitions), as Kafka 4.4 answers while
its controller creates the topic; the next request finds it ready (creation
here is synchronous). Answering the new topic at once looked faster but is
slower for librdkafka's idempotent producer: it learns the leader while its
bootstrap connection closes, finds no broker up for InitProducerId and waits
its 500 ms PID timer; after Kafka's answer it asks again on the new connection
and requests the producer id at once (first acknowledged record ~110 ms, as
against Kafka, instead of ~520 ms).

v10-11 carry a topic id field but may not use it: a null name or a non-zero
id there is INVALID_REQUEST, answered as Kafka's ``getErrorResponse`` does
(every asked topic with that error, a null name as "", no brokers). v12 looks
a topic with a null name up by its id.

ACLs, as KafkaApis: topics the principal may not DESCRIBE are left out of an all-topics answer
and answered TOPIC_AUTHORIZATION_FAILED when named (by id: without the name); auto-creation
needs CREATE on the cluster or on the topic (else TOPIC_AUTHORIZATION_FAILED); authorized
operations come from the ACLs (the cluster's are 0 without DESCRIBE on it).
"""

import functools

from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import Errors, KafkaError
from weir.protocol.messages import metadata as msg
from weir.protocol.primitives import ZERO_UUID
from weir.protocol.schema import FrozenArray

from ..acl import model as acl
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
    authorizer = context.authorizer
    refused = []
    if authorizer.enabled and session is not None:
        wanted, refused = _authorize(context, session, wanted, request.topics is None or not request.topics,
                                     request.allow_auto_topic_creation)
    topics = [_describe(context, name, topic_id, request.allow_auto_topic_creation) for name, topic_id in wanted]
    if request.include_topic_authorized_operations:  # no authorizer: every operation, as Kafka answers
        for topic in topics:
            if topic.name is not None:  # as Kafka, not for topic ids it does not know
                topic.topic_authorized_operations = authorizer.authorized_operations(session, acl.TOPIC, topic.name)
    topics += refused
    node = context.node_id
    host, port = advertised_address(context, session)  # the address of the listener the client used
    response = msg.RESPONSE(
        brokers=[msg.Broker(node_id=node, host=host, port=port)],
        cluster_id=context.cluster_id, controller_id=node, topics=topics)
    if request.include_cluster_authorized_operations:
        response.cluster_authorized_operations = (
            authorizer.authorized_operations(session, acl.CLUSTER, acl.CLUSTER_NAME)
            if authorizer.allows_cluster(session, acl.DESCRIBE) else 0)
    return response


def _authorize(context, session, wanted, all_topics, allow_create):
    """(the topics to describe, the answers of those refused), as KafkaApis.handleTopicMetadataRequest."""
    authorizer = context.authorizer
    logs = context.logs
    names = {}
    for name, topic_id in wanted:
        if name is None:  # v12 by id: the name decides
            topic = next((t for t in logs.topics.values() if t.topic_id == topic_id), None)
            name = topic.name if topic is not None else None
        names[(name, topic_id)] = name
    denied = authorizer.denied(session, acl.DESCRIBE, acl.TOPIC, [n for n in names.values() if n is not None],
                               audit_denial=not all_topics)
    allowed = [w for w in wanted if names[w] not in denied or names[w] is None]
    refused = []
    missing = [name for name, _ in allowed if name is not None and name not in logs.topics]
    if allow_create and missing and context.config["auto.create.topics.enable"] \
            and not authorizer.allows_cluster(session, acl.CREATE, audit_denial=False):
        no_create = authorizer.denied(session, acl.CREATE, acl.TOPIC, missing)
        refused += [msg.Topic(error_code=Errors.TOPIC_AUTHORIZATION_FAILED, name=name, topic_id=ZERO_UUID,
                              is_internal=False, partitions=[]) for name, _ in allowed if name in no_create]
        allowed = [w for w in allowed if w[0] not in no_create]
    if not all_topics:
        refused += [msg.Topic(error_code=Errors.TOPIC_AUTHORIZATION_FAILED, name=name,
                              topic_id=topic_id if name is None else ZERO_UUID, is_internal=False, partitions=[])
                    for (name, topic_id) in wanted if names[(name, topic_id)] in denied]
    return allowed, refused


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
        created = name not in logs.topics
        try:
            topic = logs.get_or_create(name, allow_create=allow_create)
        except KafkaError as exc:
            return msg.Topic(error_code=exc.code, name=name)
        if created:  # as Kafka while its controller creates it (see the module's docstring)
            return msg.Topic(error_code=Errors.UNKNOWN_TOPIC_OR_PARTITION, name=name)
    return msg.Topic(error_code=0, name=topic.name, topic_id=topic.topic_id, is_internal=topic.is_internal,
                     partitions=_partitions(topic.topic_id, len(topic.partitions), context.node_id))


# A topic's partition entries depend only on its id, its partition count and this node: built once
# and shared by every answer, and encoded once per version (a FrozenArray). Building them afresh was
# two thirds of a full answer's cost, ~3 us a partition, and encoding them most of the rest, ~1.6 us
# (bench.scale: a full answer at 10,000 partitions ~50 ms, then ~22 ms, Kafka's ~19 ms).
# Entries of topics since deleted fall out as the least recently used.
@functools.lru_cache(maxsize=16_384)  # topics; well above what one broker hosts
def _partitions(topic_id: bytes, count: int, node: int) -> FrozenArray:
    return FrozenArray(msg.Partition(error_code=0, partition_index=index, leader_id=node, leader_epoch=LEADER_EPOCH,
                                     replica_nodes=[node], isr_nodes=[node]) for index in range(count))
