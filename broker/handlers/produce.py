"""Produce (0), served v3-12, advertised from v0.

v0-2 are advertised only so that librdkafka < 2.11.1 keeps compression enabled
(KAFKA-18659, as Kafka 4 does); a v0-2 request closes the connection.
Per partition: header checks and CRC, then every record walked as Kafka's
LogValidator does (broker/log/validator.py: framing, counts, offset deltas,
decompression, timestamps, keys on compacted topics), the idempotent
producer's sequence/epoch checks, then one write of the batch, recompressed
or restamped if the topic's compression.type / message.timestamp.type say so.
An error in one partition is that partition's answer only. acks=0 gets no
response. As Kafka fills them: ``error_message`` and v8+ ``record_errors`` only
for per-record failures (RecordValidationException); log_start_offset in
errors raised while validating records; log_append_time_ms on LogAppendTime
topics.
A transactional batch that opens a transaction on a partition is verified with
the transaction coordinator first (the partition must be in that producer's
ongoing transaction, KIP-890 part 1): INVALID_TXN_STATE otherwise, as Kafka
answers Produce below v11 (TRANSACTION_ABORTABLE from v11), INVALID_PRODUCER_EPOCH
for another epoch, or INVALID_PRODUCER_ID_MAPPING for an unknown producer; without
a transactional id, TRANSACTIONAL_ID_AUTHORIZATION_FAILED. From v12 (transaction
version 2, KIP-890 part 2) the batch adds its partition to the transaction itself,
through the coordinator, where older clients sent AddPartitionsToTxn; an ended
transaction's late write is then fenced by the epoch its end bumped.
A partition's error answer carries its log start offset, as Kafka's ReplicaManager
gives it, unless the error is one of ``_NO_LOG_START_OFFSET`` or a refusal before the
log append (Kafka checks the transactional id and verifies before appending).
ACLs (broker/acl/checks.py): WRITE on the TransactionalId for transactional batches, WRITE on
each topic; refused partitions answer the authorization error with offsets -1.
"""

import logging

from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import Errors, KafkaError
from weir.protocol.messages import produce as msg

from ..acl.checks import produce_refusals
from ..quota.throttling import throttle_produce
from ..dispatcher import NO_RESPONSE, handles
from ..log.manager import INTERNAL_TOPICS
from ..log.validator import BatchRefused, RecordValidationError
from ._txn_errors import abortable_for_version, implicit_add_error

log = logging.getLogger(__name__)
_RECORD_ERROR = next(f.type.element for f in msg.PartitionResponse.fields if f.name == "record_errors")


#: Errors Kafka answers with log_start_offset -1 rather than the partition's.
_NO_LOG_START_OFFSET = frozenset({
    Errors.UNKNOWN_TOPIC_OR_PARTITION, Errors.NOT_LEADER_OR_FOLLOWER, Errors.MESSAGE_TOO_LARGE,
    Errors.RECORD_LIST_TOO_LARGE, Errors.CORRUPT_MESSAGE, Errors.KAFKA_STORAGE_ERROR, Errors.INVALID_REQUIRED_ACKS,
    Errors.UNSUPPORTED_COMPRESSION_TYPE,  # zstd below v7: Kafka refuses the whole request
})


class _RefusedBeforeAppend(KafkaError):
    """Refused before the log append: its answer carries no log start offset."""


FIRST_ABORTABLE_VERSION, FIRST_TV2_VERSION = 11, 12


def _verify_before_append(verify, abortable: bool):
    def check(header) -> None:
        try:
            with abortable_for_version(abortable):
                verify(header)
        except KafkaError as exc:
            raise _RefusedBeforeAppend(exc.error, exc.message) from None
    return check


async def _add_to_transaction(context, partition, header, transactional_id, topic, index) -> None:
    """Produce v12: put the partition in the producer's transaction unless this batch continues one."""
    if partition.producers.has_open_txn(header.producer_id, header.producer_epoch):
        return
    try:
        with implicit_add_error():
            await context.txn.add_partitions_implicitly(transactional_id, header.producer_id,
                                                        header.producer_epoch, {(topic, index)})
    except KafkaError as exc:
        raise _RefusedBeforeAppend(exc.error, exc.message) from None


