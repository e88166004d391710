"""WriteTxnMarkers (27), v1.

In Kafka the coordinator sends this to partition leaders; on one node it is
what an operator's tool sends to abort a hanging transaction (Kafka's
kafka-transactions.sh, kafka-python's admin ``abort_transaction``). Markers go
through the same path the coordinator uses. Kafka restricts the API to
CLUSTER_ACTION; Weir has no ACLs, so any client may send it.
"""

from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import Errors
from weir.protocol.messages import write_txn_markers as msg

from ..acl import model as acl
from ..dispatcher import handles
from ..txn.markers import write_markers


@handles(ApiKey.WRITE_TXN_MARKERS, versions=(1, 1))
async def handle(context, header, request, session=None):
    authorizer = context.authorizer  # ACLs: ALTER (Kafka 4, for the admin tool) or CLUSTER_ACTION on the cluster
    allowed = (authorizer.allows_cluster(session, acl.ALTER, audit_denial=False)
               or authorizer.allows_cluster(session, acl.CLUSTER_ACTION))
    answers = []
    for marker in request.markers:
        wanted = [(topic.name, index) for topic in marker.topics for index in topic.partition_indexes]
        if allowed:
            errors = await write_markers(context, marker.producer_id, marker.producer_epoch,
                                         marker.coordinator_epoch, marker.transaction_result, wanted)
        else:
            errors = dict.fromkeys(wanted, Errors.CLUSTER_AUTHORIZATION_FAILED)
        answers.append(msg.MarkerResult(producer_id=marker.producer_id, topics=[
            msg.TopicResult(name=topic.name, partitions=[
                msg.PartitionResult(partition_index=index, error_code=errors[(topic.name, index)])
                for index in topic.partition_indexes])
            for topic in marker.topics]))
    return msg.RESPONSE(markers=answers)
