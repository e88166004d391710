"""ElectLeaders (43), v0-2.

A one-broker cluster's every partition has its only replica, the preferred one, as leader,
so no election is ever needed, of either type, as a one-broker KRaft Kafka answers: each
named partition ELECTION_NOT_NEEDED, a missing topic or partition UNKNOWN_TOPIC_OR_PARTITION
with the controller's messages. A null partition list (every partition) lists every topic
with no partition results, since Kafka leaves out partitions whose election is not needed;
an election type other than preferred (0) or unclean (1) fails the request with
INVALID_REQUEST, per partition too. v0 has no type: preferred.
ACLs: ALTER on the cluster, else CLUSTER_AUTHORIZATION_FAILED on the request and each partition.
"""

from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import Errors
from weir.protocol.messages import elect_leaders as msg

from ..acl import model as acl
from ..dispatcher import handles

_ELECTION_TYPES = (0, 1)  # preferred, unclean
_NOT_NEEDED = "Leader election not needed for topic partition."


def _failed(request, code: int, message: str):
    """Kafka's ElectLeadersRequest.getErrorResponse: the error on the request and on every partition."""
    return msg.RESPONSE(error_code=code, replica_election_results=[
        msg.ReplicaElectionResult(topic=topic.topic, partition_result=[
            msg.PartitionResult(partition_id=index, error_code=code, error_message=message)
            for index in topic.partitions])
        for topic in request.topic_partitions or ()])


@handles(ApiKey.ELECT_LEADERS, versions=(0, 2))
def handle(context, header, request, session=None):
    if not context.authorizer.allows_cluster(session, acl.ALTER):
        return _failed(request, Errors.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed.")
    if header.api_version >= 1 and request.election_type not in _ELECTION_TYPES:
        return _failed(request, Errors.INVALID_REQUEST, f"Unknown election type {request.election_type}")
    topics = context.logs.topics
    if request.topic_partitions is None:
        return msg.RESPONSE(error_code=Errors.NONE, replica_election_results=[
            msg.ReplicaElectionResult(topic=name, partition_result=[]) for name in sorted(topics)])
    results = []
    for asked in request.topic_partitions:
        topic = topics.get(asked.topic)
        partition_results = []
        for index in asked.partitions:
            if topic is None:
                code, message = Errors.UNKNOWN_TOPIC_OR_PARTITION, f"No such topic as {asked.topic}"
            elif not 0 <= index < len(topic.partitions):
                code, message = Errors.UNKNOWN_TOPIC_OR_PARTITION, f"No such partition as {asked.topic}-{index}"
            else:
                code, message = Errors.ELECTION_NOT_NEEDED, _NOT_NEEDED
            partition_results.append(msg.PartitionResult(partition_id=index, error_code=code, error_message=message))
        results.append(msg.ReplicaElectionResult(topic=asked.topic, partition_result=partition_results))
    return msg.RESPONSE(error_code=Errors.NONE, replica_election_results=results)
