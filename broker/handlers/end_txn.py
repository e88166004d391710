"""EndTxn (26), v0-5: commit or abort the ongoing transaction.

Answered once PrepareCommit/PrepareAbort is in ``__transaction_state``; the
markers and the Complete record follow (broker/txn/coordinator.py). v0-4 run
transaction version 1: a retry after completion succeeds; the opposite outcome
is INVALID_TXN_STATE. v5 runs version 2 (KIP-890 part 2), as Kafka decides per
request: the epoch is bumped at every end, and the answer names the producer id
and epoch to go on with.
"""

from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import Errors, KafkaError
from weir.protocol.messages import end_txn as msg

from ..acl import model as acl
from ..dispatcher import handles
from ..txn.state import TV2
from ._txn_errors import fenced_for_version

FIRST_TV2_VERSION = 5


@handles(ApiKey.END_TXN, versions=(0, 5))
async def handle(context, header, request, session=None):
    if not context.authorizer.allows(session, acl.WRITE, acl.TRANSACTIONAL_ID, request.transactional_id):  # ACLs
        return msg.RESPONSE(error_code=Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    client_version = TV2 if header.api_version >= FIRST_TV2_VERSION else 0
    try:
        producer_id, epoch = await context.txn.end_txn(request.transactional_id, request.producer_id,
                                                       request.producer_epoch, request.committed, client_version)
    except KafkaError as exc:
        return msg.RESPONSE(error_code=fenced_for_version(exc.code, header.api_version, 2))
    return msg.RESPONSE(error_code=Errors.NONE, producer_id=producer_id, producer_epoch=epoch)
