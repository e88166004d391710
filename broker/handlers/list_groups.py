"""ListGroups (16), v0-5; v4 filters by state, v5 by type: "classic" groups (JoinGroup) and
"consumer" groups (ConsumerGroupHeartbeat, KIP-848), whose states are Empty, Assigning,
Reconciling and Stable; both have protocol type "consumer", as in Kafka. "share" groups (KIP-932),
Empty or Stable, have protocol type "share"; "streams" groups (KIP-1071) too."""

from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import Errors
from weir.protocol.messages import list_groups as msg

from ..acl import model as acl
from ..dispatcher import handles
from ..group import admin
from ..group.classic import CONSUMER_PROTOCOL_TYPE

CONSUMER_GROUP_TYPE = "consumer"
SHARE_GROUP_TYPE = "share"  # also its protocol type
STREAMS_GROUP_TYPE = "streams"  # also its protocol type (KIP-1071)


@handles(ApiKey.LIST_GROUPS, versions=(0, 5))
def handle(context, header, request, session=None):
    states, types = request.states_filter or [], request.types_filter or []
    found = admin.list_groups(context.groups, states, types)
    listed = [msg.ListedGroup(group_id=group.group_id, protocol_type=group.protocol_type or "",
                              group_state=group.state.value, group_type=admin.GROUP_TYPE)
              for group in found]
    wanted_states = {s.lower() for s in states}
    if not types or CONSUMER_GROUP_TYPE in {t.lower() for t in types}:
        listed += [msg.ListedGroup(group_id=group_id, protocol_type=CONSUMER_PROTOCOL_TYPE,
                                   group_state=group.state.value, group_type=CONSUMER_GROUP_TYPE)
                   for group_id, group in context.groups.consumer.groups.items()
                   if not wanted_states or group.state.value.lower() in wanted_states]
    if not types or SHARE_GROUP_TYPE in {t.lower() for t in types}:
        listed += [msg.ListedGroup(group_id=group_id, protocol_type=SHARE_GROUP_TYPE,
                                   group_state=group.state.value, group_type=SHARE_GROUP_TYPE)
                   for group_id, group in context.groups.share.groups.items()
                   if not wanted_states or group.state.value.lower() in wanted_states]
    if not types or STREAMS_GROUP_TYPE in {t.lower() for t in types}:
        listed += [msg.ListedGroup(group_id=group_id, protocol_type=STREAMS_GROUP_TYPE,
                                   group_state=group.state.value, group_type=STREAMS_GROUP_TYPE)
                   for group_id, group in context.groups.streams.groups.items()
                   if not wanted_states or group.state.value.lower() in wanted_states]
    authorizer = context.authorizer
    if authorizer.enabled and not authorizer.allows_cluster(session, acl.DESCRIBE, audit_denial=False):
        # ACLs: DESCRIBE on the cluster lists every group, else those the principal may DESCRIBE
        visible = authorizer.filter(session, acl.DESCRIBE, acl.GROUP, [g.group_id for g in listed],
                                    audit_denial=False)
        listed = [g for g in listed if g.group_id in visible]
    return msg.RESPONSE(error_code=Errors.NONE, groups=listed)
