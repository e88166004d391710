"""CreatePartitions (37), v0-3.

Grows topics as Kafka's controller does (ReplicationControlManager): a topic
named twice is INVALID_REQUEST ("Duplicate topic name."), an unknown one
UNKNOWN_TOPIC_OR_PARTITION, a count that is not an increase INVALID_PARTITIONS,
and a manual assignment that does not give exactly one list per new partition,
or names a broker other than this node, INVALID_REPLICA_ASSIGNMENT. Kafka
refuses a request that would add more than 10,000 partitions in all
(MAX_RECORDS_PER_USER_OP) with POLICY_VIOLATION on every topic.
``validate_only`` checks and changes nothing. Each topic grows all or nothing
(``LogManager.add_partitions``).
"""

from collections import Counter

from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import Errors, KafkaError
from weir.protocol.messages import create_partitions as msg

from ..acl import model as acl
from ..dispatcher import handles
from ..quota.throttling import ControllerMutations

MAX_PARTITIONS_PER_REQUEST = 10_000  # Kafka's QuorumController.MAX_RECORDS_PER_USER_OP


@handles(ApiKey.CREATE_PARTITIONS, versions=(0, 3))
def handle(context, header, request, session=None):
    counts = Counter(topic.name for topic in request.topics)
    results, valid = [], []
    denied = context.authorizer.denied(session, acl.ALTER, acl.TOPIC, counts)  # ACLs
    for topic in request.topics:
        if topic.name in denied and counts[topic.name] == 1:
            results.append(msg.TopicResult(name=topic.name, error_code=Errors.TOPIC_AUTHORIZATION_FAILED,
                                           error_message=None))  # no message, as Kafka 4.3.1 answers
            continue
        if counts[topic.name] > 1:
            if topic.name not in {r.name for r in results}:
                results.append(msg.TopicResult(name=topic.name, error_code=Errors.INVALID_REQUEST,
                                               error_message="Duplicate topic name."))
            continue
        try:
            valid.append((topic, _added(context, topic)))
        except KafkaError as exc:
            results.append(msg.TopicResult(name=topic.name, error_code=exc.code, error_message=exc.message))
    if sum(added for _, added in valid) > MAX_PARTITIONS_PER_REQUEST:
        return msg.RESPONSE(results=[msg.TopicResult(name=topic.name, error_code=Errors.POLICY_VIOLATION,
                                                     error_message="Unable to perform excessively large batch "
                                                                   "operation.")
                                     for topic in request.topics])
    mutations = ControllerMutations(context, header, session, strict_since=3)  # controller_mutation_rate
    for topic, added_count in valid:
        result = msg.TopicResult(name=topic.name)
        try:
            mutations.take(added_count)
            if not request.validate_only:
                context.logs.add_partitions(topic.name, topic.count)
        except KafkaError as exc:
            result.error_code, result.error_message = exc.code, exc.message
        except OSError as exc:
            result.error_code, result.error_message = Errors.KAFKA_STORAGE_ERROR, str(exc)
        results.append(result)
    return msg.RESPONSE(results=results, throttle_time_ms=mutations.throttle_ms())


def _added(context, topic):
    """How many partitions the request adds to ``topic``; KafkaError if it may not."""
    found = context.logs.topics.get(topic.name)
    if found is None:
        raise KafkaError(Errors.UNKNOWN_TOPIC_OR_PARTITION, "This server does not host this topic-partition.")
    current = len(found.partitions)
    if topic.count == current:
        raise KafkaError(Errors.INVALID_PARTITIONS, f"Topic already has {current} partition(s).")
    if topic.count < current:
        raise KafkaError(Errors.INVALID_PARTITIONS, f"The topic {topic.name} currently has {current} partition(s); "
                                                    f"{topic.count} would not be an increase.")
    added = topic.count - current
    if topic.assignments is not None:
        if len(topic.assignments) != added:
            raise KafkaError(Errors.INVALID_REPLICA_ASSIGNMENT,
                             f"Attempted to add {added} additional partition(s), but only "
                             f"{len(topic.assignments)} assignment(s) were specified.")
        for assignment in topic.assignments:
            _check_assignment(context, assignment.broker_ids)
    return added


def _check_assignment(context, broker_ids):
    if not broker_ids:
        raise KafkaError(Errors.INVALID_REPLICA_ASSIGNMENT,
                         "The manual partition assignment includes an empty replica list.")
    previous = None
    for broker in sorted(broker_ids):
        if broker != context.node_id:
            raise KafkaError(Errors.INVALID_REPLICA_ASSIGNMENT, f"The manual partition assignment includes broker "
                                                                f"{broker}, but no such broker is registered.")
        if broker == previous:
            raise KafkaError(Errors.INVALID_REPLICA_ASSIGNMENT,
                             f"The manual partition assignment includes the broker {broker} more than once.")
        previous = broker
