"""Who gets the records an acknowledgement makes room for, on Weir and Kafka 4.4.0, raw (our codec).

A share-partition whose in-flight window (``share.partition.max.record.locks``, 100 here) is full
hands out no more records until its start moves. Kafka runs a ShareFetch's acknowledgements and
its fetch side by side: the fetch finds the window still full (the acknowledgement's state is not
written yet) and waits behind the fetches already waiting; once written, the room goes to the
fetch that waited longest. So a member that acknowledges does not take the next records ahead of
one that waited, which spreads a partition's batches over its members. Weir once wrote the
acknowledgements first and then fetched: the acknowledging member took the room every time, and
in ``bench.share``'s 4 members on 1 partition one member never got a record.
"""

from __future__ import annotations

import time
import uuid

from confluent_kafka.admin import NewTopic

from weir.protocol.api_keys import ApiKey
from weir.protocol.messages import share_fetch
from tests.reference.test_differential_consumer_heartbeat import coordinator_ready
from tests.reference.test_differential_share_groups import (ACCEPT, Member, produce_one_batch,
                                                             set_group_configs, topic_id_of)
from tests.tools.tools import create_topics

BATCH = 100  # records per batch, and the group's in-flight window: one batch fills it
PARKED_S = 2.0  # a long poll parked on the broker gives no event to wait on; far above a request's handling


def fetch_request(member: Member, epoch: int, acks=(), max_wait_ms: int = 10_000, max_records: int = 500,
                  partitions=(0,)):
    """A ShareFetch naming ``partitions`` (its first epoch; later ones name none: the session has them),
    accepting ``acks`` (first, last) of partition 0."""
    return share_fetch.REQUEST(
        group_id=member.group, member_id=member.member_id, share_session_epoch=epoch, max_wait_ms=max_wait_ms,
        min_bytes=1, max_bytes=1 << 20, max_records=max_records, batch_size=max_records, forgotten_topics_data=[],
        topics=[share_fetch.FetchTopic(topic_id=member.topic_id, partitions=[share_fetch.FetchPartition(
            partition_index=index, acknowledgement_batches=[
                share_fetch.AcknowledgementBatch(first_offset=first, last_offset=last, acknowledge_types=[ACCEPT])
                for first, last in acks if index == 0]) for index in partitions])])


def acquired(answer) -> tuple[int, list]:
    """(error, [(partition, error, acknowledge error, acquired ranges)...]) by partition (Kafka's order varies)."""
    return answer.error_code, sorted((p.partition_index, p.error_code, p.acknowledge_error_code,
                                      [(a.first_offset, a.last_offset, a.delivery_count) for a in p.acquired_records])
                                     for t in answer.responses for p in t.partitions)


def handout(broker) -> dict:
    topic, group = f"share-handout-{uuid.uuid4().hex[:8]}", f"share-handout-{uuid.uuid4().hex[:8]}"
    create_topics(broker.bootstrap, NewTopic(topic, 1, 1))
    for _ in range(3):
        produce_one_batch(broker, topic, BATCH)
    set_group_configs(broker, group, share_auto_offset_reset="earliest", share_partition_max_record_locks=BATCH)
    coordinator_ready(broker, group)
    topic_id = topic_id_of(broker, topic)
    holder = Member(broker, group, topic, topic_id, f"holder-{uuid.uuid4().hex[:8]}")
    waiter = Member(broker, group, topic, topic_id, f"waiter-{uuid.uuid4().hex[:8]}")
    holder.join()
    waiter.join()
    steps = {"holder's first fetch": acquired(holder.connection.ask(ApiKey.SHARE_FETCH, 1, fetch_request(holder, 0)))}
    # the waiter's long poll parks: the window is full
    waiter.connection.send(ApiKey.SHARE_FETCH, 1, fetch_request(waiter, 0))
    time.sleep(PARKED_S)
    began = time.monotonic()
    steps["holder acknowledges and fetches"] = acquired(holder.connection.ask(
        ApiKey.SHARE_FETCH, 1, fetch_request(holder, 1, acks=[(0, BATCH - 1)], max_wait_ms=3000)))
    steps["holder waited its max_wait_ms"] = time.monotonic() - began >= 3 * 0.95
    steps["waiter's fetch"] = acquired(waiter.connection.receive())
    holder.connection.close()
    waiter.connection.close()
    return steps


def test_the_room_an_acknowledgement_makes_goes_to_the_fetch_that_waited(weir_process, kafka_broker):
    weir = handout(weir_process)
    assert weir == handout(kafka_broker)
    assert weir == {"holder's first fetch": (0, [(0, 0, 0, [(0, 99, 1)])]),
                    "holder acknowledges and fetches": (0, [(0, 0, 0, [])]),
                    "holder waited its max_wait_ms": True,
                    "waiter's fetch": (0, [(0, 0, 0, [(100, 199, 1)])])}


def rotation(broker) -> list:
    """What each of four fetches takes from a member's two partitions of two batches each, one batch
    a fetch (``max_records`` 100). A first fetch on the empty topic opens the session (epoch 0) and
    lets Kafka set its share-partitions up (it reads their state asynchronously, and a fetch
    meanwhile skips a partition not yet ready)."""
    topic, group = f"share-rotate-{uuid.uuid4().hex[:8]}", f"share-rotate-{uuid.uuid4().hex[:8]}"
    create_topics(broker.bootstrap, NewTopic(topic, 2, 1))
    set_group_configs(broker, group, share_auto_offset_reset="earliest")
    coordinator_ready(broker, group)
    member = Member(broker, group, topic, topic_id_of(broker, topic), f"rotate-{uuid.uuid4().hex[:8]}")
    member.join()
    opened = acquired(member.connection.ask(ApiKey.SHARE_FETCH, 1, fetch_request(
        member, 0, max_wait_ms=2000, max_records=BATCH, partitions=(0, 1))))
    fetches: list = [opened]
    for partition in (0, 1, 0, 1):
        produce_one_batch(broker, topic, BATCH, partition=partition)
    for epoch in range(1, 5):
        code, partitions = acquired(member.connection.ask(ApiKey.SHARE_FETCH, 1, fetch_request(
            member, epoch, max_records=BATCH, partitions=())))
        # beside the partition with records, Kafka may answer the other with nothing (its fetch lock): not compared
        fetches.append((code, [p for p in partitions if p[3]]))
    member.connection.close()
    return fetches


def test_a_fetch_of_two_partitions_starts_at_the_one_its_session_epoch_picks(weir_process, kafka_broker):
    weir = rotation(weir_process)
    assert weir == rotation(kafka_broker)
    assert weir == [(0, [(0, 0, 0, []), (1, 0, 0, [])]),  # epoch 0: nothing yet
                    (0, [(1, 0, 0, [(0, 99, 1)])]), (0, [(0, 0, 0, [(0, 99, 1)])]),  # epoch 1 starts at p1, 2 at p0
                    (0, [(1, 0, 0, [(100, 199, 1)])]), (0, [(0, 0, 0, [(100, 199, 1)])])]
