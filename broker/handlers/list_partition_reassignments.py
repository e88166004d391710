"""ListPartitionReassignments (46), v0.

No reassignment is ever under way on one broker (alter_partition_reassignments.py completes
each at once), so the answer is an empty list, for named partitions (known or not) as for
all, as a one-broker KRaft Kafka answers.
ACLs: DESCRIBE on the cluster, else CLUSTER_AUTHORIZATION_FAILED with the named partitions
echoed, as Kafka's ListPartitionReassignmentsRequest.getErrorResponse does.
"""

from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import Errors
from weir.protocol.messages import list_partition_reassignments as msg

from ..acl import model as acl
from ..dispatcher import handles


@handles(ApiKey.LIST_PARTITION_REASSIGNMENTS, versions=(0, 0))
def handle(context, header, request, session=None):
    if not context.authorizer.allows_cluster(session, acl.DESCRIBE):
        return msg.RESPONSE(error_code=Errors.CLUSTER_AUTHORIZATION_FAILED,
                            error_message="Cluster authorization failed.", topics=[
                                msg.OngoingTopic(name=topic.name, partitions=[
                                    msg.OngoingPartition(partition_index=index)
                                    for index in topic.partition_indexes])
                                for topic in request.topics or ()])
    return msg.RESPONSE(error_code=Errors.NONE, topics=[])
