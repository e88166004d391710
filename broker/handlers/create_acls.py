"""CreateAcls (30), v1-3: adds ACL bindings, written durably before the answer.

Needs ALTER on the cluster (every result CLUSTER_AUTHORIZATION_FAILED); without an authorizer
SECURITY_DISABLED. Each creation is validated as Kafka's AclApis and AclControlManager do
(INVALID_REQUEST: a CLUSTER resource not named kafka-cluster, an empty name, a principal
without ``<type>:``); an ACL that exists already succeeds. A request with an ANY, MATCH or
unknown code in any creation fails whole with UNKNOWN_SERVER_ERROR, as Kafka 4.3.1 answers it.
A failed write answers every valid creation with the storage error. Deviation: a refused
request's message is "Cluster authorization failed."; Kafka 4.3.1's prints the request it
forwarded to its controller.
"""

from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import Errors, KafkaError
from weir.protocol.messages import create_acls as msg

from ..acl.checks import acl_change_refusal
from ..acl.model import AclBinding, creation_error, has_concrete_codes
from ..dispatcher import handles


@handles(ApiKey.CREATE_ACLS, versions=(1, 3))
def handle(context, header, request, session=None):
    authorizer = context.authorizer
    refusal = acl_change_refusal(authorizer, session)
    if refusal is not None:
        return _all(request, *refusal)
    bindings = [AclBinding(c.resource_type, c.resource_name, c.resource_pattern_type, c.principal, c.host,
                           c.operation, c.permission_type) for c in request.creations]
    if not all(has_concrete_codes(acl) for acl in bindings):
        return _all(request, Errors.UNKNOWN_SERVER_ERROR, None)
    results, valid = [], []
    for acl in bindings:
        error = creation_error(acl)
        if error is None:
            valid.append(acl)
            results.append(msg.Result(error_code=Errors.NONE, error_message=""))  # "" as Kafka, not null
        else:
            results.append(msg.Result(error_code=Errors.INVALID_REQUEST, error_message=error))
    try:
        authorizer.store.create(valid)
    except KafkaError as exc:
        for result in results:
            if result.error_code == Errors.NONE:
                result.error_code, result.error_message = exc.error, exc.message or exc.error.name
    return msg.RESPONSE(results=results)


def _all(request, code, message):
    return msg.RESPONSE(results=[msg.Result(error_code=code, error_message=message) for _ in request.creations])
