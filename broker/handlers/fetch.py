"""Fetch (1), v4-12.

Returns stored batches untouched, from the batch containing the fetch offset,
bounded by the high watermark (read_uncommitted) or the last stable offset
(read_committed). KIP-74: the response holds at most ``max_bytes`` and each
partition at most ``partition_max_bytes``, except that the first batch of the
first partition with data is returned whole whatever its size; later
partitions get only the whole batches that still fit, possibly none. Read_committed
answers list the aborted transactions overlapping the returned batches; the
client drops those (the broker never filters), and markers wake long polls. Waits up to
max_wait_ms for min_bytes, woken by appends to any fetched partition.

Fetch sessions (KIP-227) are declined the way Kafka declines them: session_id
0 in the answer, so clients keep sending full fetches; every requested
partition is listed in every answer. A client over its consumer_byte_rate quota gets
an empty answer with throttle_time_ms (broker/quota/throttling.py). ACLs: READ on each topic (a follower's replica_id:
CLUSTER_ACTION); a refused topic's partitions answer TOPIC_AUTHORIZATION_FAILED.
"""

import asyncio

from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import Errors, KafkaError
from weir.protocol.messages import fetch as msg

from ..dispatcher import handles
from ..acl.checks import fetch_refusals
from ..log import partition_txns
from ..log.partition import LEADER_EPOCH
from ..quota.throttling import fetch_bytes_allowed, throttle_fetch

READ_COMMITTED = 1


@handles(ApiKey.FETCH, versions=(4, 12))
async def handle(context, header, request, session=None):
    if request.session_id != 0:
        return msg.RESPONSE(error_code=Errors.FETCH_SESSION_ID_NOT_FOUND, session_id=0)
    refused = fetch_refusals(context.authorizer, session, request)  # ACLs: READ per topic; [] when off
    max_bytes = request.max_bytes
    allowed = fetch_bytes_allowed(context, header, session)  # client quotas (broker/quota)
    if allowed is not None:
        max_bytes = max(min(max_bytes, int(allowed)), 0)
    responses, total = _read_all(context, request, max_bytes)
    if total < request.min_bytes and request.max_wait_ms > 0:
        partitions = _known_partitions(context, request)
        if partitions:
            woken = asyncio.get_running_loop().create_future()
            for partition in partitions:
                partition.fetch_waiters.add(woken)
            try:
                await context.clock.wait(woken, request.max_wait_ms / 1000)
            finally:
                for partition in partitions:
                    partition.fetch_waiters.remove(woken)
            responses, total = _read_all(context, request, max_bytes)
    throttle_ms = throttle_fetch(context, header, session, total, context.clock.now_ms())
    if throttle_ms:  # over consumer_byte_rate: an empty answer, as Kafka's throttled fetch response
        return msg.RESPONSE(session_id=0, throttle_time_ms=throttle_ms, responses=[])
    context.metrics.fetched(responses)
    return msg.RESPONSE(session_id=0, responses=responses + refused if refused else responses)


def _known_partitions(context, request):
    found = []
    for topic in request.topics:
        for wanted in topic.partitions:
            try:
                found.append(context.logs.partition(topic.topic, wanted.partition))
            except KafkaError:
                pass
    return found


def _read_all(context, request, max_bytes):
    remaining = max_bytes
    read_committed = request.isolation_level == READ_COMMITTED
    responses = []
    total = 0
    for topic in request.topics:
        answers = []
        for wanted in topic.partitions:
            # KIP-74: only the first batch of the first partition with data may exceed the limits
            answer = _read_one(context, topic.topic, wanted, min(wanted.partition_max_bytes, remaining),
                               total == 0, read_committed)
            size = len(answer.records) if answer.records else 0
            total += size
            remaining = max(remaining - size, 0)
            answers.append(answer)
        responses.append(msg.TopicResponse(topic=topic.topic, partitions=answers))
    return responses, total


def _read_one(context, topic, wanted, limit, min_one, read_committed):
    answer = msg.PartitionData(partition_index=wanted.partition, high_watermark=-1, records=b"",
                               aborted_transactions=[] if read_committed else None)
    try:
        if wanted.current_leader_epoch > LEADER_EPOCH:
            raise KafkaError(Errors.UNKNOWN_LEADER_EPOCH)
        partition = context.logs.partition(topic, wanted.partition)
        last_stable_offset = partition.last_stable_offset
        # By reference: the connection sends the records from the segment file (zero-copy fetch)
        result = (partition.read(wanted.fetch_offset, max(limit, 0), last_stable_offset if read_committed else None,
                                 min_one=min_one, by_reference=True)
                  if limit > 0 or min_one else None)
    except KafkaError as exc:
        answer.error_code = exc.code
        answer.aborted_transactions = None  # as Kafka answers a partition in error
        return answer
    answer.high_watermark = partition.high_watermark
    answer.last_stable_offset = last_stable_offset
    answer.log_start_offset = partition.log_start_offset
    if result is not None:
        answer.records = result.records
        if read_committed and result.records:
            answer.aborted_transactions = [
                msg.AbortedTransaction(producer_id=aborted.producer_id, first_offset=aborted.first_offset)
                for aborted in partition_txns.aborted_between(partition, wanted.fetch_offset, result.end_offset)]
    return answer
