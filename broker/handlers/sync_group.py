"""SyncGroup (14), v0-3: the leader sends the assignment; every member gets its share."""

from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import Errors
from weir.protocol.messages import sync_group as msg

from ..acl.model import GROUP, READ
from ..dispatcher import handles


@handles(ApiKey.SYNC_GROUP, versions=(0, 3))
async def handle(context, header, request, session=None):
    if not context.authorizer.allows(session, READ, GROUP, request.group_id):  # ACLs
        return msg.RESPONSE(error_code=Errors.GROUP_AUTHORIZATION_FAILED, assignment=b"")
    result = await context.groups.sync_group(
        request.group_id, request.generation_id, request.member_id, request.group_instance_id,
        {a.member_id: bytes(a.assignment) for a in request.assignments})
    return msg.RESPONSE(error_code=result.error, assignment=result.assignment)
