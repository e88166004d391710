"""What a caller may do after an error answer: one function of (request kind, error code).

``classify(request, code)`` is the whole taxonomy, and everything in the client asks it:
the call path (retry or not), the transaction manager (which error state), the error
objects themselves (``fatal``, ``abortable``, ``retriable`` read it). It decides as the
Java client does:

- RETRIABLE: the code is retriable in Kafka's table (``RetriableException``); the call path
  sends again, after a metadata refresh or a coordinator lookup where the code calls for it.
- For the transactional requests, the Java TransactionManager's response handlers, per
  request (``RULES``): FATAL (the producer can only be closed), ABORTABLE (abort the
  transaction and go on), ABORTABLE_WITH_BUMP (abortable once the epoch is bumped, KIP-360;
  fatal where the broker cannot bump). So INVALID_TXN_STATE is fatal to AddPartitionsToTxn,
  AddOffsetsToTxn and EndTxn, and TRANSACTIONAL_ID_AUTHORIZATION_FAILED is fatal everywhere
  except InitProducerId, where the Java client makes it abortable (an operator may grant the
  ACL and the producer initialize again).
- For any other request, and for an error with no request, the Java client's
  ``maybeTransitionToErrorState`` (a failed Produce): fatal for fenced, cluster or
  transactional-id authorization and unsupported-version errors, abortable otherwise (outside
  a transaction, "abortable" only means the client itself may go on).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import Errors


class Outcome(enum.Enum):
    RETRIABLE = "retriable"
    FATAL = "fatal"
    ABORTABLE = "abortable"
    ABORTABLE_WITH_BUMP = "abortable after an epoch bump"  # fatal where the broker cannot bump (InitProducerId < v3)


@dataclass(frozen=True)
class Rule:
    fatal: frozenset[int] = frozenset()
    abortable: frozenset[int] = frozenset()
    bump: frozenset[int] = frozenset()
    otherwise: Outcome = Outcome.FATAL


E = Errors
_FENCED = frozenset({E.PRODUCER_FENCED, E.INVALID_PRODUCER_EPOCH})  # an old coordinator's INVALID_PRODUCER_EPOCH
_PID_LOST = frozenset({E.UNKNOWN_PRODUCER_ID, E.INVALID_PRODUCER_ID_MAPPING})
#: Non-retriable answers per transactional request, as the Java client's handlers classify them.
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
    # A consumer-protocol member's heartbeat (AbstractHeartbeatRequestManager): fenced or unknown, the
    # member gives up its partitions and joins again at epoch 0 ("abortable": it goes on); any other
    # error (UNRELEASED_INSTANCE_ID, FENCED_INSTANCE_ID, GROUP_MAX_SIZE_REACHED, ...) is fatal to it.
    ApiKey.CONSUMER_GROUP_HEARTBEAT: Rule(abortable=frozenset({E.FENCED_MEMBER_EPOCH, E.UNKNOWN_MEMBER_ID})),
    # The transaction manager's FindCoordinator (FindCoordinatorHandler).
    ApiKey.FIND_COORDINATOR: Rule(
        fatal=frozenset({E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED}),
        abortable=frozenset({E.GROUP_AUTHORIZATION_FAILED, E.TRANSACTION_ABORTABLE})),
}
#: A failed batch, and every request without a rule: the Java client's maybeTransitionToErrorState.
GENERIC = Rule(fatal=frozenset({E.CLUSTER_AUTHORIZATION_FAILED, E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                                E.UNSUPPORTED_VERSION}), otherwise=Outcome.ABORTABLE_WITH_BUMP)


def is_retriable(code: int) -> bool:
    """Kafka's table; an unknown code is not (the Java client maps it to UnknownServerException)."""
    try:
        return Errors(code).retriable
    except ValueError:
        return False


def classify(request: int | None, code: int) -> Outcome:
    """How an error answer ``code`` to ``request`` (an ApiKey; None: not known) leaves the caller."""
    if is_retriable(code):
        return Outcome.RETRIABLE
    rule = RULES.get(ApiKey(request)) if request is not None and request in ApiKey._value2member_map_ else None
    if code == E.PRODUCER_FENCED or code in _FENCED and rule is not None:
        return Outcome.FATAL
    rule = rule or GENERIC
    if code in rule.fatal:
        return Outcome.FATAL
    if code in rule.bump:
        return Outcome.ABORTABLE_WITH_BUMP
    if code in rule.abortable:
        return Outcome.ABORTABLE
    return rule.otherwise
