"""OffsetCommit (8), v2-9.

Stores the offsets in ``__consumer_offsets``. The committer must be a member
of the group's current generation (UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION,
FENCED_INSTANCE_ID, REBALANCE_IN_PROGRESS otherwise), or send generation -1
while the group has no members (assign() consumers, admin tools); that
creates the group if needed, as Kafka's "simple" groups. The v2-4 retention
time is ignored, as Kafka 2.1+ ignores it.

In a consumer-protocol group (KIP-848) the committer is a member with its current member epoch
in ``generation_id_or_member_epoch``, or an older one for partitions it has held since then
(KIP-1251); otherwise STALE_MEMBER_EPOCH (ILLEGAL_GENERATION for a classic member), for every
partition of the request as Kafka answers, or UNKNOWN_MEMBER_ID. It must send v9+
(UNSUPPORTED_VERSION below).
"""

from weir.protocol.api_keys import ApiKey
from weir.protocol.messages import offset_commit as msg

from ..dispatcher import handles
from ._offset_requests import commit_and_answer, commit_refusal, refused_response


@handles(ApiKey.OFFSET_COMMIT, versions=(2, 9))
async def handle(context, header, request, session=None):
    refusal, denied = commit_refusal(context, session, request.group_id, request.topics)  # ACLs
    if refusal is not None:
        return refused_response(msg, request.topics, refusal)
    async def store(offsets):
        context.groups.validate_offset_commit(
            request.group_id, request.member_id, request.group_instance_id, request.generation_id_or_member_epoch,
            transactional=False, api_version=header.api_version, partitions=list(offsets))
        await context.offsets.commit(request.group_id, offsets)
    return await commit_and_answer(context, msg, request.topics, store, denied)
