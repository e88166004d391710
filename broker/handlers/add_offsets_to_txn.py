"""AddOffsetsToTxn (25), v0-4 (v4 only lets Kafka answer TRANSACTION_ABORTABLE): adds the group's
``__consumer_offsets`` partition
to the transaction, so TxnOffsetCommit may write there."""

from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import Errors, KafkaError
from weir.protocol.messages import add_offsets_to_txn as msg

from ..acl import model as acl
from ..dispatcher import handles
from ..group.offsets import validate_group_id
from ._txn_errors import fenced_for_version


@handles(ApiKey.ADD_OFFSETS_TO_TXN, versions=(0, 4))
async def handle(context, header, request, session=None):
    authorizer = context.authorizer  # ACLs: WRITE on the TransactionalId, READ on the group
    if not authorizer.allows(session, acl.WRITE, acl.TRANSACTIONAL_ID, request.transactional_id):
        return msg.RESPONSE(error_code=Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    if not authorizer.allows(session, acl.READ, acl.GROUP, request.group_id):
        return msg.RESPONSE(error_code=Errors.GROUP_AUTHORIZATION_FAILED)
    try:
        validate_group_id(request.group_id)
        topic, index = context.txn.offsets_partition(request.group_id)
        context.offsets.log.partition(index)  # the topic exists before the transaction names it
        await context.txn.add_partitions(request.transactional_id, request.producer_id, request.producer_epoch,
                                         {(topic, index)})
    except KafkaError as exc:
        return msg.RESPONSE(error_code=fenced_for_version(exc.code, header.api_version, 2))
    return msg.RESPONSE(error_code=Errors.NONE)
