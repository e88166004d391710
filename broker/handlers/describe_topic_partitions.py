"""DescribeTopicPartitions (75), v0 (KIP-966): the partitions of the named topics (all topics when
none is named), paged as Kafka pages them.

Topics are taken in name order from the request cursor's topic on (partitions of that topic from
the cursor's index); at most min(``max.request.partition.size.limit``, the request's limit)
partitions are answered, and ``next_cursor`` names where the next page starts. An unknown topic
is UNKNOWN_TOPIC_OR_PARTITION (INVALID_TOPIC_EXCEPTION for an illegal name) and is never created;
when all topics are asked for, such errors cannot arise. A cursor whose topic is not in the named
list, or whose partition is negative, is INVALID_REQUEST for every named topic, as Kafka's error
response has it. One node leads every partition and no replica is ever ineligible, so the
eligible-leader-replica lists are empty, as Kafka answers a partition with a full ISR.
"""

from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import Errors, KafkaError
from weir.protocol.messages import describe_topic_partitions as msg
from weir.protocol.primitives import ZERO_UUID

from ..acl import model as acl
from ..dispatcher import handles
from ..log.manager import validate_topic_name
from ..log.partition import LEADER_EPOCH


@handles(ApiKey.DESCRIBE_TOPIC_PARTITIONS, versions=(0, 0))
def handle(context, header, request, session=None):
    cursor = request.cursor
    after = cursor.topic_name if cursor is not None else ""
    fetch_all = not request.topics
    if fetch_all:
        names = sorted(name for name in context.logs.topics if name >= after)
    else:
        names = sorted({t.name for t in request.topics if t.name >= after})
        if cursor is not None and cursor.topic_name not in names:
            return _invalid(request)  # Kafka: "topic list should contain the cursor topic"
    if cursor is not None and cursor.partition_index < 0:
        return _invalid(request)  # Kafka: "cursor partition must be valid"

    authorizer = context.authorizer  # ACLs: DESCRIBE on each topic; left out of a fetch-all answer
    denied = authorizer.denied(session, acl.DESCRIBE, acl.TOPIC, names, audit_denial=not fetch_all)
    if denied:
        refused = [name for name in names if name in denied]
        names = [name for name in names if name not in denied]
    remaining = min(context.config["max.request.partition.size.limit"], request.response_partition_limit)
    node = context.node_id
    response = msg.RESPONSE(throttle_time_ms=0)
    pending = iter(names)
    for name in pending:
        if remaining <= 0:
            response.next_cursor = msg.Cursor(topic_name=name, partition_index=0)
            break
        topic = context.logs.topics.get(name)
        if topic is None:
            if not fetch_all:
                response.topics.append(msg.Topic(error_code=_unknown_topic_error(name), name=name,
                                                 topic_id=ZERO_UUID))
            continue
        start = cursor.partition_index if cursor is not None and name == cursor.topic_name else 0
        page = topic.partitions[start:start + remaining]
        response.topics.append(msg.Topic(
            error_code=Errors.NONE, name=name, topic_id=topic.topic_id, is_internal=topic.is_internal,
            topic_authorized_operations=authorizer.authorized_operations(session, acl.TOPIC, name),
            partitions=[msg.Partition(error_code=Errors.NONE, partition_index=p.index, leader_id=node,
                                      leader_epoch=LEADER_EPOCH, replica_nodes=[node], isr_nodes=[node],
                                      eligible_leader_replicas=[], last_known_elr=[], offline_replicas=[])
                        for p in page]))
        if start + len(page) < len(topic.partitions):
            response.next_cursor = msg.Cursor(topic_name=name, partition_index=start + len(page))
            break
        remaining -= len(page)
    if denied and not fetch_all:
        response.topics += [msg.Topic(error_code=Errors.TOPIC_AUTHORIZATION_FAILED, name=name, topic_id=ZERO_UUID)
                            for name in refused]
    return response


def _unknown_topic_error(name: str) -> int:
    try:
        validate_topic_name(name)
    except KafkaError:
        return Errors.INVALID_TOPIC_EXCEPTION
    return Errors.UNKNOWN_TOPIC_OR_PARTITION


def _invalid(request):
    return msg.RESPONSE(throttle_time_ms=0, topics=[
        msg.Topic(error_code=Errors.INVALID_REQUEST, name=t.name, topic_id=ZERO_UUID) for t in request.topics])
