"""OffsetCommit (8), v2-8.

Stores the offsets in ``__consumer_offsets``. Until group membership exists
(its own issue), only commits outside a generation are accepted (generation
-1, as consumers using assign() send them, and as Kafka accepts them for a
group with no members); a commit naming a generation is ILLEGAL_GENERATION.
The v2-4 retention time is ignored, as Kafka 2.1+ ignores it.
"""

from protocol.api_keys import ApiKey
from protocol.errors import Errors, KafkaError
from protocol.messages import offset_commit as msg

from ..dispatcher import handles
from ..group.offsets import validate_group_id
from ._offset_requests import per_partition_response, requested_offsets


@handles(ApiKey.OFFSET_COMMIT, versions=(2, 8))
async def handle(context, header, request):
    offsets, errors = requested_offsets(context, request.topics, context.clock.now_ms())
    try:
        validate_group_id(request.group_id)
        if request.generation_id_or_member_epoch >= 0:
            raise KafkaError(Errors.ILLEGAL_GENERATION, "this group has no generation")
        await context.offsets.commit(request.group_id, offsets)
        code = Errors.NONE
    except KafkaError as exc:
        code = exc.code
    for tp in offsets:
        errors[tp] = code
    return per_partition_response(msg, request.topics, errors)
