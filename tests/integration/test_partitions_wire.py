"""CreatePartitions and DeleteRecords on the wire, with Kafka's errors; DeleteRecords' new log start
offset honoured by Fetch and ListOffsets and kept across a restart."""

import pytest

from weir.client import Connection
from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import Errors
from weir.protocol.messages import (create_partitions, create_topics, delete_records, fetch, list_offsets, metadata,
                                    produce)
from weir.protocol.records import Record, encode_batch

T = "grow"
TopicConfig = next(f for f in create_topics.CreatableTopic.fields if f.name == "configs").type.element


async def create(conn, name, partitions, **configs):
    answer = await conn.request(ApiKey.CREATE_TOPICS, 4, create_topics.REQUEST(timeout_ms=5000, topics=[
        create_topics.CreatableTopic(name=name, num_partitions=partitions, replication_factor=1, assignments=[],
                                     configs=[TopicConfig(name=k, value=v)
                                              for k, v in configs.items()])]))
    assert answer.topics[0].error_code == Errors.NONE


@pytest.fixture
async def conn(broker):
    connection = await Connection.open("127.0.0.1", broker.port)
    await create(connection, T, 2)
    yield connection
    await connection.close()


async def grow(conn, *topics, validate_only=False, version=3):
    answer = await conn.request(ApiKey.CREATE_PARTITIONS, version, create_partitions.REQUEST(
        timeout_ms=5000, validate_only=validate_only, topics=[
            create_partitions.Topic(name=name, count=count, assignments=None if assignments is None else [
                create_partitions.Assignment(broker_ids=ids) for ids in assignments])
            for name, count, assignments in topics]))
    return {result.name: result.error_code for result in answer.results}


async def partition_count(conn, name):
    answer = await conn.request(ApiKey.METADATA, 12, metadata.REQUEST(topics=[metadata.RequestTopic(name=name)],
                                                                       allow_auto_topic_creation=False))
    return len(answer.topics[0].partitions)


async def produce_one(conn, name, index, value):
    answer = await conn.request(ApiKey.PRODUCE, 9, produce.REQUEST(acks=-1, timeout_ms=5000, topic_data=[
        produce.TopicData(name=name, partition_data=[produce.PartitionData(index=index,
                                                                           records=encode_batch([Record(value)]))])]))
    result = answer.responses[0].partition_responses[0]
    assert result.error_code == Errors.NONE
    return result.base_offset


@pytest.mark.parametrize("version", [0, 3])
async def test_create_partitions_grows_the_topic(conn, version):
    assert await grow(conn, (T, 4, None), version=version) == {T: Errors.NONE}
    assert await partition_count(conn, T) == 4
    assert await produce_one(conn, T, 3, b"new partition") == 0


async def test_create_partitions_errors(conn):
    assert await grow(conn, (T, 2, None)) == {T: Errors.INVALID_PARTITIONS}
    assert await grow(conn, (T, 1, None)) == {T: Errors.INVALID_PARTITIONS}
    assert await grow(conn, ("missing", 3, None)) == {"missing": Errors.UNKNOWN_TOPIC_OR_PARTITION}
    assert await grow(conn, (T, 4, [[0]])) == {T: Errors.INVALID_REPLICA_ASSIGNMENT}  # one list for two partitions
    assert await grow(conn, (T, 3, [[1]])) == {T: Errors.INVALID_REPLICA_ASSIGNMENT}  # no broker 1
    assert await grow(conn, (T, 3, [[0, 0]])) == {T: Errors.INVALID_REPLICA_ASSIGNMENT}
    assert await grow(conn, (T, 3, [[]])) == {T: Errors.INVALID_REPLICA_ASSIGNMENT}
    assert await grow(conn, (T, 3, None), (T, 4, None)) == {T: Errors.INVALID_REQUEST}
    assert await partition_count(conn, T) == 2, "no error grew anything"
    assert await grow(conn, (T, 3, [[0]])) == {T: Errors.NONE}
    assert await partition_count(conn, T) == 3


