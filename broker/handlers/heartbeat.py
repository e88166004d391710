"""Heartbeat (12), v0-3: keeps a member's session; REBALANCE_IN_PROGRESS tells it to rejoin."""

from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import Errors
from weir.protocol.messages import heartbeat as msg

from ..acl.model import GROUP, READ
from ..dispatcher import handles


@handles(ApiKey.HEARTBEAT, versions=(0, 3))
def handle(context, header, request, session=None):
    if not context.authorizer.allows(session, READ, GROUP, request.group_id):  # ACLs
        return msg.RESPONSE(error_code=Errors.GROUP_AUTHORIZATION_FAILED)
    error = context.groups.heartbeat(request.group_id, request.generation_id, request.member_id,
                                     request.group_instance_id)
    return msg.RESPONSE(error_code=error)
