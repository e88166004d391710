"""DescribeShareGroupOffsets (90), v0-1: each share-partition's start offset (v1: and its lag).

Null topics: every share-partition the group has state for (one assigned but never read answers
start offset -1 and lag -1, as Kafka 4.4 answers it); named topics: the partitions asked for.
An unknown group answers no topics and no error, as Kafka 4.4 does. The leader epoch is 0 (one
node). ACLs: DESCRIBE on the group (GROUP_AUTHORIZATION_FAILED for it), DESCRIBE on each topic
(TOPIC_AUTHORIZATION_FAILED for its partitions).
"""

from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import Errors
from weir.protocol.messages import describe_share_group_offsets as msg

from ..acl import model as acl
from ..dispatcher import handles


@handles(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, versions=(0, 1))
def handle(context, header, request, session=None):
    topics = context.logs.topics
    names = {topic.topic_id: name for name, topic in topics.items()}
    answers = []
    for wanted in request.groups:
        group_id = wanted.group_id
        answer = msg.ResponseGroup(group_id=group_id, topics=[], error_code=Errors.NONE)
        answers.append(answer)
        if not context.authorizer.allows(session, acl.DESCRIBE, acl.GROUP, group_id):
            answer.error_code = Errors.GROUP_AUTHORIZATION_FAILED
            continue
        offsets = context.share_partitions.group_offsets(group_id)
        by_topic: dict[str, list[int]] = {}
        if wanted.topics is None:
            for topic_id, index in sorted(offsets, key=lambda key: (names.get(key[0], ""), key[1])):
                if topic_id in names:
                    by_topic.setdefault(names[topic_id], []).append(index)
        else:
            for topic in wanted.topics:
                by_topic.setdefault(topic.topic_name, []).extend(topic.partitions)
        for name, indexes in by_topic.items():
            topic = topics.get(name)
            topic_id = topic.topic_id if topic is not None else bytes(16)
            refused = not context.authorizer.allows(session, acl.DESCRIBE, acl.TOPIC, name)
            partitions = []
            for index in indexes:
                start, lag = offsets.get((topic_id, index), (-1, -1))
                partition = msg.ResponsePartition(partition_index=index, start_offset=start, leader_epoch=0, lag=lag,
                                                  error_code=Errors.NONE)
                if refused:
                    partition.error_code, partition.start_offset, partition.lag = (
                        Errors.TOPIC_AUTHORIZATION_FAILED, -1, -1)
                elif topic is None or not 0 <= index < len(topic.partitions):
                    partition.error_code = Errors.UNKNOWN_TOPIC_OR_PARTITION
                    partition.error_message = "This server does not host this topic-partition."
                partitions.append(partition)
            answer.topics.append(msg.ResponseTopic(topic_name=name, topic_id=topic_id, partitions=partitions))
    return msg.RESPONSE(groups=answers)
