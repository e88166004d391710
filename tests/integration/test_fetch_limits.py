"""Fetch response size limits on the wire (KIP-74).

Only the first batch of the first partition that returns data may exceed
``max_bytes`` / ``partition_max_bytes``; every later partition gets only the
whole batches that still fit, possibly none. librdkafka drops a connection
whose answer exceeds what it asked for ("Invalid response size").
"""

import os

import pytest

from weir.client import Connection
from weir.protocol import records as rec
from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import Errors
from weir.protocol.messages import create_topics, fetch, produce

BIG = 3000  # value bytes of a big batch; random, so the batch size does not depend on compression


@pytest.fixture
async def conn(shared_broker):
    connection = await Connection.open("127.0.0.1", shared_broker.port)
    yield connection
    await connection.close()


async def produce_batch(conn, topic, partition, values):
    batch = rec.encode_batch([rec.Record(v, timestamp=1) for v in values])
    answer = await conn.request(ApiKey.PRODUCE, 9, produce.REQUEST(acks=-1, timeout_ms=5000, topic_data=[
        produce.TopicData(name=topic, partition_data=[produce.PartitionData(index=partition, records=batch)])]))
    assert answer.responses[0].partition_responses[0].error_code == Errors.NONE
    return len(batch)


async def topic_with_batches(conn, topic, layout):
    """layout: per partition, the value sizes of its batches (one record each); returns batch sizes."""
    created = await conn.request(ApiKey.CREATE_TOPICS, 4, create_topics.REQUEST(timeout_ms=5000, topics=[
        create_topics.CreatableTopic(name=topic, num_partitions=len(layout), replication_factor=1, assignments=[],
                                     configs=[])]))
    assert created.topics[0].error_code == Errors.NONE
    sizes = []
    for partition, values in enumerate(layout):
        sizes.append([await produce_batch(conn, topic, partition, [os.urandom(v)]) for v in values])
    return sizes


async def fetch_batches(conn, topic, partitions, max_bytes, partition_max_bytes):
    """Sizes of the whole batches each partition returned, in request order."""
    answer = await conn.request(ApiKey.FETCH, 12, fetch.REQUEST(
        replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=max_bytes, isolation_level=0, session_id=0,
        session_epoch=-1, topics=[fetch.FetchTopic(topic=topic, partitions=[fetch.FetchPartition(
            partition=p, fetch_offset=0, partition_max_bytes=partition_max_bytes) for p in partitions])],
        forgotten_topics_data=[], rack_id=""))
    returned = []
    for data in answer.responses[0].partitions:
        assert data.error_code == Errors.NONE
        records = bytes(data.records or b"")
        batches = [header.size for _position, header in rec.iter_headers(records)]
        assert sum(batches) == len(records), "whole batches only"
        returned.append(batches)
    return returned


async def test_only_the_first_batch_of_the_response_may_exceed_max_bytes(conn, topic_name):
    sizes = await topic_with_batches(conn, topic_name, [[BIG, BIG], [BIG, BIG], [BIG, BIG]])
    big = sizes[0][0]
    assert await fetch_batches(conn, topic_name, [0, 1, 2], 1000, 1 << 20) == [[big], [], []]
    # two batches fit in the first partition's share; what is left of max_bytes holds no whole batch
    # (before the fix partition 1 added a batch past the limit)
    assert await fetch_batches(conn, topic_name, [0, 1, 2], 2 * big + 500, 1 << 20) == [[big, big], [], []]
    # the first batch counts against max_bytes: the next partition gets what is left
    assert await fetch_batches(conn, topic_name, [0, 1, 2], 2 * big, big) == [[big], [big], []]


async def test_the_first_partition_with_data_is_the_one_whose_batch_may_exceed(conn, topic_name):
    sizes = await topic_with_batches(conn, topic_name, [[], [BIG], [100] * 8])
    big, small = sizes[1][0], sizes[2][0]
    # partition 0 is empty, so partition 1's batch is the first of the response; partition 2 then
    # gets only the small batches that fit in what is left of max_bytes
    fits = 3
    returned = await fetch_batches(conn, topic_name, [0, 1, 2], big + fits * small + small // 2, 1 << 20)
    assert returned == [[], [big], [small] * fits]


async def test_partition_max_bytes_below_the_first_batch(conn, topic_name):
    sizes = await topic_with_batches(conn, topic_name, [[BIG], [BIG], [100, 100]])
    big, small = sizes[0][0], sizes[2][0]
    # partition 0's batch is the first data of the response and comes whole; partition 1's does not
    # fit its partition_max_bytes and is not first, so nothing; partition 2's small batches fit
    assert await fetch_batches(conn, topic_name, [0, 1, 2], 1 << 20, small * 2) == [[big], [], [small, small]]
    assert await fetch_batches(conn, topic_name, [1, 0], 1 << 20, 100) == [[big], []]
