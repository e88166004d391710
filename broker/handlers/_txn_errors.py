"""Error codes the transaction APIs owe each request version."""

from contextlib import contextmanager

from weir.protocol.errors import Errors, KafkaError


def fenced_for_version(code: int, version: int, first_with_producer_fenced: int) -> int:
    """Kafka answers INVALID_PRODUCER_EPOCH where a request version predates
    PRODUCER_FENCED (InitProducerId < 4, the other transaction APIs < 2)."""
    if code == Errors.PRODUCER_FENCED and version < first_with_producer_fenced:
        return Errors.INVALID_PRODUCER_EPOCH
    return code


@contextmanager
def abortable_for_version(abortable: bool):
    """A partition found outside the producer's transaction: INVALID_TXN_STATE for the request
    versions before KIP-890's TRANSACTION_ABORTABLE, that code from them on (Kafka's
    AddPartitionsToTxnManager translates back only for the older versions)."""
    try:
        yield
    except KafkaError as exc:
        if abortable and exc.error == Errors.INVALID_TXN_STATE:
            raise KafkaError(Errors.TRANSACTION_ABORTABLE, exc.message) from None
        raise


@contextmanager
def implicit_add_error(unavailable: Errors = Errors.NOT_ENOUGH_REPLICAS):
    """A Produce v12 / TxnOffsetCommit v5 whose implicit add failed answers as Kafka does:
    PRODUCER_FENCED as INVALID_PRODUCER_EPOCH (AddPartitionsToTxnManager's translation), the
    transaction coordinator being unavailable as ``unavailable`` (Produce: NOT_ENOUGH_REPLICAS,
    retriable with no metadata refresh; TxnOffsetCommit: COORDINATOR_NOT_AVAILABLE, as the group
    coordinator normalizes it); CONCURRENT_TRANSACTIONS stays itself at these versions."""
    try:
        yield
    except KafkaError as exc:
        if exc.error == Errors.PRODUCER_FENCED:
            raise KafkaError(Errors.INVALID_PRODUCER_EPOCH, exc.message) from None
        if exc.error in (Errors.COORDINATOR_LOAD_IN_PROGRESS, Errors.COORDINATOR_NOT_AVAILABLE,
                         Errors.NOT_COORDINATOR, Errors.NETWORK_EXCEPTION):
            raise KafkaError(unavailable,
                             f"Unable to add the partition to the transaction: {exc.error.name}") from None
        raise
