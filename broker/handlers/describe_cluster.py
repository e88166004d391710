"""DescribeCluster (60), v0-2.

This node is the whole cluster and (as in a combined KRaft node) answers as
the controller id too. ``include_cluster_authorized_operations`` gets every
cluster operation (no authorizer), otherwise the schema's INT32_MIN. A request
for the CONTROLLER endpoint type is answered as Kafka's broker listener does:
MISMATCHED_ENDPOINT_TYPE (INVALID_REQUEST at v0), and an unknown type
UNSUPPORTED_ENDPOINT_TYPE. The single node is never fenced, so v2's
``include_fenced_brokers`` changes nothing.
"""

from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import Errors
from weir.protocol.messages import describe_cluster as msg

from ..acl import model as acl
from ..dispatcher import handles
from ..security.session import advertised_address

CONTROLLER_ENDPOINT = 2


@handles(ApiKey.DESCRIBE_CLUSTER, versions=(0, 2))
def handle(context, header, request, session=None):
    endpoint = request.endpoint_type
    v0 = header.api_version == 0  # v0 has no endpoint types: INVALID_REQUEST
    if endpoint not in (msg.BROKER_ENDPOINT, CONTROLLER_ENDPOINT):
        return msg.RESPONSE(error_code=Errors.INVALID_REQUEST if v0 else Errors.UNSUPPORTED_ENDPOINT_TYPE,
                            error_message=f"Unsupported endpoint type {endpoint}", cluster_id=context.cluster_id)
    if endpoint != msg.BROKER_ENDPOINT:
        return msg.RESPONSE(error_code=Errors.INVALID_REQUEST if v0 else Errors.MISMATCHED_ENDPOINT_TYPE,
                            error_message="The request was sent to an endpoint of type BROKER, "
                                          "but we wanted an endpoint of type CONTROLLER",
                            cluster_id=context.cluster_id)
    host, port = advertised_address(context, session)  # the client's own listener
    response = msg.RESPONSE(
        cluster_id=context.cluster_id, controller_id=context.node_id,
        brokers=[msg.Broker(broker_id=context.node_id, host=host, port=port)])
    if request.include_cluster_authorized_operations:
        authorizer = context.authorizer  # ACLs: 0 without DESCRIBE on the cluster, as Kafka answers
        response.cluster_authorized_operations = (
            authorizer.authorized_operations(session, acl.CLUSTER, acl.CLUSTER_NAME)
            if authorizer.allows_cluster(session, acl.DESCRIBE) else 0)
    return response
