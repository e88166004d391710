"""How transaction version 2 (KIP-890 part 2) ends a transaction, as pure functions of the metadata.

Every commit or abort bumps the epoch, so a late write from the ended transaction is fenced, and a
retry is known by the epoch it names (one behind the bumped one). Kafka's table
(TransactionCoordinator.endTransaction), with PF = PRODUCER_FENCED, ITS = INVALID_TXN_STATE,
EB = bump the epoch and end:

                       abort: retry / current      commit: retry / current
    Empty                   PF    / EB                   PF    / ITS
    CompleteAbort           NONE  / EB                   ITS   / ITS
    CompleteCommit          ITS   / EB                   NONE  / ITS

Ongoing ends at the current epoch either way; Prepare* is a retry's CONCURRENT_TRANSACTIONS.
"""

from __future__ import annotations

from collections.abc import Callable

from weir.protocol.errors import Errors, KafkaError

from .state import MAX_EPOCH, PREPARING, TV2, TV2_EMPTY_ABORT_FROM, TxnMetadata, TxnState

NO_PRODUCER_ID = -1
SHORT_MAX = MAX_EPOCH + 1


def end_txn(metadata: TxnMetadata | None, producer_id: int, epoch: int, commit: bool, now_ms: int,
            allocate: Callable[[], int]) -> TxnMetadata | tuple[int, int]:
    """The Prepare* to write for an EndTxn v5+, or the (producer id, epoch) that answers a retry of
    one already done; raises the KafkaError Kafka answers otherwise."""
    if metadata is None:
        raise KafkaError(Errors.INVALID_PRODUCER_ID_MAPPING, "the producer id does not belong to this transactional id")
    state = metadata.state
    retry_on_overflow = (metadata.previous_producer_id == producer_id and epoch == MAX_EPOCH
                         and metadata.producer_epoch == 0)
    retry_on_bump = metadata.producer_epoch == epoch + 1
    if metadata.producer_id != producer_id and not retry_on_overflow:
        raise KafkaError(Errors.INVALID_PRODUCER_ID_MAPPING, "the producer id does not belong to this transactional id")
    if state in PREPARING:
        valid = retry_on_bump
    elif state in (TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT):
        valid = retry_on_bump or retry_on_overflow or epoch == metadata.producer_epoch
    else:
        valid = epoch == metadata.producer_epoch
    if not valid:
        raise KafkaError(Errors.PRODUCER_FENCED, "a newer producer epoch exists for this transactional id")
    is_retry = retry_on_bump or retry_on_overflow
    if state == TxnState.ONGOING or (not commit and not is_retry and state in TV2_EMPTY_ABORT_FROM):
        return prepare_end(metadata, commit, now_ms, allocate)
    if state == (TxnState.COMPLETE_COMMIT if commit else TxnState.COMPLETE_ABORT) and is_retry:
        return metadata.producer_id, metadata.producer_epoch
    if state == (TxnState.PREPARE_COMMIT if commit else TxnState.PREPARE_ABORT):
        raise KafkaError(Errors.CONCURRENT_TRANSACTIONS)
    raise KafkaError(Errors.INVALID_TXN_STATE, f"cannot {'commit' if commit else 'abort'} in state {state.name}")


def prepare_end(metadata: TxnMetadata, commit: bool, now_ms: int, allocate: Callable[[], int]) -> TxnMetadata:
    """Prepare* with the epoch bumped (not past Short.MAX_VALUE: an abort already there goes through at
    that epoch, as Kafka lets it); an exhausted epoch also draws the next producer id. An abort with
    nothing added starts its transaction now, as Kafka dates an empty abort."""
    bumped = metadata.producer_epoch if metadata.producer_epoch >= SHORT_MAX else metadata.producer_epoch + 1
    next_id = allocate() if metadata.epoch_exhausted else NO_PRODUCER_ID
    nothing_added = metadata.state != TxnState.ONGOING
    return metadata.transition_to(TxnState.PREPARE_COMMIT if commit else TxnState.PREPARE_ABORT,
                                  producer_epoch=bumped, last_producer_epoch=metadata.producer_epoch,
                                  next_producer_id=next_id, client_version=TV2, last_update_ms=now_ms,
                                  start_ms=now_ms if nothing_added else metadata.start_ms)


def completed_identity(prepared: TxnMetadata) -> tuple[int, int]:
    """The producer id and epoch a prepared transaction leaves: at version 2 an exhausted epoch hands
    over to the next producer id at epoch 0 (the client never sees Short.MAX_VALUE)."""
    if prepared.bumps_epoch_at_end and prepared.next_producer_id != NO_PRODUCER_ID:
        return prepared.next_producer_id, 0
    return prepared.producer_id, prepared.producer_epoch
