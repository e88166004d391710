"""AddPartitionsToTxn (24), v0-3 (the client form; v4+ is broker-to-broker).

Adds partitions to the producer's ongoing transaction (starting one from
Empty/Complete*). Partitions of unknown topics answer UNKNOWN_TOPIC_OR_PARTITION
and the rest OPERATION_NOT_ATTEMPTED, as Kafka does; otherwise the
coordinator's one answer is repeated for every partition.
"""

from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import Errors, KafkaError
from weir.protocol.messages import add_partitions_to_txn as msg

from ..acl import model as acl
from ..dispatcher import handles
from ._txn_errors import fenced_for_version


@handles(ApiKey.ADD_PARTITIONS_TO_TXN, versions=(0, 3))
async def handle(context, header, request, session=None):
    wanted = [(topic.name, index) for topic in request.v3_and_below_topics for index in topic.partitions]
    authorizer = context.authorizer
    # ACLs, as KafkaApis: WRITE on the TransactionalId, then WRITE on each topic
    if not authorizer.allows(session, acl.WRITE, acl.TRANSACTIONAL_ID, request.v3_and_below_transactional_id):
        return _answer(request, dict.fromkeys(wanted, Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED))
    denied = authorizer.denied(session, acl.WRITE, acl.TOPIC, [topic for topic, _ in wanted])
    unknown = set()
    for topic, index in wanted:
        if topic in denied:
            continue
        try:
            context.logs.partition(topic, index)
        except KafkaError:
            unknown.add((topic, index))
    if unknown or denied:
        errors = {tp: Errors.TOPIC_AUTHORIZATION_FAILED if tp[0] in denied
                  else Errors.UNKNOWN_TOPIC_OR_PARTITION if tp in unknown else Errors.OPERATION_NOT_ATTEMPTED
                  for tp in wanted}
    else:
        try:
            await context.txn.add_partitions(request.v3_and_below_transactional_id,
                                             request.v3_and_below_producer_id,
                                             request.v3_and_below_producer_epoch, set(wanted))
            code = Errors.NONE
        except KafkaError as exc:
            code = fenced_for_version(exc.code, header.api_version, 2)
        errors = dict.fromkeys(wanted, code)
    return _answer(request, errors)


def _answer(request, errors):
    results = []
    for topic in request.v3_and_below_topics:
        results.append(msg.TopicResult(name=topic.name, results_by_partition=[
            msg.PartitionResult(partition_index=index, partition_error_code=errors[(topic.name, index)])
            for index in topic.partitions]))
    return msg.RESPONSE(results_by_topic_v3_and_below=results)
