"""DescribeClientQuotas (48), v0-1.

Weir enforces no client quotas and AlterClientQuotas is not served, so no quota is ever
set: every valid filter matches nothing and the answer is an empty list, which is what
Kafka answers for a cluster without quotas. ``kafka-configs --describe --entity-type users``
asks this beside DescribeUserScramCredentials. A match type other than exact (0), default
(1) or any (2) is INVALID_REQUEST, as Kafka's ClientQuotaFilterComponent parsing refuses it.
"""

from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import Errors
from weir.protocol.messages import describe_client_quotas as msg

from ..acl import model as acl
from ..dispatcher import handles

_MATCH_TYPES = (0, 1, 2)


@handles(ApiKey.DESCRIBE_CLIENT_QUOTAS, versions=(0, 1))
def handle(context, header, request, session=None):
    if not context.authorizer.allows_cluster(session, acl.DESCRIBE_CONFIGS):  # ACLs
        return msg.RESPONSE(error_code=Errors.CLUSTER_AUTHORIZATION_FAILED,
                            error_message="Cluster authorization failed.", entries=None)
    for component in request.components:
        if component.match_type not in _MATCH_TYPES:
            return msg.RESPONSE(error_code=Errors.INVALID_REQUEST,
                                error_message=f"Unexpected match type {component.match_type}")
    return msg.RESPONSE(error_code=Errors.NONE, entries=[])
