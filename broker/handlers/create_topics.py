"""CreateTopics (19), v2-7.

From v5 (KIP-525) a created topic's answer carries what the Java Admin's CreateTopicsResult
offers: its partition count, replication factor (always 1 here) and every topic config with
its source, as DescribeConfigs lists them; v7 adds the topic id. A failed topic has the
defaults (-1, no configs), as Kafka's controller leaves them.

Validation follows Kafka's answers: INVALID_TOPIC_EXCEPTION for a bad name,
TOPIC_ALREADY_EXISTS, INVALID_PARTITIONS, INVALID_REPLICATION_FACTOR (one
node can hold one replica), INVALID_REPLICA_ASSIGNMENT, INVALID_CONFIG, and
INVALID_REQUEST for a name given twice. ``validate_only`` checks and creates
nothing.

Bounds, as Kafka's controller: a request whose topics add up to more than
10,000 partitions is refused whole, every topic answered POLICY_VIOLATION
("Excessively large number of partitions per request."), before anything else
is checked. Then, as the controller's bounded record list (MAX_RECORDS_PER_USER_OP):
a request whose valid topics would write more than 10,000 metadata records (per
topic one TopicRecord, a PartitionRecord per partition, a ConfigRecord per config
given) is refused whole, every topic POLICY_VIOLATION ("Unable to perform
excessively large batch operation."), validate-only requests too, as Kafka builds
their records before it drops them. A topic that would take the broker past ``max.broker.partitions``
is answered POLICY_VIOLATION (KIP-578's limit; see LogManager.check_capacity).
Creation is all-or-nothing per topic: a failure midway (KAFKA_STORAGE_ERROR,
e.g. out of file descriptors) leaves no partition of it behind.
"""

from collections import Counter

from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import Errors, KafkaError
from weir.protocol.messages import create_topics as msg
from weir.protocol.primitives import ZERO_UUID

from .. import config_sources
from ..config import ConfigError, parse_topic_config
from ..acl import model as acl
from ..dispatcher import handles
from ..quota.throttling import ControllerMutations
from ..log.manager import EXCESSIVE_PARTITIONS, MAX_PARTITIONS_PER_REQUEST, validate_topic_name

MAX_RECORDS_PER_USER_OP = 10_000  # Kafka's QuorumController.MAX_RECORDS_PER_USER_OP
EXCESSIVE_RECORDS = "Unable to perform excessively large batch operation."


@handles(ApiKey.CREATE_TOPICS, versions=(2, 7))
def handle(context, header, request, session=None):
    if _requested_partitions(context, request) > MAX_PARTITIONS_PER_REQUEST:
        return msg.RESPONSE(topics=[msg.TopicResult(name=topic.name, error_code=Errors.POLICY_VIOLATION,
                                                    error_message=EXCESSIVE_PARTITIONS)
                                    for topic in request.topics])
    counts = Counter(t.name for t in request.topics)
    authorizer = context.authorizer  # ACLs: CREATE on the cluster, else on each topic
    denied = (frozenset() if authorizer.allows_cluster(session, acl.CREATE, audit_denial=False)
              else authorizer.denied(session, acl.CREATE, acl.TOPIC, counts))
    if _metadata_records(context, request, counts, denied) > MAX_RECORDS_PER_USER_OP:
        return msg.RESPONSE(topics=[msg.TopicResult(name=topic.name, error_code=Errors.POLICY_VIOLATION,
                                                    error_message=EXCESSIVE_RECORDS)
                                    for topic in request.topics])
    hidden_configs = authorizer.denied(session, acl.DESCRIBE_CONFIGS, acl.TOPIC, counts)
    results = []
    mutations = ControllerMutations(context, header, session, strict_since=6)  # controller_mutation_rate
    validated = 0  # partitions a validate-only request would have created so far
    for topic in request.topics:
        result = msg.TopicResult(name=topic.name, error_message=None)  # null on success, as Kafka
        try:
            if counts[topic.name] > 1:
                raise KafkaError(Errors.INVALID_REQUEST, f"Create topics request from client contains "
                                                         f"multiple entries for topic {topic.name}")
            if topic.name in denied:
                raise KafkaError(Errors.TOPIC_AUTHORIZATION_FAILED, "Authorization failed.")
            partitions, overrides = _validate(context, topic)
            context.logs.check_capacity(topic.name, partitions, pending=validated)
            mutations.take(partitions)
            if request.validate_only:
                validated += partitions
                topic_id = ZERO_UUID
            else:
                topic_id = context.logs.create_topic(topic.name, partitions, overrides).topic_id
            if header.api_version >= 5 and topic.name in hidden_configs:
                result.topic_config_error_code = Errors.TOPIC_AUTHORIZATION_FAILED
                result.topic_id, result.num_partitions, result.replication_factor = topic_id, partitions, 1
            elif header.api_version >= 5:
                _describe_created(context, result, partitions, overrides, topic_id)
        except KafkaError as exc:
            result.error_code, result.error_message = exc.code, exc.message
        results.append(result)
    return msg.RESPONSE(topics=results, throttle_time_ms=mutations.throttle_ms())


