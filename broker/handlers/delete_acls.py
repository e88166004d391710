"""DeleteAcls (31), v1-3: removes the ACLs each filter matches and lists them per filter.

Needs ALTER on the cluster (every filter CLUSTER_AUTHORIZATION_FAILED); without an authorizer
SECURITY_DISABLED. A filter with an unknown code is INVALID_REQUEST (AclControlManager's
validateFilter); the removal is written durably before the answer, and a failed write
answers every filter with the storage error.
"""

from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import Errors, KafkaError
from weir.protocol.messages import delete_acls as msg

from ..acl.checks import acl_change_refusal
from ..dispatcher import handles
from .describe_acls import acl_filter


@handles(ApiKey.DELETE_ACLS, versions=(1, 3))
def handle(context, header, request, session=None):
    authorizer = context.authorizer
    refusal = acl_change_refusal(authorizer, session)
    if refusal is not None:
        return _all(request, *refusal)
    filters = [acl_filter(f) for f in request.filters]
    valid = [f for f in filters if not f.is_unknown()]
    try:
        matched = iter(authorizer.store.delete(valid))
    except KafkaError as exc:
        return _all(request, exc.error, exc.message or exc.error.name)
    results = []
    for acl_filter_ in filters:
        if acl_filter_.is_unknown():
            message = "Unknown patternFilter." if acl_filter_.resource_type == 0 or acl_filter_.pattern_type == 0 \
                else "Unknown entryFilter."
            results.append(msg.FilterResult(error_code=Errors.INVALID_REQUEST, error_message=message))
            continue
        results.append(msg.FilterResult(matching_acls=[
            msg.MatchingAcl(resource_type=acl.resource_type, resource_name=acl.resource_name,
                            pattern_type=acl.pattern_type, principal=acl.principal, host=acl.host,
                            operation=acl.operation, permission_type=acl.permission)
            for acl in next(matched)]))
    return msg.RESPONSE(filter_results=results)


def _all(request, code, message):
    return msg.RESPONSE(filter_results=[msg.FilterResult(error_code=code, error_message=message)
                                        for _ in request.filters])
