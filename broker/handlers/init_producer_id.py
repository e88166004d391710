"""InitProducerId (22), v0-5 (v5: the client handles TRANSACTION_ABORTABLE, which Kafka's
coordinator never answers here either).

Without a transactional id: a fresh producer id from the persisted allocator
(never reused across restarts) with epoch 0, as Kafka does for idempotent
producers. With one: the transaction coordinator's answer (a new id, or an
epoch bump that fences the previous producer and aborts its open
transaction; v3+ may name the current id and epoch for KIP-360 recovery).
v0-3 get INVALID_PRODUCER_EPOCH where v4 gets PRODUCER_FENCED. A producer id block that
cannot be reserved on the disk answers COORDINATOR_LOAD_IN_PROGRESS (retriable), as Kafka's
producer id manager does while it waits for its next block.
"""

from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import Errors, KafkaError
from weir.protocol.messages import init_producer_id as msg

from ..acl import model as acl
from ..dispatcher import handles
from ._txn_errors import fenced_for_version


@handles(ApiKey.INIT_PRODUCER_ID, versions=(0, 5))
async def handle(context, header, request, session=None):
    if (refusal := _refusal(context.authorizer, session, request.transactional_id)) is not None:  # ACLs
        return msg.RESPONSE(error_code=refusal, producer_id=-1, producer_epoch=-1)
    try:
        if request.transactional_id is None:
            # A failed write of the next id block answers COORDINATOR_LOAD_IN_PROGRESS (producer_ids.py).
            return msg.RESPONSE(error_code=Errors.NONE, producer_id=context.producer_ids.allocate(), producer_epoch=0)
        producer_id, epoch = await context.txn.init_producer_id(
            request.transactional_id, request.transaction_timeout_ms, request.producer_id, request.producer_epoch)
    except KafkaError as exc:
        return msg.RESPONSE(error_code=fenced_for_version(exc.code, header.api_version, 4),
                            producer_id=-1, producer_epoch=-1)
    return msg.RESPONSE(error_code=Errors.NONE, producer_id=producer_id, producer_epoch=epoch)


def _refusal(authorizer, session, transactional_id) -> int | None:
    """KafkaApis's rule: a transactional producer needs WRITE on its TransactionalId; an idempotent
    one IDEMPOTENT_WRITE on the cluster or WRITE on some topic (Kafka 4, KIP-679)."""
    if not authorizer.enabled or session is None:
        return None
    if transactional_id is not None:
        if authorizer.allows(session, acl.WRITE, acl.TRANSACTIONAL_ID, transactional_id):
            return None
        return Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    if (authorizer.allows_cluster(session, acl.IDEMPOTENT_WRITE, audit_denial=False)
            or authorizer.allows_any(session, acl.WRITE, acl.TOPIC)):
        return None
    return Errors.CLUSTER_AUTHORIZATION_FAILED
