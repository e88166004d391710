"""DeleteRecords (21), v0-2.

Advances each partition's log start offset (Kafka Streams purges its
repartition topics this way) and answers the new ``low_watermark``, which on
one node is the log start offset itself. An offset of -1 means the high
watermark; one above it, or another negative one, is OFFSET_OUT_OF_RANGE; an
offset below the current start changes nothing and answers the current start.
Internal topics are INVALID_TOPIC_EXCEPTION and a topic whose cleanup.policy
lacks "delete" is POLICY_VIOLATION, as in Kafka's ReplicaManager and
Partition. Failed partitions answer low_watermark -1. There are no followers
to wait for, so ``timeout_ms`` is never needed.
"""

from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import Errors, KafkaError
from weir.protocol.messages import delete_records as msg

from ..acl import model as acl
from ..dispatcher import handles
from ..log import log_start
from ..log.manager import INTERNAL_TOPICS


@handles(ApiKey.DELETE_RECORDS, versions=(0, 2))
def handle(context, header, request, session=None):
    topics = []
    denied = context.authorizer.denied(session, acl.DELETE, acl.TOPIC, [t.name for t in request.topics])  # ACLs
    for topic in request.topics:
        results = []
        for wanted in topic.partitions:
            result = msg.PartitionResult(partition_index=wanted.partition_index, low_watermark=-1)
            try:
                if topic.name in denied:
                    raise KafkaError(Errors.TOPIC_AUTHORIZATION_FAILED)
                result.low_watermark = _delete(context, topic.name, wanted.partition_index, wanted.offset)
            except KafkaError as exc:
                result.error_code = exc.code
            results.append(result)
        topics.append(msg.TopicResult(name=topic.name, partitions=results))
    return msg.RESPONSE(topics=topics)


def _delete(context, topic, index, offset):
    if topic in INTERNAL_TOPICS:
        raise KafkaError(Errors.INVALID_TOPIC_EXCEPTION, f"Cannot delete records of internal topic {topic}")
    partition = context.logs.partition(topic, index)
    if "delete" not in partition.config["cleanup.policy"].split(","):
        raise KafkaError(Errors.POLICY_VIOLATION,
                         f"Records of partition {topic}-{index} can not be deleted due to the configured policy")
    if offset == msg.HIGH_WATERMARK:
        offset = partition.high_watermark
    if offset < 0:
        raise KafkaError(Errors.OFFSET_OUT_OF_RANGE, f"The offset {offset} for partition {topic}-{index} is not valid")
    return log_start.delete_records_before(partition, offset)