@handles(ApiKey.PRODUCE, versions=(3, 12), advertise_min=0)
async def handle(context, header, request, session=None):
    acks = request.acks
    version = header.api_version
    now_ms = context.clock.now_ms()
    refused = produce_refusals(context, session, request)  # ACLs: {} when authorization is off
    responses = []
    for topic_data in request.topic_data:
        if refused and topic_data.name in refused:
            responses.append(msg.TopicResponse(name=topic_data.name, partition_responses=[
                msg.PartitionResponse(index=p.index, error_code=refused[topic_data.name], base_offset=-1,
                                      log_start_offset=-1, error_message=None)
                for p in topic_data.partition_data]))
            continue
        answers = []
        for partition_data in topic_data.partition_data:
            answers.append(await _produce_one(context, topic_data.name, partition_data, acks, version, now_ms,
                                              request.transactional_id))
        responses.append(msg.TopicResponse(name=topic_data.name, partition_responses=answers))
    # client quotas (broker/quota): the bytes count against producer_byte_rate; a client over it is
    # told how long to wait and its connection is muted that long (broker/connection.py)
    throttle_ms = throttle_produce(context, header, request, session, now_ms)
    if acks == 0:
        return NO_RESPONSE
    return msg.RESPONSE(responses=responses, throttle_time_ms=throttle_ms)


async def _produce_one(context, topic, partition_data, acks, version, now_ms, transactional_id):
    logs = context.logs
    answer = msg.PartitionResponse(index=partition_data.index, base_offset=-1, error_message=None)
    partition = None
    try:
        if acks not in (-1, 0, 1):
            raise KafkaError(Errors.INVALID_REQUIRED_ACKS)
        if topic in INTERNAL_TOPICS:
            # Only the coordinators write there (their own append path); a client's garbage record
            # would stop the coordinator's replay at the next start. Kafka answers the same.
            raise KafkaError(Errors.INVALID_TOPIC_EXCEPTION, f"Cannot append to internal topic {topic}")
        logs.get_or_create(topic, allow_create=True)
        partition = logs.partition(topic, partition_data.index)
        batch = partition_data.records
        if batch is None or not len(batch):
            raise KafkaError(Errors.INVALID_RECORD, "produce request without records")
        validated = partition.validate_client_batch(batch, version, now_ms)
        header = validated.header
        if header.is_transactional and transactional_id is None:
            # Kafka refuses transactional records without a transactional id as unauthorised.
            raise _RefusedBeforeAppend(Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                                      "transactional records need a transactional id")
        verify = None
        if header.is_transactional:
            if version >= FIRST_TV2_VERSION:
                await _add_to_transaction(context, partition, header, transactional_id, topic, partition_data.index)
            verify = _verify_before_append(context.txn.verifier(transactional_id, topic, partition_data.index),
                                           abortable=version >= FIRST_ABORTABLE_VERSION)
        result = await partition.append_client_batch(validated.batch, header, now_ms, verify,
                                                     validated.log_append_time_ms)
        await logs.maybe_flush(partition)
        context.metrics.produced(topic, len(batch))
    except RecordValidationError as exc:
        answer.error_code = exc.code
        answer.error_message = exc.message
        answer.record_errors = [_RECORD_ERROR(batch_index=index, batch_index_error_message=message)
                                for index, message in exc.record_errors]
        answer.log_start_offset = partition.log_start_offset
        return answer
    except KafkaError as exc:
        answer.error_code = exc.code
        if isinstance(exc, BatchRefused):
            log.log(logging.WARNING if exc.error == Errors.UNKNOWN_SERVER_ERROR else logging.DEBUG,
                    "refused a produced batch for %s-%d: %s", topic, partition_data.index, exc.message)
        if (partition is not None and exc.error not in _NO_LOG_START_OFFSET
                and not isinstance(exc, _RefusedBeforeAppend)):
            answer.log_start_offset = partition.log_start_offset
        return answer
    answer.base_offset = result.base_offset
    answer.log_append_time_ms = result.log_append_time_ms
    answer.log_start_offset = result.log_start_offset
    return answer
