"""DeleteGroups (42), v0-2: an empty group and its committed offsets go; others are NON_EMPTY_GROUP."""

from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import Errors, KafkaError
from weir.protocol.messages import delete_groups as msg

from ..acl import model as acl
from ..dispatcher import handles
from ..group import admin
from ..group.offsets import validate_group_id


@handles(ApiKey.DELETE_GROUPS, versions=(0, 2))
async def handle(context, header, request, session=None):
    results = []
    for group_id in request.groups_names:
        if not context.authorizer.allows(session, acl.DELETE, acl.GROUP, group_id):  # ACLs
            results.append(msg.Result(group_id=group_id, error_code=Errors.GROUP_AUTHORIZATION_FAILED))
            continue
        try:
            validate_group_id(group_id)
            error = await admin.delete_group(context.groups, group_id)
        except KafkaError as exc:
            error = exc.error
        results.append(msg.Result(group_id=group_id, error_code=error))
    return msg.RESPONSE(results=results)