def _describe_created(context, result, partitions, overrides, topic_id) -> None:
    result.topic_id, result.num_partitions, result.replication_factor = topic_id, partitions, 1
    entries = config_sources.topic_entries(context.config, context.logs.topic_config(overrides), overrides)
    result.configs = [msg.TopicConfig(name=entry.name, value=entry.value, read_only=entry.read_only,
                                      config_source=entry.source, is_sensitive=False) for entry in entries]


def _metadata_records(context, request, counts, denied) -> int:
    """Records Kafka's controller would write for the topics that pass validation."""
    total = 0
    for topic in request.topics:
        if counts[topic.name] > 1 or topic.name in denied:
            continue
        try:
            partitions, overrides = _validate(context, topic)
        except KafkaError:
            continue
        total += 1 + partitions + len(overrides)
    return total


def _requested_partitions(context, request) -> int:
    """Partitions the request asks for, counted as Kafka's controller counts them."""
    total = 0
    for topic in request.topics:
        if topic.assignments:
            total += len(topic.assignments)
        elif topic.num_partitions == -1:
            total += context.config["num.partitions"]
        elif topic.num_partitions > 0:
            total += topic.num_partitions
    return total


def _validate(context, topic):
    validate_topic_name(topic.name)
    if topic.name in context.logs.topics:
        raise KafkaError(Errors.TOPIC_ALREADY_EXISTS, f"Topic '{topic.name}' already exists.")
    if topic.assignments:
        if topic.num_partitions != -1 or topic.replication_factor != -1:
            raise KafkaError(Errors.INVALID_REQUEST, "Both numPartitions or replicationFactor and replicasAssignments "
                                                     "were set. Both cannot be used at the same time.")
        indexes = sorted(a.partition_index for a in topic.assignments)
        if indexes != list(range(len(indexes))):
            raise KafkaError(Errors.INVALID_REPLICA_ASSIGNMENT, "Partitions must be numbered from 0 without gaps.")
        for assignment in topic.assignments:
            if assignment.broker_ids != [context.node_id]:
                raise KafkaError(Errors.INVALID_REPLICA_ASSIGNMENT,
                                 f"Replica assignment {assignment.broker_ids} names brokers that do not exist.")
        partitions = len(indexes)
    else:
        partitions = context.config["num.partitions"] if topic.num_partitions == -1 else topic.num_partitions
        if partitions <= 0:
            raise KafkaError(Errors.INVALID_PARTITIONS,
                             "Number of partitions was set to an invalid non-positive value.")
        factor = topic.replication_factor
        if factor == 0 or factor < -1:
            raise KafkaError(Errors.INVALID_REPLICATION_FACTOR,
                             "Replication factor must be larger than 0, or -1 to use the default value.")
        if factor > 1:
            raise KafkaError(Errors.INVALID_REPLICATION_FACTOR,
                             f"Unable to replicate the partition {factor} time(s): The target replication factor "
                             f"of {factor} cannot be reached because only 1 broker(s) are registered.")
    overrides = {}
    for config in topic.configs:
        try:
            overrides[config.name] = parse_topic_config(config.name, config.value)
        except ConfigError as exc:
            raise KafkaError(Errors.INVALID_CONFIG, str(exc)) from None
    return partitions, overrides
