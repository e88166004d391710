"""LeaveGroup (13), v0-3.

v0-2 name one member, and its error is the top-level one; v3 batches members
by member id and/or group.instance.id, with an error per member (as Kafka
converts between the two).
"""

from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import Errors, KafkaError
from weir.protocol.messages import leave_group as msg

from ..acl.model import GROUP, READ
from ..dispatcher import handles


@handles(ApiKey.LEAVE_GROUP, versions=(0, 3))
async def handle(context, header, request, session=None):
    if not context.authorizer.allows(session, READ, GROUP, request.group_id):  # ACLs
        return msg.RESPONSE(error_code=Errors.GROUP_AUTHORIZATION_FAILED, members=[])
    batched = header.api_version >= 3
    leaving = ([(m.member_id, m.group_instance_id) for m in request.members] if batched
               else [(request.member_id, None)])
    try:
        errors = context.groups.leave_group(request.group_id, leaving)
    except KafkaError as exc:
        return msg.RESPONSE(error_code=exc.code, members=[])
    await context.groups.writes_done()  # the group's new state is in the log before the answer
    if not batched:
        return msg.RESPONSE(error_code=errors[0])
    return msg.RESPONSE(error_code=Errors.NONE, members=[
        msg.MemberResponse(member_id=member_id, group_instance_id=instance_id, error_code=error)
        for (member_id, instance_id), error in zip(leaving, errors, strict=True)])
