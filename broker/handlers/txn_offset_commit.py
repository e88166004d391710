"""TxnOffsetCommit (28), v0-5. Not v6 (Kafka 4.4: topics by id), as not OffsetCommit v10 nor Fetch v13+:
Weir serves the versions that name topics (shared/PROTOCOL.md 2.2), and clients negotiate down.

Writes the offsets as a transactional batch (the producer's id and epoch) to
the group's ``__consumer_offsets`` partition; they become the group's offsets
when the COMMIT marker lands there and vanish on ABORT. An older producer epoch
is INVALID_PRODUCER_EPOCH. Up to v4 AddOffsetsToTxn must have put the partition
in the transaction (otherwise INVALID_TXN_STATE, or TRANSACTION_ABORTABLE from
v4, as Kafka answers); v5 (transaction version 2, KIP-890 part 2) adds it itself.

v3 (KIP-447) carries the consumer's generation, member id and instance id,
checked as for OffsetCommit, so a zombie from an old generation cannot
commit; v0-2 carry none of them and are let through, as in Kafka. In a consumer-protocol
group (KIP-848) the generation is the member epoch (the Java consumer's groupMetadata() carries
it): ILLEGAL_GENERATION for every partition when it is newer than the member's, or older and one
of the partitions was not the member's since then (KIP-1251), as Kafka maps its
STALE_MEMBER_EPOCH on this API; no member id, generation -1 and no instance id commit as before
KIP-447.
"""

from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import Errors
from weir.protocol.messages import txn_offset_commit as msg

from ..dispatcher import handles
from ._offset_requests import commit_and_answer, commit_refusal, refused_response
from ._txn_errors import abortable_for_version, implicit_add_error

FIRST_ABORTABLE_VERSION, FIRST_TV2_VERSION = 4, 5


@handles(ApiKey.TXN_OFFSET_COMMIT, versions=(0, 5))
async def handle(context, header, request, session=None):
    refusal, denied = commit_refusal(context, session, request.group_id, request.topics,
                                     request.transactional_id)  # ACLs
    if refusal is not None:
        return refused_response(msg, request.topics, refusal)
    version = header.api_version

    async def store(offsets):
        context.groups.validate_offset_commit(request.group_id, request.member_id, request.group_instance_id,
                                              request.generation_id_or_member_epoch,
                                              transactional=True, partitions=list(offsets))
        offsets_partition = context.txn.offsets_partition(request.group_id)
        if version >= FIRST_TV2_VERSION:
            with implicit_add_error(Errors.COORDINATOR_NOT_AVAILABLE):
                await context.txn.add_partitions_implicitly(request.transactional_id, request.producer_id,
                                                            request.producer_epoch, {offsets_partition})
        with abortable_for_version(version >= FIRST_ABORTABLE_VERSION):
            verify = context.txn.verifier(request.transactional_id, *offsets_partition)
            await context.offsets.commit(request.group_id, offsets, producer_id=request.producer_id,
                                         producer_epoch=request.producer_epoch, verify_txn=verify)
    return await commit_and_answer(context, msg, request.topics, store, denied)
