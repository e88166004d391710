"""aiokafka 0.14 against the real broker process."""

import asyncio

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

CODECS = [None, "gzip", "snappy", "lz4", "zstd"]


async def create_topic(bootstrap, name, partitions):
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(name, num_partitions=partitions, replication_factor=1)])
    finally:
        await admin.close()


async def consume(bootstrap, topic, partitions, expected):
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    await consumer.start()
    got = {}
    try:
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        consumer.assign(tps)
        await consumer.seek_to_beginning(*tps)
        async with asyncio.timeout(60):
            while len(got) < expected:
                for tp, messages in (await consumer.getmany(timeout_ms=500)).items():
                    for m in messages:
                        got[(tp.partition, m.offset)] = (m.key, m.value)
    finally:
        await consumer.stop()
    return got


@pytest.mark.parametrize("codec", CODECS)
async def test_idempotent_produce_and_consume(shared_broker, topic_name, codec):
    await create_topic(shared_broker.bootstrap, topic_name, 3)
    producer = AIOKafkaProducer(bootstrap_servers=shared_broker.bootstrap, enable_idempotence=True,
                                compression_type=codec, acks="all")
    await producer.start()
    acked = {}
    try:
        futures = [await producer.send(topic_name, value=f"v{i}".encode() * 20, key=f"k{i}".encode(),
                                       partition=i % 3) for i in range(2000)]
        for i, future in enumerate(futures):
            meta = await future
            acked[(meta.partition, meta.offset)] = (f"k{i}".encode(), f"v{i}".encode() * 20)
    finally:
        await producer.stop()
    assert len(acked) == 2000
    assert await consume(shared_broker.bootstrap, topic_name, 3, 2000) == acked


async def test_large_batches(shared_broker, topic_name):
    await create_topic(shared_broker.bootstrap, topic_name, 2)
    producer = AIOKafkaProducer(bootstrap_servers=shared_broker.bootstrap, max_batch_size=900_000,
                                linger_ms=50, acks="all")
    await producer.start()
    value = bytes(range(256)) * 200
    try:
        futures = [await producer.send(topic_name, value=value + bytes([i]), partition=i % 2) for i in range(150)]
        acked = {}
        for i, future in enumerate(futures):
            meta = await future
            acked[(meta.partition, meta.offset)] = (None, value + bytes([i]))
    finally:
        await producer.stop()
    assert await consume(shared_broker.bootstrap, topic_name, 2, 150) == acked
