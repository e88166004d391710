"""DescribeTransactions (65), v0.

One answer per requested id, read from the transaction coordinator's current
state: state name (Kafka's spelling), timeout, start time, producer id and
epoch, and the partitions in the transaction grouped by topic. An empty id
is INVALID_REQUEST; an unknown id, or one being expired (Dead), is
TRANSACTIONAL_ID_NOT_FOUND, as Kafka answers. This node coordinates every id,
so NOT_COORDINATOR never arises.
"""

from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import Errors
from weir.protocol.messages import describe_transactions as msg

from ..acl import model as acl
from ..dispatcher import handles
from ..txn.state import TxnState
from .list_transactions import STATE_NAMES


@handles(ApiKey.DESCRIBE_TRANSACTIONS, versions=(0, 0))
def handle(context, header, request, session=None):
    return msg.RESPONSE(transaction_states=[_describe(context, txn_id, session)
                                            for txn_id in request.transactional_ids])


def _describe(context, txn_id, session=None):
    answer = msg.TransactionState(transactional_id=txn_id)
    authorizer = context.authorizer
    if not authorizer.allows(session, acl.DESCRIBE, acl.TRANSACTIONAL_ID, txn_id):  # ACLs
        answer.error_code = Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        return answer
    if not txn_id:
        answer.error_code = Errors.INVALID_REQUEST
        return answer
    metadata = context.txn.txns.get(txn_id)
    if metadata is None or metadata.state == TxnState.DEAD:
        answer.error_code = Errors.TRANSACTIONAL_ID_NOT_FOUND
        return answer
    by_topic: dict[str, list[int]] = {}
    hidden = authorizer.denied(session, acl.DESCRIBE, acl.TOPIC, [topic for topic, _ in metadata.partitions])
    for topic, index in sorted(metadata.partitions):
        if topic in hidden:  # only the partitions the principal may describe, as Kafka lists them
            continue
        by_topic.setdefault(topic, []).append(index)
    answer.transaction_state = STATE_NAMES[metadata.state]
    answer.transaction_timeout_ms = metadata.timeout_ms
    answer.transaction_start_time_ms = metadata.start_ms
    answer.producer_id = metadata.producer_id
    answer.producer_epoch = metadata.producer_epoch
    answer.topics = [msg.TopicData(topic=topic, partitions=ids) for topic, ids in by_topic.items()]
    return answer
