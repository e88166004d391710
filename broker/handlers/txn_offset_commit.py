"""TxnOffsetCommit (28), v0-3.

Writes the offsets as a transactional batch (the producer's id and epoch) to
the group's ``__consumer_offsets`` partition, which AddOffsetsToTxn must have
put in the transaction; they become the group's offsets when the COMMIT
marker lands there and vanish on ABORT. An older producer epoch is
INVALID_PRODUCER_EPOCH; a partition not in the transaction INVALID_TXN_STATE.

v3 (KIP-447) carries the consumer's generation, member id and instance id,
checked as for OffsetCommit, so a zombie from an old generation cannot
commit; v0-2 carry none of them and are let through, as in Kafka.
"""

from weir.protocol.api_keys import ApiKey
from weir.protocol.messages import txn_offset_commit as msg

from ..dispatcher import handles
from ._offset_requests import commit_and_answer


@handles(ApiKey.TXN_OFFSET_COMMIT, versions=(0, 3))
async def handle(context, header, request):
    async def store(offsets):
        context.groups.validate_offset_commit(request.group_id, request.member_id, request.group_instance_id,
                                              request.generation_id, transactional=True)
        verify = context.txn.verifier(request.transactional_id, *context.txn.offsets_partition(request.group_id))
        await context.offsets.commit(request.group_id, offsets, producer_id=request.producer_id,
                                     producer_epoch=request.producer_epoch, verify_txn=verify)
    return await commit_and_answer(context, msg, request.topics, store)
