"""ListOffsets (2), v1-7.

-1 latest (the last stable offset under read_committed, else the high
watermark), -2 earliest (log start), -3 the record with the largest timestamp
(v7; the earliest such record, as Kafka since KAFKA-16310), and a timestamp:
the first record at or after it (-1/-1 when none, and leader epoch -1). Another
negative timestamp is UNSUPPORTED_VERSION, as Kafka answers.
"""

from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import Errors, KafkaError
from weir.protocol.messages import list_offsets as msg

from ..acl import model as acl
from ..dispatcher import handles
from ..log import time_lookup
from ..log.partition import LEADER_EPOCH

LATEST, EARLIEST, MAX_TIMESTAMP = -1, -2, -3
READ_COMMITTED = 1


@handles(ApiKey.LIST_OFFSETS, versions=(1, 7))
def handle(context, header, request, session=None):
    topics = []
    denied = context.authorizer.denied(session, acl.DESCRIBE, acl.TOPIC, [t.name for t in request.topics])  # ACLs
    for topic in request.topics:
        if topic.name in denied:
            topics.append(msg.TopicResponse(name=topic.name, partitions=[
                msg.PartitionResponse(partition_index=p.partition_index, error_code=Errors.TOPIC_AUTHORIZATION_FAILED,
                                      offset=-1, timestamp=-1) for p in topic.partitions]))
            continue
        answers = [_lookup(context, topic.name, wanted, request.isolation_level, header.api_version)
                   for wanted in topic.partitions]
        topics.append(msg.TopicResponse(name=topic.name, partitions=answers))
    return msg.RESPONSE(topics=topics)


def _lookup(context, topic, wanted, isolation_level, version):
    answer = msg.PartitionResponse(partition_index=wanted.partition_index)
    try:
        if wanted.current_leader_epoch > LEADER_EPOCH:
            raise KafkaError(Errors.UNKNOWN_LEADER_EPOCH)
        partition = context.logs.partition(topic, wanted.partition_index)
        timestamp = wanted.timestamp
        if timestamp == LATEST:
            found = (partition.last_stable_offset if isolation_level == READ_COMMITTED
                     else partition.high_watermark, -1)
        elif timestamp == EARLIEST:
            found = (partition.log_start_offset, -1)
        elif timestamp == MAX_TIMESTAMP and version >= 7:
            found = time_lookup.max_timestamp_offset(partition) or (-1, -1)
        elif timestamp < 0:  # the later special values (-4 earliest local, ...), or none at all
            raise KafkaError(Errors.UNSUPPORTED_VERSION, f"timestamp {timestamp} is not supported in v{version}")
        else:
            found = time_lookup.offset_for_timestamp(partition, timestamp) or (-1, -1)
    except KafkaError as exc:
        answer.error_code = exc.code
        return answer
    answer.offset, answer.timestamp = found
    answer.leader_epoch = LEADER_EPOCH if answer.offset >= 0 else -1  # as Kafka: no offset, no epoch
    return answer
