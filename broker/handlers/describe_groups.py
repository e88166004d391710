"""DescribeGroups (15), v0-6: state, protocol and members of each group.

An unknown group is described as Dead with no error before v6; from v6 (KIP-1043) it is
GROUP_ID_NOT_FOUND with the message Kafka gives, so that the Java Admin's
describeConsumerGroups fails with GroupIdNotFoundException for it, as against Kafka 4.
v3+ ``include_authorized_operations`` gets every group operation: no authorizer allows all.
"""

from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import Errors
from weir.protocol.messages import describe_groups as msg

from ..acl import model as acl
from ..dispatcher import handles
from ..group import admin
from ..group.classic import GroupState


@handles(ApiKey.DESCRIBE_GROUPS, versions=(0, 6))
def handle(context, header, request, session=None):
    described = []
    for group_id in request.groups:
        if not context.authorizer.allows(session, acl.DESCRIBE, acl.GROUP, group_id):  # ACLs
            described.append(msg.Group(error_code=Errors.GROUP_AUTHORIZATION_FAILED, group_id=group_id,
                                       group_state="", protocol_type="", protocol_data="", members=[]))
            continue
        summary = admin.describe(context.groups, group_id)
        if header.api_version >= 6 and summary.state == GroupState.DEAD.value:
            # a consumer-protocol group (KIP-848) is described by ConsumerGroupDescribe, as in Kafka
            # (and a share group, KIP-932, by ShareGroupDescribe)
            message = (f"Group {group_id} is not a classic group."
                       if context.groups.holds(group_id)
                       else f"Group {group_id} not found.")
            described.append(msg.Group(error_code=Errors.GROUP_ID_NOT_FOUND, error_message=message,
                                       group_id=group_id, group_state=summary.state, protocol_type="",
                                       protocol_data="", members=[]))
            continue
        described.append(msg.Group(
            error_code=summary.error, group_id=group_id, group_state=summary.state,
            protocol_type=summary.protocol_type, protocol_data=summary.protocol,
            members=[msg.Member(member_id=m.member_id, group_instance_id=m.group_instance_id, client_id=m.client_id,
                                client_host=m.client_host, member_metadata=m.metadata,
                                member_assignment=m.assignment)
                     for m in summary.members]))
        if request.include_authorized_operations and summary.error == 0:  # as Kafka: not on an error
            described[-1].authorized_operations = context.authorizer.authorized_operations(
                session, acl.GROUP, group_id)
    return msg.RESPONSE(groups=described)
