"""EndTxn (26), v0-3: commit or abort the ongoing transaction.

Answered once PrepareCommit/PrepareAbort is in ``__transaction_state``; the
markers and the Complete record follow (broker/txn/coordinator.py). A retry
after completion succeeds; the opposite outcome is INVALID_TXN_STATE.
"""

from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import Errors, KafkaError
from weir.protocol.messages import end_txn as msg

from ..dispatcher import handles
from ._txn_errors import fenced_for_version


@handles(ApiKey.END_TXN, versions=(0, 3))
async def handle(context, header, request):
    try:
        await context.txn.end_txn(request.transactional_id, request.producer_id, request.producer_epoch,
                                  request.committed)
    except KafkaError as exc:
        return msg.RESPONSE(error_code=fenced_for_version(exc.code, header.api_version, 2))
    return msg.RESPONSE(error_code=Errors.NONE)
