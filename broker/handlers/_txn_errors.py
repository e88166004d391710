"""Error codes the transaction APIs owe older request versions."""

from weir.protocol.errors import Errors


def fenced_for_version(code: int, version: int, first_with_producer_fenced: int) -> int:
    """Kafka answers INVALID_PRODUCER_EPOCH where a request version predates
    PRODUCER_FENCED (InitProducerId < 4, the other transaction APIs < 2)."""
    if code == Errors.PRODUCER_FENCED and version < first_with_producer_fenced:
        return Errors.INVALID_PRODUCER_EPOCH
    return code