async def test_create_partitions_validate_only_and_request_limit(conn):
    await create(conn, "other", 1)
    assert await grow(conn, (T, 5, None), validate_only=True) == {T: Errors.NONE}
    assert await partition_count(conn, T) == 2
    # more than 10,000 new partitions in one request: every topic is refused, nothing is created
    assert await grow(conn, (T, 6_000, None), ("other", 5_000, None)) == {
        T: Errors.POLICY_VIOLATION, "other": Errors.POLICY_VIOLATION}
    assert await partition_count(conn, T) == 2 and await partition_count(conn, "other") == 1


async def remove(conn, name, index, offset, version=2):
    answer = await conn.request(ApiKey.DELETE_RECORDS, version, delete_records.REQUEST(timeout_ms=5000, topics=[
        delete_records.RequestTopic(name=name, partitions=[
            delete_records.RequestPartition(partition_index=index, offset=offset)])]))
    result = answer.topics[0].partitions[0]
    return result.error_code, result.low_watermark


async def fetch_at(conn, name, offset):
    answer = await conn.request(ApiKey.FETCH, 11, fetch.REQUEST(max_wait_ms=0, min_bytes=1, topics=[
        fetch.FetchTopic(topic=name, partitions=[fetch.FetchPartition(partition=0, fetch_offset=offset,
                                                                      partition_max_bytes=1 << 20)])]))
    return answer.responses[0].partitions[0]


async def earliest(conn, name):
    answer = await conn.request(ApiKey.LIST_OFFSETS, 7, list_offsets.REQUEST(replica_id=-1, topics=[
        list_offsets.RequestTopic(name=name, partitions=[list_offsets.RequestPartition(partition_index=0,
                                                                                       timestamp=-2)])]))
    return answer.topics[0].partitions[0].offset


def segment_files(broker, name):
    return sorted(p.name for p in (broker.data_dir / f"{name}-0").glob("*.log"))


async def test_delete_records_advances_the_log_start_offset(broker, conn):
    await create(conn, "purge", 1, **{"segment.bytes": "100"})  # about one batch per segment
    for n in range(6):
        await produce_one(conn, "purge", 0, b"record %d" % n)
    assert len(segment_files(broker, "purge")) == 6
    assert await remove(conn, "purge", 0, 3) == (Errors.NONE, 3)
    assert segment_files(broker, "purge") == ["00000000000000000003.log", "00000000000000000004.log",
                                              "00000000000000000005.log"]
    assert await remove(conn, "purge", 0, 1, version=0) == (Errors.NONE, 3), "lower: nothing changes"
    assert (await fetch_at(conn, "purge", 2)).error_code == Errors.OFFSET_OUT_OF_RANGE
    fetched = await fetch_at(conn, "purge", 3)
    assert (fetched.error_code, fetched.log_start_offset, fetched.high_watermark) == (Errors.NONE, 3, 6)
    assert await earliest(conn, "purge") == 3
    assert await remove(conn, "purge", 0, 7) == (Errors.OFFSET_OUT_OF_RANGE, -1)
    assert await remove(conn, "purge", 0, -5) == (Errors.OFFSET_OUT_OF_RANGE, -1)
    await conn.close()
    broker.stop()
    broker.start()
    conn2 = await Connection.open("127.0.0.1", broker.port)
    try:
        assert await earliest(conn2, "purge") == 3, "the log start offset survives a restart"
        assert (await fetch_at(conn2, "purge", 2)).error_code == Errors.OFFSET_OUT_OF_RANGE
        assert await remove(conn2, "purge", 0, -1) == (Errors.NONE, 6), "-1 is the high watermark"
        assert await earliest(conn2, "purge") == 6
        assert await produce_one(conn2, "purge", 0, b"after") == 6
    finally:
        await conn2.close()


async def test_delete_records_errors(conn):
    await create(conn, "compacted", 1, **{"cleanup.policy": "compact"})
    assert await remove(conn, "compacted", 0, 0) == (Errors.POLICY_VIOLATION, -1)
    assert await remove(conn, "missing", 0, 0) == (Errors.UNKNOWN_TOPIC_OR_PARTITION, -1)
    assert await remove(conn, T, 9, 0) == (Errors.UNKNOWN_TOPIC_OR_PARTITION, -1)
    assert await remove(conn, "__consumer_offsets", 0, 0) == (Errors.INVALID_TOPIC_EXCEPTION, -1)
