"""ListTransactions (66), v0-2.

Lists the transactional ids the coordinator holds, with Kafka's filters: by
state name (names Kafka does not know come back in ``unknown_state_filters``),
by producer id, by running time (v1: only transactions started more than
``duration_filter`` ms ago; -1 = no filter) and by a transactional id regular
expression (v2, KIP-1152; null or empty = no filter). Dead ids, which are
being expired, are never listed, as in Kafka. Deviation: the pattern is a
Python ``re`` expression matched against the whole id, where Kafka compiles
it with RE2/J; the two agree on the common syntax. An invalid pattern is
INVALID_REGULAR_EXPRESSION.
"""

import re

from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import Errors
from weir.protocol.messages import list_transactions as msg

from ..acl import model as acl
from ..dispatcher import handles
from ..txn.state import TxnState

#: Kafka's names for the transaction states, as ListTransactions and DescribeTransactions spell them
STATE_NAMES = {
    TxnState.EMPTY: "Empty", TxnState.ONGOING: "Ongoing", TxnState.PREPARE_COMMIT: "PrepareCommit",
    TxnState.PREPARE_ABORT: "PrepareAbort", TxnState.COMPLETE_COMMIT: "CompleteCommit",
    TxnState.COMPLETE_ABORT: "CompleteAbort", TxnState.DEAD: "Dead",
    TxnState.PREPARE_EPOCH_FENCE: "PrepareEpochFence",
}
_BY_NAME = {name: state for state, name in STATE_NAMES.items()}


@handles(ApiKey.LIST_TRANSACTIONS, versions=(0, 2))
def handle(context, header, request, session=None):
    response = msg.RESPONSE()
    pattern = None
    if request.transactional_id_pattern:
        try:
            pattern = re.compile(request.transactional_id_pattern)
        except re.error:
            response.error_code = Errors.INVALID_REGULAR_EXPRESSION
            return response
    states = set()
    for name in request.state_filters:
        if name in _BY_NAME:
            states.add(_BY_NAME[name])
        else:
            response.unknown_state_filters.append(name)
    producer_ids = set(request.producer_id_filters)
    duration = request.duration_filter
    now = context.clock.now_ms()
    for metadata in list(context.txn.txns.values()):
        if metadata.state == TxnState.DEAD:
            continue
        if producer_ids and metadata.producer_id not in producer_ids:
            continue
        if request.state_filters and metadata.state not in states:
            continue
        if duration >= 0 and now - metadata.start_ms <= duration:
            continue
        if pattern is not None and not pattern.fullmatch(metadata.transactional_id):
            continue
        if not context.authorizer.allows(session, acl.DESCRIBE, acl.TRANSACTIONAL_ID, metadata.transactional_id):
            continue  # ACLs: only the transactions the principal may describe
        response.transaction_states.append(msg.TransactionState(
            transactional_id=metadata.transactional_id, producer_id=metadata.producer_id,
            transaction_state=STATE_NAMES[metadata.state]))
    return response
