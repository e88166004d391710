"""ShareFetch (78), v1-2: fetch records for a share group member, acquiring them under a lock.

A share session (``broker/share/sessions.py``) names the partitions: epoch 0 opens one from the
request's topics (acknowledgements are INVALID_REQUEST there, as in Kafka), later epochs add
topics and drop ``forgotten_topics_data``, -1 acknowledges and closes it. Acknowledgements riding
along are applied first (``broker/share/requests.py``) and written while the fetch goes on, as
Kafka's: what they finish frees the in-flight window once written, for the fetches waiting longest
first (waiters are woken in the order they came). The session's partitions, from the one the
session epoch picks on (Kafka 4.4's round robin), acquire up to ``max_records`` in all, released
records first (``broker/share/partition.py``). With nothing acquired the request waits up to
``max_wait_ms`` for an append, a release or a moved start. v2's renew requests (``is_renew_ack``)
acknowledge only.

Each partition answers the stored batches holding its acquired records, the acquired ranges with
their delivery counts (cut at batch boundaries into pieces of at least ``batch_size`` records, as
Kafka 4.4 answers them), and its acknowledgement result. As Kafka's: ``max_records`` bounds the
records acquired (whole batches, unless ``share_acquire_mode`` is record_limit); ``max_bytes``,
shared out evenly over the session's partitions, bounds the log new records are taken from (at
least one batch); a fetch waits, up to ``max_wait_ms``, until ``min_bytes`` of log could be
acquired (then takes what there is). As Kafka 4.4 answers, only partitions with records, an error
or acknowledgement results are in an answer that has records; one without records names every
partition the request named.
ACLs: READ on the group; READ on each topic (TOPIC_AUTHORIZATION_FAILED for that partition).
A connection's share requests run one at a time, in order, as Kafka's muted channel runs them
(``broker/share/turns.py``).
"""

import asyncio

from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import Errors, KafkaError
from weir.protocol.messages import share_fetch as msg

from ..acl import model as acl
from ..dispatcher import handles
from ._share_requests import refusal
from ..log.partition import LEADER_EPOCH
from ..share import requests as share
from ..share.partition import split_ranges
from ..share.sessions import FINAL_EPOCH, INITIAL_EPOCH

RECORD_LIMIT_MODE = 1


@handles(ApiKey.SHARE_FETCH, versions=(1, 2))
async def handle(context, header, request, session=None):
    async with context.share_partitions.turns.turn(session):
        return await _handle(context, header, request, session)


async def _handle(context, header, request, session):
    if (refused := refusal(context, msg, request, session)) is not None:
        return refused
    group_id, member_id, epoch = request.group_id, request.member_id, request.share_session_epoch
    if epoch == INITIAL_EPOCH and share.has_acknowledgements(request.topics):
        return msg.RESPONSE(error_code=Errors.INVALID_REQUEST)  # acknowledgements cannot open a session
    manager = context.share_partitions
    try:
        share_session = share.step_session(manager, group_id, member_id, epoch, session)
    except KafkaError as exc:
        return msg.RESPONSE(error_code=exc.code)  # Kafka's answer: no message
    for forgotten in request.forgotten_topics_data:
        for index in forgotten.partitions:
            share_session.partitions.pop((forgotten.topic_id, index), None)
    names = _topic_names(context)
    refused = set()
    for topic in request.topics:
        if topic.topic_id in names and not context.authorizer.allows(session, acl.READ, acl.TOPIC,
                                                                       names[topic.topic_id]):
            refused.add(topic.topic_id)
        for partition in topic.partitions:
            share_session.partitions[(topic.topic_id, partition.partition_index)] = None
    applied = share.apply(manager, group_id, member_id, [t for t in request.topics if t.topic_id not in refused],
                          request.is_renew_ack)
    fetching = epoch != FINAL_EPOCH and not request.is_renew_ack
    limits = manager.limits(group_id)
    acquired, errors = {}, {}
    if fetching:
        # As Kafka's: the fetch starts while the acknowledgements' state is being written, so what they
        # finish frees the in-flight window only once written, and then for the fetches that waited
        # longest first (a member that acknowledges does not take the next records ahead of them).
        storing = asyncio.ensure_future(share.store(manager, applied))
        try:
            acquired, errors = await _fetch(context, manager, group_id, member_id, share_session, refused, request,
                                            limits)
        finally:  # a fetch cut short (its connection gone) still lets the write finish, as Kafka's does
            acks = await asyncio.shield(storing)
    else:
        acks = await share.store(manager, applied)
        share.end_session(manager, group_id, member_id, epoch)
    answers: dict[bytes, list] = {}
    denied = [key for key in share_session.partitions if key[0] in refused]
    # an answer with no records names every partition this request named, as Kafka's (a final one, none)
    named = [(t.topic_id, p.partition_index) for t in request.topics for p in t.partitions if t.topic_id not in refused]
    empty = [] if acquired or epoch == FINAL_EPOCH else named
    for key in dict.fromkeys([*acquired, *errors, *acks, *denied, *empty]):
        topic_id, index = key
        ack_error = acks.get(key)
        answer = msg.PartitionData(partition_index=index, error_code=Errors.NONE,
                                   acknowledge_error_code=ack_error.code if ack_error else Errors.NONE,
                                   acknowledge_error_message=ack_error.message if ack_error else None,
                                   current_leader=msg.LeaderIdAndEpoch(leader_id=context.node_id,
                                                                       leader_epoch=LEADER_EPOCH),
                                   records=b"", acquired_records=[])
        if topic_id in refused:
            answer.error_code = Errors.TOPIC_AUTHORIZATION_FAILED
        elif key in errors:
            answer.error_code, answer.error_message = errors[key].code, errors[key].message
        elif key in acquired:
            share_partition, taken = acquired[key]
            answer.records = share_partition.records_for(taken, limits)
            answer.acquired_records = [msg.AcquiredRecords(first_offset=first, last_offset=last,
                                                           delivery_count=count)
                                       for first, last, count in split_ranges(taken.ranges, answer.records,
                                                                              request.batch_size)]
        answers.setdefault(topic_id, []).append(answer)
    return msg.RESPONSE(error_code=Errors.NONE, acquisition_lock_timeout_ms=limits.lock_ms,
                        responses=[msg.TopicResponse(topic_id=topic_id, partitions=partitions)
                                   for topic_id, partitions in answers.items()], node_endpoints=[])


