"""AlterPartitionReassignments (45), v0-1.

Answered as a one-broker KRaft Kafka's controller answers it. Every partition has one
replica, on this broker (node.id), so the only assignment that validates is that broker
alone, which is the current one: the change completes at once (NONE) and nothing is ever
under way. Checked per partition in Kafka's order: the topic (UNKNOWN_TOPIC_OR_PARTITION
"Unable to find a topic named t."), the partition ("Unable to find partition t:p."), then a
null replica list cancels, which is NO_REASSIGNMENT_IN_PROGRESS since none is under way; an
empty list, an unregistered broker (taken in ascending order) or a broker named twice is
INVALID_REPLICA_ASSIGNMENT with the controller's messages. ``allow_replication_factor_change``
is echoed (v1) and cannot matter: a list other than [node.id] fails before it is looked at.
ACLs: ALTER on the cluster, else CLUSTER_AUTHORIZATION_FAILED on the request and each partition.
"""

from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import Errors
from weir.protocol.messages import alter_partition_reassignments as msg

from ..acl import model as acl
from ..dispatcher import handles


def _outcome(context, topic_name: str, index: int, replicas: list[int] | None) -> tuple[int, str | None]:
    topic = context.logs.topics.get(topic_name)
    if topic is None:
        return Errors.UNKNOWN_TOPIC_OR_PARTITION, f"Unable to find a topic named {topic_name}."
    if not 0 <= index < len(topic.partitions):
        return Errors.UNKNOWN_TOPIC_OR_PARTITION, f"Unable to find partition {topic_name}:{index}."
    if replicas is None:
        return Errors.NO_REASSIGNMENT_IN_PROGRESS, None
    if not replicas:
        return Errors.INVALID_REPLICA_ASSIGNMENT, "The manual partition assignment includes an empty replica list."
    previous = None
    for broker in sorted(replicas):
        if broker != context.node_id:
            return (Errors.INVALID_REPLICA_ASSIGNMENT,
                    f"The manual partition assignment includes broker {broker}, but no such broker is registered.")
        if broker == previous:
            return (Errors.INVALID_REPLICA_ASSIGNMENT,
                    f"The manual partition assignment includes the broker {broker} more than once.")
        previous = broker
    return Errors.NONE, None


@handles(ApiKey.ALTER_PARTITION_REASSIGNMENTS, versions=(0, 1))
def handle(context, header, request, session=None):
    allowed = context.authorizer.allows_cluster(session, acl.ALTER)
    code = Errors.NONE if allowed else Errors.CLUSTER_AUTHORIZATION_FAILED
    message = None if allowed else "Cluster authorization failed."
    responses = []
    for topic in request.topics:
        partitions = []
        for asked in topic.partitions:
            outcome = _outcome(context, topic.name, asked.partition_index, asked.replicas) if allowed \
                else (code, message)
            partitions.append(msg.PartitionResponse(partition_index=asked.partition_index, error_code=outcome[0],
                                                    error_message=outcome[1]))
        responses.append(msg.TopicResponse(name=topic.name, partitions=partitions))
    return msg.RESPONSE(allow_replication_factor_change=request.allow_replication_factor_change,
                        error_code=code, error_message=message, responses=responses)
