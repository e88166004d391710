"""The exception a transactional request's error answer becomes (how it leaves the transaction is
``client.error_policy.classify``'s decision, the Java client's rules)."""

from __future__ import annotations

from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import Errors

from ..consumer.group import CommitFailedError
from ..error_policy import _FENCED, RULES, Outcome, Rule, classify  # noqa: F401 (the rules' home, re-exported)
from ..errors import KafkaException, error_instance

E = Errors


class StaleGroupMetadataError(CommitFailedError):
    """TxnOffsetCommit refused the consumer's generation or member id (KIP-447): abort the transaction."""
    retriable = False

    @property
    def abortable(self) -> bool:
        return True


def txn_error(api_key: ApiKey, code: int, detail: str | None = None) -> KafkaException:
    """The exception a caller sees: fenced answers all become ProducerFencedError, as in Java;
    a stale group generation becomes the consumer's CommitFailedError."""
    if code in _FENCED and api_key != ApiKey.PRODUCE:
        code = E.PRODUCER_FENCED
    if api_key == ApiKey.TXN_OFFSET_COMMIT and code in (E.UNKNOWN_MEMBER_ID, E.ILLEGAL_GENERATION):
        return StaleGroupMetadataError(f"TxnOffsetCommit refused ({Errors(code).name}): the consumer group "
                                       f"metadata is stale, a rebalance happened")
    return error_instance(code, f"{api_key.name}: {detail}" if detail else api_key.name, request=api_key)
