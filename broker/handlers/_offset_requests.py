"""What OffsetCommit and TxnOffsetCommit share: reading the asked offsets, storing them, answering per partition."""

from weir.protocol.errors import Errors, KafkaError

from ..group.offsets import OffsetEntry


def requested_offsets(context, topics, now_ms):
    """({partition: entry} for known partitions, {partition: error} for unknown ones)."""
    offsets, errors = {}, {}
    for topic in topics:
        for part in topic.partitions:
            tp = (topic.name, part.partition_index)
            try:
                context.logs.partition(*tp)
            except KafkaError as exc:
                errors[tp] = exc.code
                continue
            offsets[tp] = OffsetEntry(part.committed_offset, part.committed_leader_epoch,
                                      part.committed_metadata or "", now_ms)
    return offsets, errors


def per_partition_response(msg, topics, errors):
    return msg.RESPONSE(topics=[
        msg.ResponseTopic(name=topic.name, partitions=[
            msg.ResponsePartition(partition_index=part.partition_index,
                                  error_code=errors[(topic.name, part.partition_index)])
            for part in topic.partitions])
        for topic in topics])


async def commit_and_answer(context, msg, topics, store):
    """``await store(offsets)`` for the known partitions; its error (if any) is each of their answers.
    ``store`` may answer some partitions alone: it returns {partition: error} for those."""
    offsets, errors = requested_offsets(context, topics, context.clock.now_ms())
    refused = {}
    try:
        refused = await store(offsets) or {}
        code = Errors.NONE
    except KafkaError as exc:
        code = exc.code
    errors.update(dict.fromkeys(offsets, code))
    errors.update(refused)
    return per_partition_response(msg, topics, errors)
