"""OffsetForLeaderEpoch (23), v2-4.

Clients validate their positions with it (KIP-320). One node is leader for
ever at epoch 0, so epoch 0 ends at the log end offset and any other epoch is
undefined (-1, -1), as Kafka answers for epochs it does not know.
"""

from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import Errors, KafkaError
from weir.protocol.messages import offset_for_leader_epoch as msg

from ..acl import model as acl
from ..dispatcher import handles
from ..log.partition import LEADER_EPOCH


@handles(ApiKey.OFFSET_FOR_LEADER_EPOCH, versions=(2, 4))
def handle(context, header, request, session=None):
    topics = []
    authorizer = context.authorizer  # ACLs: CLUSTER_ACTION on the cluster, else DESCRIBE on each topic
    denied = (frozenset() if authorizer.allows_cluster(session, acl.CLUSTER_ACTION, audit_denial=False)
              else authorizer.denied(session, acl.DESCRIBE, acl.TOPIC, [t.topic for t in request.topics]))
    for topic in request.topics:
        answers = []
        for wanted in topic.partitions:
            answer = msg.EpochEndOffset(partition=wanted.partition)
            try:
                if topic.topic in denied:
                    raise KafkaError(Errors.TOPIC_AUTHORIZATION_FAILED)
                if wanted.current_leader_epoch > LEADER_EPOCH:
                    raise KafkaError(Errors.UNKNOWN_LEADER_EPOCH)
                partition = context.logs.partition(topic.topic, wanted.partition)
                if wanted.leader_epoch == LEADER_EPOCH:
                    answer.leader_epoch, answer.end_offset = LEADER_EPOCH, partition.log_end_offset
            except KafkaError as exc:
                answer.error_code = exc.code
            answers.append(answer)
        topics.append(msg.TopicResult(topic=topic.topic, partitions=answers))
    return msg.RESPONSE(topics=topics)
