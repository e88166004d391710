"""What OffsetCommit and TxnOffsetCommit share: reading the asked offsets, storing them, answering per partition."""

from weir.protocol.errors import Errors, KafkaError

from ..acl.model import GROUP, READ, TOPIC, TRANSACTIONAL_ID, WRITE
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


def commit_refusal(context, session, group_id, topics, transactional_id=None):
    """ACLs, as KafkaApis checks an offset commit: (error of every partition or None, topics
    refused READ). TxnOffsetCommit needs WRITE on its TransactionalId, both READ on the group."""
    authorizer = context.authorizer
    if not authorizer.enabled or session is None:
        return None, frozenset()
    if transactional_id is not None and not authorizer.allows(session, WRITE, TRANSACTIONAL_ID, transactional_id):
        return Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, frozenset()
    if not authorizer.allows(session, READ, GROUP, group_id):
        return Errors.GROUP_AUTHORIZATION_FAILED, frozenset()
    return None, authorizer.denied(session, READ, TOPIC, [t.name for t in topics])


def refused_response(msg, topics, code):
    return per_partition_response(msg, topics, {(t.name, p.partition_index): code
                                                for t in topics for p in t.partitions})


async def commit_and_answer(context, msg, topics, store, denied_topics=frozenset()):
    """``await store(offsets)`` for the known partitions; its error (if any) is each of their answers.
    Partitions of ``denied_topics`` answer TOPIC_AUTHORIZATION_FAILED and are not stored."""
    allowed = [t for t in topics if t.name not in denied_topics] if denied_topics else topics
    offsets, errors = requested_offsets(context, allowed, context.clock.now_ms())
    for topic in topics:
        if topic.name in denied_topics:
            errors.update({(topic.name, p.partition_index): Errors.TOPIC_AUTHORIZATION_FAILED
                           for p in topic.partitions})
    if denied_topics and not offsets:  # Kafka answers without asking the coordinator
        return per_partition_response(msg, topics, errors)
    try:
        await store(offsets)
        code = Errors.NONE
    except KafkaError as exc:
        code = exc.code
    errors.update(dict.fromkeys(offsets, code))
    return per_partition_response(msg, topics, errors)
