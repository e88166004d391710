"""ListOffsets v7 for the max timestamp (-3) on the wire: the record's offset, not its batch's last."""

import pytest

from weir.client import Connection
from weir.protocol import records as rec
from weir.protocol.api_keys import ApiKey
from weir.protocol.compression import Compression
from weir.protocol.errors import Errors
from weir.protocol.messages import create_topics, list_offsets, produce

MAX_TIMESTAMP = -3


@pytest.fixture
async def conn(shared_broker):
    connection = await Connection.open("127.0.0.1", shared_broker.port)
    yield connection
    await connection.close()


async def produce_batch(conn, topic, timestamps, compression):
    batch = rec.encode_batch([rec.Record(b"x", timestamp=t) for t in timestamps], compression=compression)
    answer = await conn.request(ApiKey.PRODUCE, 9, produce.REQUEST(acks=-1, timeout_ms=5000, topic_data=[
        produce.TopicData(name=topic, partition_data=[produce.PartitionData(index=0, records=batch)])]))
    assert answer.responses[0].partition_responses[0].error_code == Errors.NONE


async def max_timestamp(conn, topic):
    answer = await conn.request(ApiKey.LIST_OFFSETS, 7, list_offsets.REQUEST(replica_id=-1, isolation_level=0, topics=[
        list_offsets.RequestTopic(name=topic, partitions=[
            list_offsets.RequestPartition(partition_index=0, timestamp=MAX_TIMESTAMP)])]))
    found = answer.topics[0].partitions[0]
    assert found.error_code == Errors.NONE
    return found.offset, found.timestamp


@pytest.mark.parametrize("compression", [Compression.NONE, Compression.GZIP], ids=["none", "gzip"])
async def test_max_timestamp_names_the_earliest_record_holding_it(conn, topic_name, compression):
    created = await conn.request(ApiKey.CREATE_TOPICS, 4, create_topics.REQUEST(timeout_ms=5000, topics=[
        create_topics.CreatableTopic(name=topic_name, num_partitions=1, replication_factor=1, assignments=[],
                                     configs=[])]))
    assert created.topics[0].error_code == Errors.NONE
    assert await max_timestamp(conn, topic_name) == (-1, -1)
    await produce_batch(conn, topic_name, [1_000, 5_000, 3_000], compression)  # offsets 0-2
    assert await max_timestamp(conn, topic_name) == (1, 5_000)  # before the fix: 2
    await produce_batch(conn, topic_name, [2_000, 7_000, 7_000, 4_000], compression)  # offsets 3-6
    await produce_batch(conn, topic_name, [7_000], compression)  # offset 7: a tie in a later batch
    assert await max_timestamp(conn, topic_name) == (4, 7_000)
