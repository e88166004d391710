"""FindCoordinator (10), v0-4: this node coordinates every group and transactional id.

Key type 0 is a group, 1 a transactional id (v1+); v4 batches keys. Other key
types (share groups, v6) are INVALID_REQUEST.
"""

from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import Errors
from weir.protocol.messages import find_coordinator as msg

from ..acl import model as acl
from ..dispatcher import handles
from ..security.session import advertised_address

GROUP, TRANSACTION = 0, 1


@handles(ApiKey.FIND_COORDINATOR, versions=(0, 4))
def handle(context, header, request, session=None):
    host, port = advertised_address(context, session)  # the client's own listener
    node = context.node_id
    error = Errors.NONE if request.key_type in (GROUP, TRANSACTION) else Errors.INVALID_REQUEST
    found = error == Errors.NONE
    if header.api_version >= 4:
        coordinators = []
        for key in request.coordinator_keys:
            code = error if error else _refusal(context, session, request.key_type, key)
            coordinators.append(msg.Coordinator(key=key, node_id=-1 if code else node, host="" if code else host,
                                                port=-1 if code else port, error_code=code))
        return msg.RESPONSE(coordinators=coordinators)
    if found and (error := _refusal(context, session, request.key_type, request.key)):
        found = False
    return msg.RESPONSE(error_code=error, node_id=node if found else -1, host=host if found else "",
                        port=port if found else -1)


def _refusal(context, session, key_type, key) -> int:
    """ACLs: DESCRIBE on the group or the TransactionalId, as KafkaApis checks them."""
    if key_type == GROUP:
        allowed = context.authorizer.allows(session, acl.DESCRIBE, acl.GROUP, key)
        return Errors.NONE if allowed else Errors.GROUP_AUTHORIZATION_FAILED
    allowed = context.authorizer.allows(session, acl.DESCRIBE, acl.TRANSACTIONAL_ID, key)
    return Errors.NONE if allowed else Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
