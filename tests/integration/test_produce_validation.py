"""Poison batches (correct CRC, bad records) are refused over the wire with Kafka's codes,
nothing of them is stored, and a librdkafka consumer then reads the partition normally."""

import time

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

from weir.client import Connection
from weir.broker.log.validator import MAX_DECOMPRESSED_BATCH_BYTES
from weir.protocol.api_keys import ApiKey
from weir.protocol.compression import Compression
from weir.protocol.errors import Errors
from weir.protocol.messages import metadata, produce
from tests.log.poison import POISON_CODES, batch, good, poison_batches, record
from tests.support.topics import create_topic

HOUR = 3_600_000


def produce_request(topic, data, partition=0):
    return produce.REQUEST(acks=-1, timeout_ms=5000, topic_data=[
        produce.TopicData(name=topic, partition_data=[produce.PartitionData(index=partition, records=data)])])


async def send(conn, topic, data, version=9):
    response = await conn.request(ApiKey.PRODUCE, version, produce_request(topic, data))
    return response.responses[0].partition_responses[0]


def read_partition(bootstrap, topic, expected):
    """Every record of partition 0 as librdkafka delivers it: [(offset, key, value)]."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused", "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, 0, 0)])
    got = []
    deadline = time.monotonic() + 30
    try:
        while len(got) < expected and time.monotonic() < deadline:
            for msg in consumer.consume(100, timeout=0.5):
                assert msg.error() is None, msg.error()
                got.append((msg.offset(), msg.key(), msg.value()))
        low, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
    finally:
        consumer.close()
    return got, high


async def test_every_poison_kind_is_refused_and_the_partition_stays_readable(broker, topic_name):
    conn = await Connection.open("127.0.0.1", broker.port)
    try:
        now = int(time.time() * 1000)
        first = await send(conn, topic_name, good(b"good-0"))
        assert (first.error_code, first.base_offset) == (0, 0)
        for kind, data in poison_batches().items():
            answer = await send(conn, topic_name, data)
            assert Errors(answer.error_code).name == POISON_CODES[kind], kind
            assert answer.base_offset == -1, kind
            assert answer.record_errors == [] and answer.error_message is None, (kind, "as Kafka: no message")
        future = batch(record(0, key=b"k"), 1, base_timestamp=now + 2 * HOUR)
        answer = await send(conn, topic_name, future)
        assert answer.error_code == Errors.INVALID_TIMESTAMP
        assert [e.batch_index for e in answer.record_errors] == [0]
        last = await send(conn, topic_name, good(b"good-1", b"good-2"))
        assert (last.error_code, last.base_offset) == (0, 1), "no refused batch took an offset"
    finally:
        await conn.close()
    records, high = read_partition(broker.bootstrap, topic_name, 3)
    assert records == [(0, b"key", b"good-0"), (1, b"key", b"good-1"), (2, b"key", b"good-2")]
    assert high == 3


async def test_record_errors_name_each_bad_record_as_kafka_does(broker, topic_name):
    compacted, strict = topic_name + "-compacted", topic_name + "-strict"
    create_topic(broker.bootstrap, compacted, config={"cleanup.policy": "compact"})
    create_topic(broker.bootstrap, strict, config={"message.timestamp.before.max.ms": "60000"})
    conn = await Connection.open("127.0.0.1", broker.port)
    try:
        keyless = batch(record(0) + record(1, key=None) + record(2, key=None), 3)
        answer = await send(conn, compacted, keyless)
        message = f"Compacted topic cannot accept message without key in topic partition {compacted}-0"
        assert answer.error_code == Errors.INVALID_RECORD
        assert [(e.batch_index, e.batch_index_error_message) for e in answer.record_errors] == [
            (1, message), (2, message)]
        assert answer.error_message.startswith("One or more records have been rejected due to 2 record errors")
        assert answer.log_start_offset == 0
        older = (await send(conn, compacted, keyless, version=7))
        assert older.error_code == Errors.INVALID_RECORD, "v7 has no record_errors but the same code"
        assert (await send(conn, compacted, good(b"kept"))).base_offset == 0

        now = int(time.time() * 1000)
        stale = batch(record(0) + record(1, timestamp_delta=10 * 60_000), 2, base_timestamp=now - 20 * 60_000)
        answer = await send(conn, strict, stale)
        assert answer.error_code == Errors.INVALID_TIMESTAMP
        assert answer.error_message == "One or more records have been rejected due to invalid timestamp"
        assert [e.batch_index for e in answer.record_errors] == [0, 1]
        assert "of message with offset 0 is out of range" in answer.record_errors[0].batch_index_error_message
        fresh = batch(record(0), 1, base_timestamp=now)
        assert (await send(conn, strict, fresh)).base_offset == 0
    finally:
        await conn.close()
    assert read_partition(broker.bootstrap, compacted, 1) == ([(0, b"key", b"kept")], 1)
    assert read_partition(broker.bootstrap, strict, 1) == ([(0, b"key", b"value")], 1)


def test_librdkafka_producer_gets_invalid_record_for_a_keyless_record_on_a_compacted_topic(broker, topic_name):
    create_topic(broker.bootstrap, topic_name, config={"cleanup.policy": "compact"})
    outcomes = []
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0})
    producer.produce(topic_name, value=b"no key", on_delivery=lambda err, msg: outcomes.append(err))
    producer.flush(30)
    producer.produce(topic_name, value=b"keyed", key=b"k", on_delivery=lambda err, msg: outcomes.append(err))
    producer.flush(30)
    assert len(outcomes) == 2
    assert outcomes[0] is not None and outcomes[0].code() == KafkaError.INVALID_RECORD
    assert outcomes[1] is None
    assert read_partition(broker.bootstrap, topic_name, 1) == ([(0, b"k", b"keyed")], 1)


@pytest.mark.parametrize("count,value", [(9000, b"x"), (100, b"y" * 9000)])
async def test_batches_with_three_byte_varints_pass_and_read_back(broker, topic_name, count, value):
    conn = await Connection.open("127.0.0.1", broker.port)
    try:
        now = int(time.time() * 1000)
        data = batch(b"".join(record(i, value, timestamp_delta=i) for i in range(count)), count, base_timestamp=now,
                     max_timestamp=now + count - 1)
        answer = await send(conn, topic_name, data)
        assert (answer.error_code, answer.base_offset) == (0, 0)
    finally:
        await conn.close()
    records, high = read_partition(broker.bootstrap, topic_name, count)
    assert high == count and [offset for offset, _k, _v in records] == list(range(count))


@pytest.mark.parametrize("internal", ["__consumer_offsets", "__transaction_state"])
async def test_clients_cannot_append_to_internal_topics(broker, internal):
    """A client's record in a coordinator topic would stop the coordinator's replay at the next
    start (found by the fuzz test); Kafka answers INVALID_TOPIC_EXCEPTION and so does Weir."""
    conn = await Connection.open("127.0.0.1", broker.port)
    try:
        answer = await send(conn, internal, good(b"garbage"))
        assert answer.error_code == Errors.INVALID_TOPIC_EXCEPTION
    finally:
        await conn.close()
    conn = await Connection.open("127.0.0.1", broker.port)
    try:  # nor is the topic made with num.partitions along the way: its coordinator makes it
        answer = await conn.request(ApiKey.METADATA, 9, metadata.REQUEST(
            topics=[metadata.RequestTopic(name=internal)], allow_auto_topic_creation=True))
        assert answer.topics[0].error_code == Errors.UNKNOWN_TOPIC_OR_PARTITION
    finally:
        await conn.close()


def _peak_rss_bytes(pid: int) -> int:
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM")


async def test_a_decompression_bomb_is_refused_within_the_bound(broker, topic_name):
    """A 32 KB zstd batch that would expand to 1 GiB: MESSAGE_TOO_LARGE, and the broker never held
    more than the bound for it (validator.MAX_DECOMPRESSED_BATCH_BYTES)."""
    import cramjam
    writer = cramjam.zstd.Compressor()
    chunk = bytes(1 << 20)
    for _ in range(1024):
        writer.compress(chunk)
    bomb = batch(bytes(writer.finish()), 1, codec=Compression.ZSTD, compress_payload=False)
    assert len(bomb) < 1 << 20
    peak_before = _peak_rss_bytes(broker.process.pid)
    conn = await Connection.open("127.0.0.1", broker.port)
    try:
        answer = await send(conn, topic_name, bomb)
        assert answer.error_code == Errors.MESSAGE_TOO_LARGE and answer.base_offset == -1
        assert (await send(conn, topic_name, good(b"after"))).base_offset == 0
    finally:
        await conn.close()
    grown = _peak_rss_bytes(broker.process.pid) - peak_before
    assert grown < MAX_DECOMPRESSED_BATCH_BYTES + (64 << 20), f"peak RSS grew {grown >> 20} MiB"
