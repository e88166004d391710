"""InitProducerId (22), v0-4.

Without a transactional id: a fresh producer id from the persisted allocator
(never reused across restarts) with epoch 0, as Kafka does for idempotent
producers. Transactional ids need the transaction coordinator, which is not
built yet; until it is, they are refused with INVALID_REQUEST rather than
given an id whose transactions nothing would coordinate.
"""

from protocol.api_keys import ApiKey
from protocol.errors import Errors
from protocol.messages import init_producer_id as msg

from ..dispatcher import handles


@handles(ApiKey.INIT_PRODUCER_ID, versions=(0, 4))
def handle(context, header, request):
    if request.transactional_id is not None:
        return msg.RESPONSE(error_code=Errors.INVALID_REQUEST, producer_id=-1, producer_epoch=-1)
    return msg.RESPONSE(error_code=Errors.NONE, producer_id=context.producer_ids.allocate(), producer_epoch=0)
