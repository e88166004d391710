"""ListGroups (16), v0-5; v4 filters by state, v5 by type (every Weir group is "classic")."""

from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import Errors
from weir.protocol.messages import list_groups as msg

from ..dispatcher import handles
from ..group import admin


@handles(ApiKey.LIST_GROUPS, versions=(0, 5))
def handle(context, header, request):
    found = admin.list_groups(context.groups, request.states_filter or [], request.types_filter or [])
    return msg.RESPONSE(error_code=Errors.NONE, groups=[
        msg.ListedGroup(group_id=group.group_id, protocol_type=group.protocol_type or "",
                        group_state=group.state.value, group_type=admin.GROUP_TYPE)
        for group in found])