async def _fetch(context, manager, group_id, member_id, share_session, refused, request, limits):
    keys = rotated([k for k in share_session.partitions if k[0] not in refused], request.share_session_epoch)
    if request.min_bytes > 1 and request.max_wait_ms > 0:
        await _wait_for_bytes(context, manager, group_id, keys, request, limits)
    acquired, errors = _acquire(manager, group_id, member_id, keys, request, limits)
    if not acquired and request.max_wait_ms > 0:
        acquired, errors = await _wait_and_acquire(context, manager, group_id, member_id, keys, request, limits)
    return acquired, errors


def rotated(keys: list, epoch: int) -> list:
    """The session's partitions from the one the epoch picks on, as Kafka 4.4 rotates them per fetch
    (round robin by share session epoch), so that a member of several partitions takes records
    from each in turn rather than always from the first."""
    if epoch < 1 or len(keys) < 2:
        return keys
    at = epoch % len(keys)
    return keys[at:] + keys[:at]


def _topic_names(context):
    return {topic.topic_id: name for name, topic in context.logs.topics.items()}


def _acquire(manager, group_id, member_id, keys, request, limits):
    """Acquire over the session's partitions, in order, up to max_records in all."""
    remaining = request.max_records if request.max_records > 0 else 0x7FFFFFFF
    strict = request.share_acquire_mode == RECORD_LIMIT_MODE
    max_bytes = max(request.max_bytes // max(len(keys), 1), 1)  # Kafka's uniform share of max_bytes
    acquired, errors = {}, {}
    for key in keys:
        if remaining <= 0:
            break
        try:
            share_partition = manager.get(group_id, *key)
            taken = share_partition.acquire(member_id, remaining, limits, strict=strict, max_bytes=max_bytes)
        except KafkaError as exc:
            errors[key] = exc
            continue
        if taken.count:
            acquired[key] = (share_partition, taken)
            remaining -= taken.count
    return acquired, errors


async def _wait_for_bytes(context, manager, group_id, keys, request, limits):
    """Wait, up to ``max_wait_ms``, until the session partitions hold ``min_bytes`` a fetch could
    acquire (nothing is acquired meanwhile, as Kafka's delayed share fetch checks before acquiring)."""
    deadline = context.clock.now_ms() + request.max_wait_ms
    while context.clock.now_ms() < deadline:
        available = 0
        for key in keys:
            try:
                available += manager.get(group_id, *key).available_bytes(limits, request.min_bytes)
            except KafkaError:
                continue
        if available >= request.min_bytes:
            return
        await _wait_once(context, manager, keys, deadline - context.clock.now_ms())


async def _wait_and_acquire(context, manager, group_id, member_id, keys, request, limits):
    """Wait for an append to a session partition or a record coming back, then acquire again,
    until something is acquired or ``max_wait_ms`` has passed."""
    clock = context.clock
    deadline = clock.now_ms() + request.max_wait_ms
    acquired, errors = {}, {}
    while not acquired:
        remaining_ms = deadline - clock.now_ms()
        if remaining_ms <= 0:
            break
        await _wait_once(context, manager, keys, remaining_ms)
        acquired, errors = _acquire(manager, group_id, member_id, keys, request, limits)
    return acquired, errors


async def _wait_once(context, manager, keys, remaining_ms):
    """Until an append to a session partition, a record coming back, or ``remaining_ms``."""
    if remaining_ms <= 0:
        return
    partitions = []
    for topic_id, index in keys:
        try:
            partitions.append(manager.log_partition(topic_id, index))
        except KafkaError:
            pass
    woken = asyncio.get_running_loop().create_future()
    for partition in partitions:
        partition.fetch_waiters.add(woken)
    manager.waiters.add(woken)
    try:
        await context.clock.wait(woken, remaining_ms / 1000)
    finally:
        for partition in partitions:
            partition.fetch_waiters.remove(woken)
        manager.waiters.remove(woken)
