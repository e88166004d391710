"""JoinGroup (11), v0-5.

v0 has no rebalance timeout (the session timeout serves as one, as in Kafka);
v4+ answers a join without a member id with MEMBER_ID_REQUIRED and the id to
rejoin with (KIP-394); v5 carries group.instance.id (static membership).
A consumer-protocol group with members serves the join itself (KIP-848 migration:
broker/group/consumer/classic_members.py): the answer comes at once, with no leader.
"""

from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import Errors
from weir.protocol.messages import join_group as msg

from ..acl.model import GROUP, READ
from ..dispatcher import handles


@handles(ApiKey.JOIN_GROUP, versions=(0, 5))
async def handle(context, header, request, client_host="", session=None):
    version = header.api_version
    if not context.authorizer.allows(session, READ, GROUP, request.group_id):  # ACLs
        return msg.RESPONSE(error_code=Errors.GROUP_AUTHORIZATION_FAILED, generation_id=-1, leader="",
                            member_id="", protocol_name=None if version >= 7 else "", members=[])
    rebalance_timeout = request.session_timeout_ms if version == 0 else request.rebalance_timeout_ms
    result = await context.groups.join_group(
        request.group_id, request.member_id, request.group_instance_id, request.protocol_type,
        [(p.name, bytes(p.metadata)) for p in request.protocols], request.session_timeout_ms,
        rebalance_timeout, header.client_id or "", client_host, require_known_member_id=version >= 4)
    return msg.RESPONSE(
        error_code=result.error, generation_id=result.generation,
        protocol_name=result.protocol_name if result.protocol_name is not None or version >= 7 else "",
        leader=result.leader, member_id=result.member_id,
        members=[msg.Member(member_id=member_id, group_instance_id=instance_id, metadata=metadata)
                 for member_id, instance_id, metadata in result.members])
