"""DescribeAcls (29), v1-3: the ACLs a filter matches, grouped by resource pattern.

Needs DESCRIBE on the cluster (CLUSTER_AUTHORIZATION_FAILED); without an authorizer Kafka
answers SECURITY_DISABLED. A filter with a code Kafka does not know matches nothing (no error,
as Kafka 4.3.1 answers).
"""

from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import Errors
from weir.protocol.messages import describe_acls as msg

from ..acl.model import DESCRIBE, OPERATIONS, PATTERN_TYPES, PERMISSIONS, RESOURCE_TYPES, AclFilter, known
from ..dispatcher import handles


def acl_filter(request) -> AclFilter:
    """The filter as Kafka reads it (shared with DeleteAcls); unknown codes read as UNKNOWN."""
    return AclFilter(known(request.resource_type_filter, RESOURCE_TYPES), request.resource_name_filter,
                     known(request.pattern_type_filter, PATTERN_TYPES), request.principal_filter,
                     request.host_filter, known(request.operation, OPERATIONS),
                     known(request.permission_type, PERMISSIONS))


@handles(ApiKey.DESCRIBE_ACLS, versions=(1, 3))
def handle(context, header, request, session=None):
    authorizer = context.authorizer
    if not authorizer.allows_cluster(session, DESCRIBE):
        return msg.RESPONSE(error_code=Errors.CLUSTER_AUTHORIZATION_FAILED,
                            error_message="Cluster authorization failed.")
    if not authorizer.enabled:
        return msg.RESPONSE(error_code=Errors.SECURITY_DISABLED,
                            error_message="No Authorizer is configured on the broker")
    wanted = acl_filter(request)
    resources: dict[tuple, list] = {}
    for acl in authorizer.store.describe(wanted):
        resources.setdefault((acl.resource_type, acl.resource_name, acl.pattern_type), []).append(
            msg.AclDescription(principal=acl.principal, host=acl.host, operation=acl.operation,
                               permission_type=acl.permission))
    return msg.RESPONSE(error_message="", resources=[  # "" on success, as Kafka 4.3.1 answers
        msg.Resource(resource_type=rtype, resource_name=name, pattern_type=ptype, acls=acls)
        for (rtype, name, ptype), acls in resources.items()])
