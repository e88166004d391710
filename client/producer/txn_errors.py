"""How an error answer to a transactional request leaves the transaction: the Java client's rules.

One table, ``RULES``: per request, which codes are fatal (the producer can only be closed: fenced,
authorization), which are abortable (abort and carry on), and which are abortable only after an
epoch bump (KIP-360: UNKNOWN_PRODUCER_ID, INVALID_PRODUCER_ID_MAPPING; at transaction version 2
the abort's EndTxn bumps the epoch itself). ``classify`` reads it; ``error_instance`` builds the
exception the caller sees.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import Errors

from ..consumer.group import CommitFailedError
from ..errors import BrokerResponseError, error_for


class StaleGroupMetadataError(CommitFailedError):
    """TxnOffsetCommit refused the consumer's generation or member id (KIP-447): abort the transaction."""
    fatal, abortable, retriable = False, True, False


class Outcome(enum.Enum):
    FATAL = "fatal"
    ABORTABLE = "abortable"
    ABORTABLE_WITH_BUMP = "abortable after an epoch bump"  # fatal where the broker cannot bump (InitProducerId < v3)


@dataclass(frozen=True)
class Rule:
    fatal: frozenset = frozenset()
    abortable: frozenset = frozenset()
    bump: frozenset = frozenset()
    otherwise: Outcome = Outcome.FATAL


E = Errors
_FENCED = frozenset({E.PRODUCER_FENCED, E.INVALID_PRODUCER_EPOCH})  # an old coordinator's INVALID_PRODUCER_EPOCH
_PID_LOST = frozenset({E.UNKNOWN_PRODUCER_ID, E.INVALID_PRODUCER_ID_MAPPING})
#: Non-retriable answers per request, as the Java client's handlers classify them.
RULES: dict[ApiKey, Rule] = {
    ApiKey.INIT_PRODUCER_ID: Rule(
        abortable=frozenset({E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, E.CLUSTER_AUTHORIZATION_FAILED,
                             E.TRANSACTION_ABORTABLE})),
    ApiKey.ADD_PARTITIONS_TO_TXN: Rule(
        fatal=frozenset({E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, E.INVALID_TXN_STATE}),
        bump=_PID_LOST, otherwise=Outcome.ABORTABLE),  # TOPIC_AUTHORIZATION, OPERATION_NOT_ATTEMPTED, ...
    ApiKey.END_TXN: Rule(
        fatal=frozenset({E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, E.INVALID_TXN_STATE}),
        abortable=frozenset({E.TRANSACTION_ABORTABLE}), bump=_PID_LOST),
    ApiKey.ADD_OFFSETS_TO_TXN: Rule(
        fatal=frozenset({E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, E.INVALID_TXN_STATE}),
        abortable=frozenset({E.GROUP_AUTHORIZATION_FAILED, E.TRANSACTION_ABORTABLE}), bump=_PID_LOST),
    ApiKey.TXN_OFFSET_COMMIT: Rule(
        fatal=frozenset({E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, E.UNSUPPORTED_FOR_MESSAGE_FORMAT}),
        abortable=frozenset({E.GROUP_AUTHORIZATION_FAILED, E.FENCED_INSTANCE_ID, E.TRANSACTION_ABORTABLE,
                             E.UNKNOWN_MEMBER_ID, E.ILLEGAL_GENERATION})),
    # A failed batch: the Java client's maybeTransitionToErrorState.
    ApiKey.PRODUCE: Rule(
        fatal=frozenset({E.CLUSTER_AUTHORIZATION_FAILED, E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                         E.UNSUPPORTED_VERSION}), otherwise=Outcome.ABORTABLE_WITH_BUMP),
}


def classify(api_key: ApiKey, code: int) -> Outcome:
    """How a non-retriable error answer to ``api_key`` leaves the transaction."""
    rule = RULES[api_key]
    if code in _FENCED and api_key != ApiKey.PRODUCE or code == E.PRODUCER_FENCED:
        return Outcome.FATAL
    if code in rule.fatal:
        return Outcome.FATAL
    if code in rule.bump:
        return Outcome.ABORTABLE_WITH_BUMP
    if code in rule.abortable:
        return Outcome.ABORTABLE
    return rule.otherwise


def error_instance(api_key: ApiKey, code: int, detail: str | None = None) -> BrokerResponseError:
    """The exception a caller sees: fenced answers all become ProducerFencedError, as in Java;
    a stale group generation becomes the consumer's CommitFailedError."""
    if code in _FENCED and api_key != ApiKey.PRODUCE:
        code = E.PRODUCER_FENCED
    if api_key == ApiKey.TXN_OFFSET_COMMIT and code in (E.UNKNOWN_MEMBER_ID, E.ILLEGAL_GENERATION):
        return StaleGroupMetadataError(f"TxnOffsetCommit refused ({Errors(code).name}): the consumer group "
                                 f"metadata is stale, a rebalance happened")
    return error_for(code)(f"{api_key.name}: {detail}" if detail else api_key.name)
