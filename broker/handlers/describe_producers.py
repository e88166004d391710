"""DescribeProducers (61), v0.

The active producers of each requested partition, read from its producer
state: id, epoch, last sequence and timestamp, the coordinator epoch of its
last marker, and the first offset of its open transaction (-1 if none), as
Kafka's ``UnifiedLog.activeProducers`` reports them. An unknown partition is
UNKNOWN_TOPIC_OR_PARTITION.
"""

from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import Errors, KafkaError
from weir.protocol.messages import describe_producers as msg

from ..acl import model as acl
from ..dispatcher import handles


@handles(ApiKey.DESCRIBE_PRODUCERS, versions=(0, 0))
def handle(context, header, request, session=None):
    topics = []
    denied = context.authorizer.denied(session, acl.READ, acl.TOPIC, [topic.name for topic in request.topics])
    for topic in request.topics:
        partitions = []
        for index in topic.partition_indexes:
            answer = msg.PartitionResponse(partition_index=index)
            if topic.name in denied:  # ACLs: READ on the topic
                answer.error_code = Errors.TOPIC_AUTHORIZATION_FAILED
                answer.error_message = "Topic authorization failed."
                partitions.append(answer)
                continue
            try:
                partition = context.logs.partition(topic.name, index)
            except KafkaError as exc:
                answer.error_code, answer.error_message = exc.code, exc.message
            else:
                answer.active_producers = [
                    msg.ProducerState(producer_id=producer_id, producer_epoch=entry.epoch,
                                      last_sequence=entry.last_seq, last_timestamp=entry.last_timestamp,
                                      coordinator_epoch=entry.coordinator_epoch,
                                      current_txn_start_offset=entry.current_txn_first_offset)
                    for producer_id, entry in sorted(partition.producers.producers.items())]
            partitions.append(answer)
        topics.append(msg.TopicResponse(name=topic.name, partitions=partitions))
    return msg.RESPONSE(topics=topics)
