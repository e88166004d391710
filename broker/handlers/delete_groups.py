"""DeleteGroups (42), v0-3: an empty group and its committed offsets go; others are NON_EMPTY_GROUP.

v3 (Kafka 4.4) adds a message per group, which Kafka 4.4.0 leaves null for every answer a group
of these types gets. The empty group id is looked up like any other (Kafka keeps it deletable
for groups of old clients): no group can have it here, so it is GROUP_ID_NOT_FOUND, as Kafka answers.
"""

from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import Errors, KafkaError
from weir.protocol.messages import delete_groups as msg

from ..acl import model as acl
from ..dispatcher import handles
from ..group import admin


@handles(ApiKey.DELETE_GROUPS, versions=(0, 3))
async def handle(context, header, request, session=None):
    results = []
    for group_id in request.groups_names:
        if not context.authorizer.allows(session, acl.DELETE, acl.GROUP, group_id):  # ACLs
            results.append(msg.Result(group_id=group_id, error_code=Errors.GROUP_AUTHORIZATION_FAILED))
            continue
        try:
            error = await admin.delete_group(context.groups, group_id)
        except KafkaError as exc:
            error = exc.error
        results.append(msg.Result(group_id=group_id, error_code=error))
    return msg.RESPONSE(results=results)
